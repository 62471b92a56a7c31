"""agents-room's tools through `predictorx mcp`'s front (mcp_stdio.py): one MCP process per run.

Claude Code starts every MCP server of a run before its first model request, and each is a Python
start plus the CLI's own work for it (issue 30). So for a run whose `agents-room run-config` allows
it (`--platform-forwards-mcp`, daemon/rooms.py), the daemon gives the agent one server: the front
lists agents-room's tools beside its own, and the first call of one starts agents-room's own front —
the command, arguments and environment run-config published (`mcp`), over this process's
environment as the harness would have started it, less every PREDICTORX_* value (the task token is
the platform's, not agents-room's) — and forwards the call to it. agents-room is run as a program,
never imported (it is a separate GPL distribution).

Every wait is bounded: a child that does not start, dies, or does not answer in time is ended and
the call answered with a tool error that says so; the next call starts it again. Imported on the
first forwarded call only, so nothing here (the json package included) costs a run's start.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from typing import Any

#: the child's start and handshake (its MCP SDK import is about a second of CPU, more under load)
START_TIMEOUT_S = 30.0
#: one forwarded tools/call (agents-room's tools are short store transactions)
CALL_TIMEOUT_S = 30.0
#: after end of input, how long the child has to exit before it is killed
CLOSE_TIMEOUT_S = 5.0
_SECRET_PREFIX = "PREDICTORX_"


class ForwardFailed(Exception):
    """The child could not answer (did not start, died, or was too slow): a sentence for the agent."""


class Forwarder:
    """One agents-room front, started on the first call; `spec` is run-config's `mcp` entry."""

    def __init__(self, spec: dict[str, Any], *, start_timeout_s: float = START_TIMEOUT_S,
                 call_timeout_s: float = CALL_TIMEOUT_S, close_timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        self.argv = [str(spec["command"]), *(str(a) for a in spec.get("args") or [])]
        self.extra_env = {str(k): str(v) for k, v in (spec.get("env") or {}).items()}
        self.start_timeout_s, self.call_timeout_s, self.close_timeout_s = start_timeout_s, call_timeout_s, close_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._buf = b""
        self._ids = 0

    def call(self, name: str, arguments: dict[str, Any], protocol: str) -> dict[str, Any]:
        """The child's JSON-RPC answer to `tools/call` ({"result": …} or {"error": …});
        ForwardFailed when there is none (the child is then ended: the next call starts another)."""
        try:
            if self._proc is None:
                self._start(protocol)
            return self._request("tools/call", {"name": name, "arguments": arguments}, self.call_timeout_s)
        except (OSError, ValueError, ForwardFailed) as e:
            self._end(kill=True)
            raise ForwardFailed(f"agents-room's MCP server did not answer {name} ({e}); "
                                "the next call starts it again") from None

    def _start(self, protocol: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_SECRET_PREFIX)}
        env.update(self.extra_env)
        self._buf = b""
        self._proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        hello = self._request("initialize", {"protocolVersion": protocol, "capabilities": {},
                                             "clientInfo": {"name": "predictorx", "version": ""}}, self.start_timeout_s)
        if "result" not in hello:
            raise ForwardFailed(f"its handshake failed: {hello.get('error')}")
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _request(self, method: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        self._ids += 1
        rid = f"predictorx-{self._ids}"
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout_s
        while True:
            line = self._line(deadline)
            msg = json.loads(line) if line.strip() else None
            if not isinstance(msg, dict):
                continue
            if "method" in msg:  # the child asks something of its client (a ping) or notifies
                if "id" in msg:
                    self._send({"jsonrpc": "2.0", "id": msg["id"], "result": {}} if msg["method"] == "ping" else
                               {"jsonrpc": "2.0", "id": msg["id"],
                                "error": {"code": -32601, "message": "Method not found"}})
                continue
            if msg.get("id") == rid:
                return msg

    def _send(self, msg: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(msg, ensure_ascii=False).encode("utf-8") + b"\n")
        self._proc.stdin.flush()

    def _line(self, deadline: float) -> bytes:
        """The child's next output line, waited for until `deadline`."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise ForwardFailed("no answer in time")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise ForwardFailed(f"it exited ({self._proc.poll()})")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def close(self) -> None:
        """The front's input ended: end of input for the child, killed if it has not exited in time."""
        self._end(kill=False)

    def _end(self, *, kill: bool) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(0 if kill else self.close_timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
