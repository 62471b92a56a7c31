"""An agent's network policy (R-SEC-9, issue 29): `open`, or an allowlist of hosts its sandboxed runs reach
through the daemon's proxy — real server, real daemon, real bubblewrap. Traffic goes only to
loopback fixtures of this test and stays inside the run's own network namespace otherwise."""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from .harness import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux-only")


class Fixture:
    """A loopback HTTP server that answers who it is and counts what reached it."""

    def __init__(self, name: str) -> None:
        self.hits: list[str] = []
        fixture = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fixture.hits.append(self.path)
                body = f"this is {name}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


#: Run inside the sandbox: each way out it tries, and what it got, one line each.
PROBE = r'''
import os, socket, subprocess, sys, urllib.request
allowed, other = sys.argv[1], sys.argv[2]
def attempt(label, fn):
    try:
        print(label, "OK", fn())
    except Exception as e:
        print(label, "FAILED", type(e).__name__, getattr(e, "code", ""), e)
attempt("direct-allowed", lambda: urllib.request.urlopen(f"http://127.0.0.1:{allowed}/", timeout=10).read())
attempt("direct-other", lambda: urllib.request.urlopen(f"http://127.0.0.1:{other}/", timeout=10).read())
os.environ.pop("no_proxy"), os.environ.pop("NO_PROXY")  # loopback through the proxy too, for this probe
proxy = urllib.request.build_opener(urllib.request.ProxyHandler({"http": os.environ["HTTP_PROXY"]}))
attempt("proxy-allowed", lambda: proxy.open(f"http://localhost:{allowed}/", timeout=10).read())
attempt("proxy-other", lambda: proxy.open(f"http://localhost:{other}/", timeout=10).read())
attempt("resolve", lambda: socket.getaddrinfo("pypi.org", 443))
attempt("comment", lambda: subprocess.run(["predictorx", "issue", "comment", os.environ["PREDICTORX_ISSUE"],
                                           "from the allowlist"], check=True, timeout=60, capture_output=True).returncode)
'''


@pytest.fixture
def fixtures():
    made = [Fixture("allowed"), Fixture("other")]
    yield made
    for f in made:
        f.close()


