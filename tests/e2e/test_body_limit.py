"""Issue 8 finding 10 (R-SEC-7): an unauthenticated 150 MB body is refused with 413 while the real
server process stays under 200 MB resident — with and without Content-Length, three at once."""

from __future__ import annotations

import socket
import threading
import time

import psutil

from .harness import Server

BODY = 150 * 1024 * 1024
CHUNK = b"x" * (1024 * 1024)
RSS_CEILING = 200 * 1024 * 1024


def _upload(port: int, chunked: bool, answers: list[bytes]) -> None:
    """Send a 150 MB POST the way an attacker would, stop when the server hangs up, keep its answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        framing = b"Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {BODY}\r\n".encode()
        sock.sendall(b"POST /api/projects HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     + framing + b"\r\n")
        try:
            for _ in range(BODY // len(CHUNK)):
                sock.sendall(b"100000\r\n" + CHUNK + b"\r\n" if chunked else CHUNK)
            if chunked:
                sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server answered and closed: exactly what should happen
        sock.settimeout(10)
        data = b""
        try:
            while b"\r\n\r\n" not in data or len(data) < 200:
                more = sock.recv(65536)
                if not more:
                    break
                data += more
        except OSError:
            pass
        answers.append(data)


def test_finding_10_150mb_unauthenticated_body_is_413_and_rss_stays_low(tmp_path):
    server = Server(tmp_path / "home", f"sqlite:///{tmp_path / 'px.db'}")
    try:
        proc = psutil.Process(server.proc.pid)

        def rss() -> int:
            return proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children(recursive=True))

        peak = base = rss()
        answers: list[bytes] = []
        threads = [threading.Thread(target=_upload, args=(server.port, chunked, answers))
                   for chunked in (False, True, True)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            peak = max(peak, rss())
            time.sleep(0.02)
        for t in threads:
            t.join(60)
        assert len(answers) == 3
        for a in answers:
            assert a.startswith(b"HTTP/1.1 413"), a[:300]
            assert b"larger than this server accepts" in a
        print(f"server RSS: baseline {base / 2**20:.0f} MB, peak {peak / 2**20:.0f} MB")
        assert peak < RSS_CEILING, f"server RSS peaked at {peak / 2**20:.0f} MB"
        assert server.api("GET", "/api/projects") == []  # nothing was created, and the server still answers
    finally:
        server.stop()
