"""`predictorx demo` (and the first `predictorx up`): the whole flow without an LLM.

A small local git repository, a project pointing at it in worktree mode, a `command` agent that
makes a real change, an issue assigned to it — then it waits for the run and says where to look.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path

from . import config
from .apiclient import Client, CliError, fail
from .daemon.identity import daemon_id


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=Predictor X demo", "-c", "user.email=demo@predictorx.local",
                    "-c", "commit.gpgSign=false", *args], cwd=repo, check=True, timeout=30,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_repo(path: Path) -> Path:
    if (path / ".git").is_dir():
        return path
    path.mkdir(parents=True, exist_ok=True)
    (path / "hello.py").write_text('"""A tiny program for the Predictor X demo."""\n\nprint("hello")\n')
    (path / "README.md").write_text("# demo\n\nA sample repository the demo agent changes.\n")
    _git(path, "init", "-q", "-b", "main")
    _git(path, "add", ".")
    _git(path, "commit", "-q", "-m", "Initial commit")
    return path


def _wait_for_daemon(client: Client, did: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for d in client.get("/api/daemons"):
            if d["id"] == did and d["online"]:
                return
        time.sleep(0.5)
    fail(f"no daemon of this machine is online; run `{config.cli_command()} daemon start` "
         f"(or `{config.cli_command()} up`) and retry")


def run_demo(timeout: float = 120) -> dict:
    client = Client()
    did = daemon_id()
    _wait_for_daemon(client, did)
    repo = make_repo(config.state_dir() / "demo-repo")
    agents = {a["name"] for a in client.get("/api/agents")}
    if "demo-bot" not in agents:
        client.post("/api/agents", {"name": "demo-bot", "provider": "command",
                                    "command": [sys.executable, "-m", "predictorx.demo_agent"]})
    project = next((p for p in client.get("/api/projects") if p["title"] == "Demo project"), None)
    project = project or client.post("/api/projects", {
        "title": "Demo project", "description": "A sample project over a small local git repository.",
        "resources": [{"resource_type": "local_directory", "label": "demo repo",
                       "resource_ref": {"local_path": str(repo), "daemon_id": did, "execution_mode": "worktree"}}]})
    issue = client.post("/api/issues", {"title": "Add a greeting function", "project_id": project["id"],
                                        "body": "Add greet(name) to hello.py.", "assignee": "demo-bot"})
    deadline = time.monotonic() + timeout
    run = None
    while time.monotonic() < deadline:
        runs = client.get(f"/api/issues/{issue['number']}/runs")
        run = runs[-1] if runs else None
        if run and run["status"] in ("completed", "failed", "cancelled"):
            break
        time.sleep(0.3)
    if run is None or run["status"] not in ("completed", "failed", "cancelled"):
        raise CliError(f"the demo run did not finish in {timeout:.0f} s; see `predictorx issue runs {issue['number']}`")
    px = config.cli_command()
    print(f"\nDemo: issue #{issue['number']} ran as task {run['id']}: {run['status']}")
    if run.get("failure_reason"):
        print(f"  failure: {run['failure_reason']}")
    if run.get("branch_name"):
        print(f"  branch:  {run['branch_name']}")
        print(f"           git -C {shlex.quote(str(repo))} log --oneline {run['branch_name']}")
    print(f"  review:  {client.server_url}/tasks/{run['id']}  (the diff, and how to merge or discard it)")
    print(f"  CLI:     {px} issue runs {issue['number']}")
    print(f"           {px} task messages {run['id']}\n")
    return run