def test_an_allowlist_run_reaches_its_hosts_and_the_server_and_nothing_else(server, start_daemon, tmp_path, fixtures):
    allowed, other = fixtures
    start_daemon()
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    server.cli("agent", "create", "--name", "fenced", "--provider", "command", "--sandbox",
               "--command", f"{sys.executable} {script} {allowed.port} {other.port}",
               "--network", "allowlist", "--allow-host", f"localhost:{allowed.port}",
               "--allow-host", f"127.0.0.1:{allowed.port}")
    agent = server.api("GET", "/api/agents/fenced")
    assert agent["network"] == "allowlist"
    assert agent["allow_hosts"] == [f"localhost:{allowed.port}", f"127.0.0.1:{allowed.port}"]
    issue = server.api("POST", "/api/issues", {"title": "Reach out", "assignee": "fenced"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"], timeout=60)
    assert task["status"] == "completed", task
    msgs = server.api("GET", f"/api/tasks/{task['id']}/messages")
    said = json.dumps(msgs)
    assert "direct-allowed OK b'this is allowed'" in said, said
    assert "proxy-allowed OK b'this is allowed'" in said, said
    assert "direct-other FAILED URLError" in said and "Connection refused" in said, said  # nothing listens inside
    assert "proxy-other FAILED HTTPError 403" in said, said                              # the proxy said no
    assert "resolve FAILED gaierror" in said, said                                       # no resolver inside
    assert "comment OK 0" in said, said                                                  # the server is reachable
    assert other.hits == [] and len(allowed.hits) == 2
    refused = [m["content"]["message"] for m in msgs if m["content"].get("event") == "network_refused"]
    assert refused == [f"network: refused localhost:{other.port} — not on agent fenced's allowlist; its owner can "
                       f"add it: predictorx agent update fenced --network allowlist --allow-host localhost:{other.port} "
                       "(with the others)"], refused
    comments = server.api("GET", f"/api/issues/{issue['number']}/comments")
    assert any(c["body"] == "from the allowlist" for c in comments)


def test_an_open_agent_keeps_the_machines_network(server, start_daemon, tmp_path, fixtures):
    allowed, other = fixtures
    start_daemon()
    server.api("POST", "/api/agents", {"name": "free", "provider": "command", "sandbox": True, "command": [
        sys.executable, "-c", f"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{other.port}/').read())"]})
    assert server.api("GET", "/api/agents/free")["network"] == "open"
    issue = server.api("POST", "/api/issues", {"title": "Reach out", "assignee": "free"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"], timeout=60)
    assert task["status"] == "completed", task
    assert other.hits == ["/"]


def _ask(server, method: str, path: str, body: dict) -> tuple[int, dict]:
    r = server.http.request(method, path, json=body)
    return r.status_code, r.json()


def test_an_allowlist_needs_the_sandbox_and_valid_hosts(server):
    # The sandbox is on by default (issue 29): turned off, an allowlist cannot be kept.
    status, body = _ask(server, "POST", "/api/agents", {"name": "a1", "provider": "claude", "sandbox": False,
                                                          "network": "allowlist", "allow_hosts": ["api.anthropic.com"]})
    assert status == 422 and "needs the sandbox" in body["detail"], body
    p = server.cli("agent", "create", "--name", "a2", "--provider", "claude", "--no-sandbox", "--network", "allowlist",
                   "--allow-host", "api.anthropic.com", check=False)
    assert p.returncode != 0 and "needs the sandbox" in p.stderr and "Traceback" not in p.stderr
    for bad in ("api.anthropic.com:99999", "*.com", "::1", "a b", "2130706433", ""):
        status, body = _ask(server, "POST", "/api/agents", {"name": "a3", "provider": "claude", "sandbox": True,
                                                              "network": "allowlist", "allow_hosts": [bad]})
        assert status in (400, 422) and body.get("detail"), (bad, status, body)
    server.api("POST", "/api/agents", {"name": "a4", "provider": "claude", "sandbox": True, "network": "allowlist",
                                       "allow_hosts": ["API.Anthropic.com.", "[::1]:8080", "*.githubusercontent.com"]})
    assert server.api("GET", "/api/agents/a4")["allow_hosts"] == ["api.anthropic.com:443", "[::1]:8080",
                                                                  "*.githubusercontent.com:443"]
    status, body = _ask(server, "PATCH", "/api/agents/a4", {"sandbox": False})
    assert status == 422 and "needs the sandbox" in body["detail"], body
    p = server.cli("agent", "update", "a4", "--network", "closed", check=False)
    assert p.returncode == 2 and "--network is open or allowlist" in p.stderr and "Traceback" not in p.stderr
    server.cli("agent", "update", "a4", "--no-sandbox", "--network", "open")
    agent = server.api("GET", "/api/agents/a4")
    assert agent["network"] == "open" and agent["allow_hosts"] == [] and agent["sandbox"] is False


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(entry))
        except (OSError, ValueError):
            continue
    return found


def _words(pid: int) -> set[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return {os.path.basename(w.decode(errors="replace")) for w in f.read().split(b"\0")}
    except OSError:
        return set()


def test_a_cancelled_allowlist_run_leaves_no_relay_behind(server, start_daemon):
    start_daemon()
    server.api("POST", "/api/agents", {"name": "sleeper", "provider": "command", "sandbox": True,
                                       "network": "allowlist", "command": ["sleep", "120"]})
    issue = server.api("POST", "/api/issues", {"title": "Wait", "assignee": "sleeper"})
    run = wait_until(lambda: server.runs(issue["number"]), what="a task")[0]
    marker = f"PREDICTORX_TASK_ID={run['id']}"
    # The agent and the relay beside it (both carry the task's environment) are running.
    wait_until(lambda: {"netrelay.py", "sleep"} <= {word for pid in _processes_with(marker) for word in _words(pid)},
               60, what="the agent and its relay")
    server.api("POST", f"/api/tasks/{run['id']}/cancel")
    server.wait_task(run["id"], ("cancelled",), timeout=30)
    wait_until(lambda: not _processes_with(marker), 10, what="every process of the cancelled run to end")
