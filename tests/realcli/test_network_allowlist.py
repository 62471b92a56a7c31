"""Each real CLI, sandboxed, under a network allowlist naming only its model server (issue 29).

Each CLI's shell tool also tries a second loopback fixture (straight and through the proxy) and a
name that is not on the list: refused, refused with a line in the run's messages, unresolved.
The run has a network namespace of its own: its model server on 127.0.0.1 is reached through the
daemon's proxy (the relay listens on the same port inside), the Predictor X server likewise, and
nothing else. The daemon's environment still names the tripwire as HTTP(S) proxy: inside, the
relay's proxy replaces it, so anything a CLI tries beyond its model server reaches the daemon's
proxy, is refused and shows in the run's messages — never the tripwire, never a hang.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from .scenario import git, work_command

PROVIDERS = ["claude", "codex", "gemini", "opencode"]
#: Run by the CLI's own shell tool, inside the run: a loopback fixture not on the list (straight,
#: and through the proxy the run was given), and a name not on the list.
PROBE = """import os, socket, sys, urllib.request
port = sys.argv[1]
try:
    urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10); print("other: reached")
except Exception as e:
    print("other: refused", e)
os.environ.pop("no_proxy", None); os.environ.pop("NO_PROXY", None)
via = urllib.request.build_opener(urllib.request.ProxyHandler({"http": os.environ.get("HTTP_PROXY", "")}))
try:
    via.open(f"http://localhost:{port}/", timeout=10); print("other via proxy: reached")
except Exception as e:
    print("other via proxy: refused", getattr(e, "code", ""), e)
try:
    socket.getaddrinfo("pypi.org", 443); print("name: resolved")
except Exception as e:
    print("name: unresolved", e)
"""


class Other:
    """A second loopback server, not on the list: it must never be reached."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        other = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                other.hits.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def other():
    o = Other()
    yield o
    o.close()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_real_cli_completes_under_an_allowlist_of_only_its_model_server(scenario, provider, other):
    s = scenario(provider)
    s.model.command = work_command(s.cli, f"; python3 probe.py {other.port}")
    model = s.model.url.removeprefix("http://")
    agent = s.server.api("PATCH", f"/api/agents/{s.agent_name}",
                         {"sandbox": True, "network": "allowlist", "allow_hosts": [model]})
    assert agent["network"] == "allowlist" and agent["allow_hosts"] == [model]
    repo = s.person_repo()
    (repo / "probe.py").write_text(PROBE)
    git(repo, "add", "probe.py")
    git(repo, "-c", "commit.gpgSign=false", "commit", "-q", "-m", "probe")
    _issue, run = s.assign(s.project(repo, "worktree"))
    task = s.wait(run["id"], timeout=180)
    assert f"edited by {provider} in " in git(repo, "show", f"{task['branch_name']}:README.md")
    assert s.model.conversation(), "the model server was reached through the proxy"
    assert s.tripwire.requests == [], s.tripwire.requests  # the daemon's own proxy setting is not used inside
    msgs = s.messages(task["id"])
    output = json.dumps([m["content"] for m in msgs if m["kind"] == "tool_result"])
    # The second fixture: nothing listens on its port inside; through the proxy, a 403. No name resolves.
    assert "other: refused" in output and "Connection refused" in output, output
    assert "other via proxy: refused 403" in output, output
    assert "name: unresolved" in output, output
    assert other.hits == []
    refused = [m["content"]["message"] for m in msgs if m["content"].get("event") == "network_refused"]
    assert any(f"localhost:{other.port}" in line for line in refused), refused
    # Whatever a CLI tried beyond its model server was refused with a line saying so (Codex asks
    # github.com and chatgpt.com; the others ask nothing); the model server never was.
    assert not any(model in line for line in refused), refused
    assert all(f"not on agent {s.agent_name}'s allowlist" in line for line in refused), refused
    if provider == "codex":  # its own calls home, refused with a line each
        assert any("github.com" in line or "chatgpt.com" in line for line in refused), refused


#: A name that resolves nowhere — not inside the run, not on this machine — but which the daemon's
#: proxy is told to connect to 127.0.0.1 for (PREDICTORX_NET_RESOLVE): a CLI reaches its model
#: server by that name only by honouring the proxy variables, as it must for a real model API.
MODEL_NAME = "model.predictorx.test"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_real_cli_reaches_a_named_model_host_through_the_proxy(scenario, provider):
    s = scenario(provider, model_host=MODEL_NAME, daemon_env={"PREDICTORX_NET_RESOLVE": f"{MODEL_NAME}=127.0.0.1"})
    allowed = f"{MODEL_NAME}:{s.model.port}"
    s.server.api("PATCH", f"/api/agents/{s.agent_name}", {"sandbox": True, "network": "allowlist",
                                                          "allow_hosts": [allowed]})
    repo = s.person_repo()
    _issue, run = s.assign(s.project(repo, "worktree"))
    task = s.wait(run["id"], timeout=180)
    assert f"edited by {provider} in " in git(repo, "show", f"{task['branch_name']}:README.md")
    assert s.model.conversation()
    assert s.tripwire.requests == [], s.tripwire.requests
