"""Inside an allowlist run's network namespace: the relay to the daemon's proxy (issue 29).

Run by bubblewrap as `python -I -S netrelay.py --socket S [--direct HOST:PORT …] -- AGENT ARGV`;
standard library only (it starts in every such run, before the agent). The namespace has nothing
but loopback, so this is its only way out. It listens, on the namespace's own loopback:

- on a free port, for the HTTP proxy: each connection is handed as it is to the daemon's proxy on
  the Unix socket S; HTTPS_PROXY/HTTP_PROXY/ALL_PROXY (both cases) name it and NO_PROXY names
  loopback, for the agent and all it starts;
- on each allowed loopback HOST:PORT (`--direct`), so a model server on the machine is reached at
  the address the CLI is configured with: each connection is a `CONNECT HOST:PORT` to the proxy.

Then it leaves a process behind that relays (re-parented to the sandbox's init, so the agent has
no child it did not start, and gone when the agent is) and becomes the agent with `exec`. The
proxy decides what is allowed; this relay only carries bytes.
"""

from __future__ import annotations

import os
import select
import socket
import sys
import threading

CONNECT_TIMEOUT_S = 10.0
HEAD_LIMIT = 16 * 1024
PROXY_VARS = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
NO_PROXY = "localhost,127.0.0.1,::1"


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def _listeners(directs: list[str]) -> list[tuple[socket.socket, str]]:
    """One listening socket per allowed loopback address:port (`localhost` gets both families)."""
    made: list[tuple[socket.socket, str]] = []
    bound: set[tuple[str, int]] = set()
    for target in directs:
        host, _, port_text = target.rpartition(":")
        port = int(port_text)
        bare = host.strip("[]")
        for address in (("127.0.0.1", "::1") if bare == "localhost" else (bare,)):
            if (address, port) in bound:
                continue
            try:
                made.append((_bind(address, port), target))
                bound.add((address, port))
            except PermissionError:  # a port below 1024 without the capability: the proxy still has it
                print(f"predictorx network allowlist: {address}:{port} cannot be listened on inside the sandbox "
                      "(a privileged port); only a client that sends loopback through HTTP_PROXY reaches it", file=sys.stderr)
            except OSError as e:
                if bare != "localhost" or address == "127.0.0.1":
                    raise OSError(f"cannot listen on {address}:{port} inside the sandbox ({e.strerror})") from None
    return made


def _to_proxy(path: str) -> socket.socket:
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    up.settimeout(CONNECT_TIMEOUT_S)
    up.connect(path)
    up.settimeout(None)
    return up


def _tunnel_answer(up: socket.socket) -> bytes | None:
    """The proxy's answer to a CONNECT: the bytes after it, or None when it refused."""
    head = b""
    while b"\r\n\r\n" not in head:
        data = up.recv(4096)
        if not data or len(head) > HEAD_LIMIT:
            return None
        head += data
    status, _, rest = head.partition(b"\r\n\r\n")
    return rest if status.split(b" ", 2)[1:2] == [b"200"] else None


def _copy(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _handle(client: socket.socket, path: str, target: str | None) -> None:
    try:
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # a relay must not add Nagle's delays
        up = _to_proxy(path)
    except OSError:
        client.close()
        return
    try:
        if target is not None:  # the client's bytes may follow the CONNECT at once: no round trip
            up.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        other = threading.Thread(target=_copy, args=(client, up), daemon=True)
        other.start()
        if target is not None:
            rest = _tunnel_answer(up)
            if rest is None:  # refused: the proxy put the reason in the run's messages
                return
            if rest:
                client.sendall(rest)
        _copy(up, client)
        other.join()
    except OSError:
        pass
    finally:
        up.close()
        client.close()


def _serve(sock: socket.socket, path: str, target: str | None) -> None:
    while True:
        try:
            client, _ = sock.accept()
        except OSError:  # out of descriptors, say: wait a little rather than spin
            select.select([], [], [], 0.05)
            continue
        threading.Thread(target=_handle, args=(client, path, target), daemon=True).start()


def _relay(agent_pid: int, path: str, listeners: list[tuple[socket.socket, str | None]]) -> None:
    """The relay's life: until the agent it was started for has ended."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the agent's output pipes stay the agent's: the run ends when it does
        os.dup2(devnull, fd)
    for sock, target in listeners:
        threading.Thread(target=_serve, args=(sock, path, target), daemon=True).start()
    try:
        pidfd = os.pidfd_open(agent_pid)
        select.select([pidfd], [], [])
    except (AttributeError, OSError):
        while _alive(agent_pid):
            select.select([], [], [], 1.0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def main(args: list[str]) -> int:
    if "--" not in args:
        print("netrelay: usage: netrelay.py --socket PATH [--direct HOST:PORT …] -- COMMAND …", file=sys.stderr)
        return 2
    split = args.index("--")
    options, command = args[:split], args[split + 1:]
    path = next((o.split("=", 1)[1] for o in options if o.startswith("--socket=")), None)
    directs = [o.split("=", 1)[1] for o in options if o.startswith("--direct=")]
    if not path or not command:
        print("netrelay: --socket=PATH and a command are needed", file=sys.stderr)
        return 2
    try:
        listeners: list[tuple[socket.socket, str | None]] = list(_listeners(directs))
        proxy = _bind("127.0.0.1", 0)
    except OSError as e:
        print(f"predictorx network allowlist: {e}", file=sys.stderr)
        return 125
    listeners.append((proxy, None))
    url = f"http://127.0.0.1:{proxy.getsockname()[1]}"
    for name in PROXY_VARS:
        os.environ[name] = url
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = NO_PROXY
    agent_pid = os.getpid()
    child = os.fork()
    if child == 0:
        if os.fork() == 0:
            _relay(agent_pid, path, listeners)
        os._exit(0)
    os.waitpid(child, 0)
    for sock, _ in listeners:
        sock.close()
    try:
        os.execvp(command[0], command)
    except OSError as e:
        print(f"{command[0]}: {e.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
