"""`predictorx repo checkout` from inside a task (R-CTX-4), and the first run that shows the product."""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import sys

from .harness import UNCONFINED, free_port, git, listening_addresses, make_repo, wait_until


def test_agent_checks_out_allowed_repos_and_is_refused_others(server, start_daemon, tmp_path):
    src = make_repo(tmp_path / "lib-src", {"lib.py": "VALUE = 1\n"})
    git(src, "checkout", "-q", "-b", "feature")
    (src / "lib.py").write_text("VALUE = 2\n")
    git(src, "-c", "commit.gpgSign=false", "commit", "-qam", "feature")
    git(src, "checkout", "-q", "main")
    bare = tmp_path / "lib.git"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(bare))
    url = f"file://{bare}"
    # The workspace lists the repo; the project has none, so the agent starts in an empty workdir.
    ws = server.api("GET", "/api/workspaces")[0]
    server.api("PATCH", f"/api/workspaces/{ws['id']}", {"repos": [url]})
    start_daemon()
    out = tmp_path / "out"
    gate = tmp_path / "gate"
    script = (f'while [ ! -f {gate} ]; do sleep 0.05; done; '
              f'predictorx repo checkout {url} --ref feature > {out}.path 2> {out}.err1; echo $? > {out}.rc1; '
              f'predictorx repo checkout https://example.invalid/other/repo > /dev/null 2> {out}.err2; echo $? > {out}.rc2')
    server.api("POST", "/api/agents", {**UNCONFINED, "name": "reader", "provider": "command", "command": ["sh", "-c", script]})
    issue = server.api("POST", "/api/issues", {"title": "Read the lib", "assignee": "reader"})
    task_id = wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"]
    # The workspace list is refreshed while the task runs: the task's own list stands.
    wait_until(lambda: server.api("GET", f"/api/tasks/{task_id}")["status"] == "running", what="running")
    server.api("PATCH", f"/api/workspaces/{ws['id']}", {"repos": []})
    gate.write_text("go")
    task = server.wait_task(task_id)
    assert task["status"] == "completed", task
    assert (tmp_path / "out.rc1").read_text().strip() == "0", (tmp_path / "out.err1").read_text()
    checkout = tmp_path.joinpath("out.path").read_text().strip()
    assert open(os.path.join(checkout, "lib.py")).read() == "VALUE = 2\n"
    assert git(tmp_path, "-C", checkout, "rev-parse", "--abbrev-ref", "HEAD").strip().startswith("agent/reader/")
    assert (tmp_path / "out.rc2").read_text().strip() == "1"
    refused = (tmp_path / "out.err2").read_text()
    assert "not allowed" in refused and url in refused


def test_first_up_on_a_fresh_state_dir_runs_the_demo(tmp_path):
    """R-SC-1: one command, `predictorx up`, with no database configured, starts the server, the web UI
    (the sign-in link works) and a local daemon (it runs the demo) on one SQLite file in the state
    dir; R-SEC-1: it listens on loopback only."""
    port = free_port()
    env = {**os.environ, "PREDICTORX_HOME": str(tmp_path / "fresh"), "PREDICTORX_WORKSPACES_ROOT": str(tmp_path / "ws")}
    env.pop("PREDICTORX_DATABASE_URL", None)
    log = tmp_path / "up.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "predictorx", "up", "--port", str(port)], env=env,
                                stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: "Demo: issue #1" in log.read_text() or proc.poll() is not None, timeout=60,
                   interval=0.2, what="the demo to finish")
        text = log.read_text()
        assert "Demo: issue #1 ran as task" in text and ": completed" in text, text[-3000:]
        assert "sandbox: on (bubblewrap)" in text  # `up` says which mode its daemon runs in (issue 29)
        listening = listening_addresses(proc.pid)
        assert any(p == port for _, p in listening), listening
        assert all(ipaddress.ip_address(ip).is_loopback for ip, _ in listening), listening
        databases = [p.name for p in (tmp_path / "fresh").rglob("*.db")]
        assert databases == ["predictorx.db"], databases
        assert (tmp_path / "fresh" / "predictorx.db").read_bytes()[:16] == b"SQLite format 3\x00"
        link = next(w for w in text.split() if w.startswith(f"http://127.0.0.1:{port}/login?code="))
        owner_token = json.loads((tmp_path / "fresh" / "config.json").read_text())["token"]
        assert owner_token not in text  # only a single-use sign-in code is printed
        import httpx2

        opened = httpx2.get(link, follow_redirects=False, timeout=10)  # a page with a Sign in button
        assert opened.status_code == 200 and "px_token" not in opened.headers.get("set-cookie", "")
        code = link.split("code=", 1)[1]
        login = f"http://127.0.0.1:{port}/login"
        signed_in = httpx2.post(login, data={"code": code}, follow_redirects=False, timeout=10)
        assert signed_in.status_code == 303 and "px_token" in signed_in.headers.get("set-cookie", "")
        again = httpx2.post(login, data={"code": code}, follow_redirects=False, timeout=10)
        assert "px_token" not in again.headers.get("set-cookie", "")
        branch = next(line.split()[1] for line in text.splitlines() if line.strip().startswith("branch:"))
        repo = tmp_path / "fresh" / "demo-repo"
        assert "greet" in git(repo, "show", f"{branch}:hello.py")
        assert git(repo, "status", "--porcelain") == ""  # the person's copy is untouched
        status = subprocess.run([sys.executable, "-m", "predictorx", "issue", "runs", "1", "--output", "json"],
                                env=env, capture_output=True, text=True, timeout=60)
        assert status.returncode == 0 and '"completed"' in status.stdout
        # First-run polish (issue 13 §6): the commands printed work as printed, no Alembic chatter,
        # the daemon's log names the task's outcome, and Ctrl-C says it stopped.
        assert "alembic" not in text.lower()
        printed = [line.split(":", 1)[1].split("(")[0].strip() for line in text.splitlines()
                   if line.strip().startswith(("CLI:",))]
        assert printed, text[-2000:]
        for command in printed:
            ran = subprocess.run(command, shell=True, env=env, capture_output=True, text=True, timeout=60)
            assert ran.returncode == 0, (command, ran.stderr)
        assert "review:" in text and "/tasks/" in text
        wait_until(lambda: ": completed · branch agent/demo-bot/" in log.read_text(), timeout=20,
                   what="the daemon's outcome line")
        before_stop = len(log.read_text())
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(30)
        assert "Predictor X stopped" in log.read_text()
        # the daemon stops before the server and every event stream ends cleanly: no error lines
        stopping = log.read_text()[before_stop:]
        for noise in ("ERROR", "Traceback", "push connection failed", "the local daemon exited"):
            assert noise not in stopping, stopping
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            proc.wait(20)
    assert proc.returncode is not None
