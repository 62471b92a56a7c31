"""An agent's secret on its way to a run (issue 28 §2), with a real server, daemon and `command`
agent: it reaches the agent's environment (the agent prints its SHA-256), sandboxed or not; while
the run goes it is in no process's command line (`ps`) and not in the daemon's environment; the
agent prints it to stdout and stderr, in a tool call and its final answer, and none of it reaches
the task's messages, result, the raw logs on the daemon's disk, the daemon's log or any API
answer — each shows the mask instead."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from predictorx.daemon import sandbox
from predictorx.secretmask import MASK

from .harness import UNCONFINED, wait_until

AGENT = r'''
import hashlib, json, os, pathlib, sys, time
key = os.environ.get("API_KEY", "")
print(json.dumps({"type": "text", "text": "sha=" + hashlib.sha256(key.encode()).hexdigest()
                  + " color=" + os.environ.get("COLOR", "")}), flush=True)
print("the key is " + key, flush=True)
print(json.dumps({"type": "tool_use", "name": "curl", "input": {"header": "Bearer " + key}}), flush=True)
sys.stderr.write("stderr says " + key + "\n")
sys.stderr.flush()
if len(sys.argv) > 2:  # hold the run until the test has looked at the processes
    pathlib.Path(sys.argv[1]).write_text("running")
    while not pathlib.Path(sys.argv[2]).exists():
        time.sleep(0.05)
print("done with " + key, flush=True)
'''


def _files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]


def _run(server, tmp_path: Path, name: str, argv: list[str], sandboxed: bool) -> tuple[dict, str]:
    secret = "sk-e2e-" + uuid.uuid4().hex
    server.api("POST", "/api/agents", {**({} if sandboxed else UNCONFINED), "name": name, "provider": "command",
                                       "command": argv})
    server.api("PUT", f"/api/agents/{name}/env/API_KEY", {"value": secret, "secret": True})
    server.api("PUT", f"/api/agents/{name}/env/COLOR", {"value": "blue", "secret": False})
    issue = server.api("POST", "/api/issues", {"title": "Use the key", "assignee": name})
    task_id = wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"]
    return {"task_id": task_id, "issue": issue}, secret


def _check_after(server, daemon, task_id: str, secret: str, workspaces: Path) -> None:
    task = server.wait_task(task_id, timeout=60)
    assert task["status"] == "completed", task
    messages = server.api("GET", f"/api/tasks/{task_id}/messages")
    everything = json.dumps(messages, ensure_ascii=False) + json.dumps(task, ensure_ascii=False)
    assert "sha=" + hashlib.sha256(secret.encode()).hexdigest() in everything, "the secret did not reach the agent"
    assert "color=blue" in everything
    assert secret not in everything, "a message or the result shows the secret"
    assert f"the key is {MASK}" in everything and f"Bearer {MASK}" in everything
    assert MASK in (task["result"] or "")
    for path in (f"/api/agents/{task['agent_name']}", f"/api/agents/{task['agent_name']}/env", "/api/agents",
                 f"/api/issues/{task['issue_number']}/runs"):
        assert secret not in json.dumps(server.api("GET", path)), path
    # Nothing on the daemon's disk (raw logs, env root) and nothing in its log has it.
    files = _files_under(daemon.home) + _files_under(workspaces)
    logs = [p for p in files if p.name.endswith((".stream.jsonl", ".stderr.log"))]
    assert any(p.name.endswith(".stderr.log") for p in logs), "no raw log was written"
    for p in files:
        assert secret.encode() not in p.read_bytes(), f"{p} holds the secret"
    stderr_log = next(p for p in logs if p.name.endswith(".stderr.log")).read_bytes()
    assert f"stderr says {MASK}".encode() in stderr_log


def test_a_secret_reaches_the_unsandboxed_run_and_nothing_else(server, start_daemon, tmp_path):
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    started, go = tmp_path / "started", tmp_path / "go"
    daemon = start_daemon(PREDICTORX_WORKSPACES_ROOT=str(tmp_path / "ws"))
    run, secret = _run(server, tmp_path, "keeper", [sys.executable, str(script), str(started), str(go)], False)
    wait_until(lambda: started.exists() or server.api("GET", f"/api/tasks/{run['task_id']}")["status"] in (
        "failed", "cancelled"), 60, 0.05, "the agent to start")
    assert started.exists(), (server.api("GET", f"/api/tasks/{run['task_id']}"), daemon.output()[-3000:])
    ps = subprocess.run(["ps", "-eww", "-o", "args"], capture_output=True, text=True, timeout=30).stdout
    assert str(script) in ps and secret not in ps, "the secret is on a command line"
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                assert secret.encode() not in (proc / "cmdline").read_bytes(), f"pid {proc.name}'s argv has it"
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
    daemon_env = (Path("/proc") / str(daemon.proc.pid) / "environ").read_bytes()
    assert secret.encode() not in daemon_env
    go.write_text("go")
    _check_after(server, daemon, run["task_id"], secret, tmp_path / "ws")
    assert secret not in daemon.output()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux-only")
def test_a_secret_reaches_the_sandboxed_run(server, start_daemon, tmp_path):
    problem = sandbox.bwrap_problem()
    if problem:
        pytest.skip(problem)
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    daemon = start_daemon(PREDICTORX_WORKSPACES_ROOT=str(tmp_path / "ws"))
    run, secret = _run(server, tmp_path, "boxed", [sys.executable, str(script)], True)
    _check_after(server, daemon, run["task_id"], secret, tmp_path / "ws")
