"""Issue 29: what an agent's network allowlist adds to each model request; prints one JSON object.

A model server fixture on 127.0.0.1 answers a small streamed reply (`--chunks` SSE events). A
client inside the real bubblewrap sandbox (the mounts `daemon/sandbox.py` makes) sends `--requests`
POSTs to it, timing each, twice: with `network: open` (the machine's loopback, straight to the
fixture) and with `network: allowlist` naming only the fixture (its own network namespace: relay
inside → the daemon's proxy on its Unix socket → the fixture). Each way both on a new connection per
request (what a CLI pays when it opens one) and on one kept-alive connection (what it pays after).

`added` = allowlist − open, per percentile. Target: p50 ≤ 2 ms per model request. Also
`sandbox_start_ms`: spawn to exit of `true` in the sandbox, open and allowlist (the namespace and
the relay's Python start).

Run: .venv/bin/python bench/netproxy.py [--requests N] [--chunks N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from predictorx.daemon import netpolicy, sandbox

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import percentile  # (the benches' one percentile)

#: Inside the sandbox: N timed requests, on new connections and on one kept-alive connection.
CLIENT = r'''
import http.client, json, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 2000}]})
def one(conn):
    t = time.perf_counter()
    conn.request("POST", "/v1/messages", body, {"Content-Type": "application/json"})
    r = conn.getresponse(); r.read()
    return (time.perf_counter() - t) * 1000
fresh, kept = [], []
for _ in range(n):
    t = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10); one(c); c.close()
    fresh.append((time.perf_counter() - t) * 1000)
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
one(c)
kept = [one(c) for _ in range(n)]
print(json.dumps({"fresh": fresh, "kept": kept}))
'''


def _fixture(chunks: int) -> ThreadingHTTPServer:
    reply = b"".join(b'event: content_block_delta\ndata: {"delta": {"text": "word "}}\n\n' for _ in range(chunks))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # as a real model API's server: no delayed-ACK stalls of its own

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {f"p{q}": round(percentile(ordered, q), 3) for q in (50, 90, 99)}


async def _client(plan: sandbox.SandboxPlan, port: int, requests: int) -> dict[str, list[float]]:
    env = dict(os.environ)
    argv = plan([sys.executable, "-I", "-S", "-c", CLIENT, str(port), str(requests)], env)
    proc = await asyncio.create_subprocess_exec(*argv, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 300)
    if proc.returncode != 0:
        raise SystemExit(f"the client failed in the sandbox: {err.decode()[-2000:]}")
    return json.loads(out)


async def _starts(plan: sandbox.SandboxPlan, runs: int) -> dict[str, float]:
    """Spawn to exit of `true` in the sandbox: what the namespace and the relay add to a start."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(*plan(["true"], dict(os.environ)))
        await asyncio.wait_for(proc.wait(), 60)
        times.append((time.perf_counter() - t) * 1000)
    return _summary(times)


async def run(requests: int, chunks: int) -> dict:
    fixture = _fixture(chunks)
    port = fixture.server_address[1]
    refused: list[str] = []

    async def note(sentence: str) -> None:
        refused.append(sentence)
    result: dict = {"requests": requests, "reply_bytes": chunks * 58}
    with tempfile.TemporaryDirectory() as tmp:
        common = dict(bwrap=sandbox.bwrap_executable(), provider="command", writable=[Path(tmp)],
                      readable=sandbox.python_paths(), hidden=sandbox.secret_paths(Path.home()), chdir=Path(tmp))
        timings = {"open": await _client(sandbox.SandboxPlan(**common), port, requests)}
        jail = await netpolicy.open_jail({"name": "bench", "allow_hosts": [f"127.0.0.1:{port}"]}, [], note)
        try:
            timings["allowlist"] = await _client(sandbox.SandboxPlan(**common, network=jail), port, requests)
            starts = {name: await _starts(sandbox.SandboxPlan(**common, network=network), max(5, requests // 10))
                      for name, network in (("open", None), ("allowlist", jail))}
        finally:
            await jail.close()
        result["sandbox_start_ms"] = {**starts, "added": {k: round(starts["allowlist"][k] - starts["open"][k], 3)
                                                          for k in starts["open"]}}
    fixture.shutdown()
    for kind in ("fresh", "kept"):
        plain, fenced = _summary(timings["open"][kind]), _summary(timings["allowlist"][kind])
        result[f"{kind}_connection_ms"] = {"open": plain, "allowlist": fenced,
                                           "added": {k: round(fenced[k] - plain[k], 3) for k in plain}}
    result["refused"] = refused
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--chunks", type=int, default=50)
    args = ap.parse_args()
    problem = sandbox.bwrap_problem()
    if problem:
        print(json.dumps({"error": problem}))
        sys.exit(1)
    print(json.dumps(asyncio.run(run(args.requests, args.chunks))))


if __name__ == "__main__":
    main()
