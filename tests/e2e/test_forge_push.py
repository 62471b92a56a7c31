"""A task's branch pushed to its forge by the daemon that ran it (issue 22 §2, §5), through real
git smart HTTP (`git http-backend` behind nginx with basic auth: tests/forgestand), with the
credential never on a command line, in a log or in an agent's environment; a follow-up continues
the same branch; a daemon that did not run the task gets 404 for its push target."""

from __future__ import annotations

import base64
import subprocess
import threading
from pathlib import Path

import httpx2 as httpx
import pytest

from .harness import UNCONFINED, git, wait_until

pytest.importorskip("predictorx.service.forges", reason="forge-core's service/forges.py is not merged here yet")
pytest.importorskip("predictorx.forges.github", reason="forge-clients' GitHub client is not merged here yet")

pytest_plugins = ["forgestand.fixtures"]  # github_standin: tests/forgestand (STANDIN-API.md)

REPO = "acme/shop"
#: The agent writes its environment into its work (which is pushed): the token must never be there.
AGENT = "env > agent-env.txt; echo \"print('v2')\" > app.py"


class ArgvWatch:
    """Every process's command line, read from /proc as fast as it goes while the push runs."""

    def __init__(self, secrets: list[str]):
        self.secrets = [s.encode() for s in secrets]
        self.found: list[str] = []
        self.seen = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._scan, daemon=True)

    def __enter__(self) -> "ArgvWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _scan(self) -> None:
        while not self._stop.is_set():
            out = subprocess.run(["ps", "-eo", "pid,args", "--no-headers", "-ww"], capture_output=True,
                                 timeout=10).stdout
            self.seen += 1
            for line in out.splitlines():
                if any(s in line for s in self.secrets):
                    self.found.append(line.decode("utf-8", "replace"))


def _person_clone(standin, tmp_path: Path) -> Path:
    folder = tmp_path / "shop"
    git(tmp_path, "clone", "-q", standin.authed_url(REPO), str(folder))
    git(folder, "remote", "set-url", "origin", standin.repo(REPO).clone_url)  # as people keep it: no token
    git(folder, "config", "user.name", "Person")
    git(folder, "config", "user.email", "person@example.com")
    return folder


def _connect(server, standin) -> None:
    server.api("POST", "/api/forges", {"kind": "github", "name": "gh", "base_url": standin.base_url,
                                       "api_url": standin.api_url, "credential": standin.token})


def _project(server, daemon, folder: Path, **policy) -> dict:
    project = server.api("POST", "/api/projects", {"title": "Shop", "resources": [{
        "resource_type": "local_directory", "label": "shop",
        "resource_ref": {"local_path": str(folder), "daemon_id": daemon.id, "execution_mode": "worktree"}}]})
    server.api("PATCH", f"/api/projects/{project['id']}", {"forge_policy": {"auto_pr": False, **policy}})
    return project


def _secrets(standin) -> list[str]:
    basic = base64.b64encode(f"{standin.git_username}:{standin.token}".encode()).decode()
    return [standin.token, basic]


def test_push_through_smart_http_never_shows_the_token_and_a_follow_up_continues_the_branch(
        server, start_daemon, github_standin, tmp_path):
    standin = github_standin
    standin.create_repo(REPO, {"app.py": "print('v1')\n"})
    folder = _person_clone(standin, tmp_path)
    daemon = start_daemon()
    _connect(server, standin)
    project = _project(server, daemon, folder)
    server.api("POST", "/api/agents", {"name": "coder", "provider": "command", "command": ["sh", "-c", AGENT],
                                       **UNCONFINED})
    issue = server.api("POST", "/api/issues", {"title": "v2", "project_id": project["id"], "assignee": "coder"})
    control = "CONTROL-" + standin.token[::-1]  # proves the watch sees a secret in an argv when there is one
    with ArgvWatch([*_secrets(standin), control]) as watch:
        subprocess.run(["sh", "-c", "sleep 0.5", control], check=True, timeout=30)
        task = server.wait_task(server.runs(issue["number"])[0]["id"], timeout=60)
        assert task["status"] == "completed", task
        # Pushed while the daemon still made the review, reported with the finish: the push is
        # on record in the same transaction that completed the task (daemon/earlypush.py).
        early = server.api("GET", f"/api/tasks/{task['id']}/review")
        assert early.get("pushed") and early["pushed"]["branch"] == task["branch_name"], early
        branch = task["branch_name"]
        head = wait_until(lambda: standin.branch_head(REPO, branch), 30, 0.1, "the branch on the forge")
    assert watch.seen > 3 and any(control in line for line in watch.found)
    assert [line for line in watch.found if control not in line] == []
    # The daemon reports the push after git is done: wait for the report, not only the branch.
    review = wait_until(lambda: (r := server.api("GET", f"/api/tasks/{task['id']}/review")).get("pushed") and r,
                        30, 0.05, "the push's report")
    assert review["pushed"]["sha"] == head == git(folder, "rev-parse", branch).strip()
    assert review["origin_url"] == standin.repo(REPO).clone_url
    pushed_env = subprocess.run(["git", "--git-dir", str(standin.repo(REPO).bare), "show", f"{head}:agent-env.txt"],
                                capture_output=True, text=True, check=True, timeout=30).stdout
    assert "PREDICTORX_TOKEN" in pushed_env  # it is the agent's environment…
    for secret in _secrets(standin):  # …and the forge's credential is not in it, nor in any log
        assert secret not in pushed_env
        assert secret not in daemon.output()
        assert secret not in server.log_path.read_text()
    messages = server.api("GET", f"/api/tasks/{task['id']}/messages")
    assert any(m["content"].get("event") == "forge_push" for m in messages)

    # Someone else pushes to the branch on the forge meanwhile: the follow-up starts from there.
    theirs = standin.commit_on_server(REPO, branch, {"NOTES.md": "from the reviewer\n"}, "a reviewer's note")
    follow_up = _queue_follow_up(server, issue["number"], branch)
    daemon.stop()  # started again, it claims what is queued at once (its "hello")
    daemon = start_daemon()  # the same home: the same daemon
    done = server.wait_task(follow_up, timeout=60)
    assert done["status"] == "completed", done
    assert done["branch_name"] == branch  # the same branch, not a new agent/<agent>/<task>
    new_head = wait_until(lambda: (h := standin.branch_head(REPO, branch)) != theirs and h, 30, 0.1,
                          "the follow-up's push")
    assert git(folder, "merge-base", "--is-ancestor", theirs, new_head) == ""  # built on the forge's head
    second_env = subprocess.run(["git", "--git-dir", str(standin.repo(REPO).bare), "show",
                                 f"{new_head}:agent-env.txt"], capture_output=True, text=True, check=True,
                                timeout=30).stdout
    assert done["id"] in second_env and all(s not in second_env for s in _secrets(standin))
    assert all(s not in daemon.output() for s in _secrets(standin))


def _queue_follow_up(server, issue_number: int, branch: str) -> str:
    """A follow-up on the pull request's branch, as the forge loop queues one (service level: the
    loop's own routes are another helper's); the daemon takes it when it hears of queued work."""
    from predictorx.service import tasks as task_service
    from predictorx.store.db import Database
    from predictorx.store.schema import Agent, Issue, PullRequest

    db = Database(server.database_url)
    try:
        with db.write() as s:
            issue = s.query(Issue).filter_by(number=issue_number).one()
            pr = s.query(PullRequest).filter_by(issue_id=issue.id, branch=branch).one()
            agent = s.query(Agent).filter_by(name="coder").one()
            task = task_service.follow_up(s, issue, agent, "Address the reviewer's note.")
            task.pull_request_id = pr.id
            task_id = task.id
    finally:
        db.dispose()
    return task_id


def test_the_target_is_held_while_the_agent_works_and_reaches_no_process_it_can_read(
        server, start_daemon, github_standin, tmp_path):
    """The push target (with the credential) is asked while the agent works (daemon/earlypush.py),
    so the run's end pushes without a round trip first. Held in the daemon's memory only: the
    agent, waiting until the daemon has it, reads every process environment and command line it
    can (/proc/*/environ, /proc/*/cmdline) and its own environment — none holds the token or its
    Basic form — and the daemon's and the server's logs do not either."""
    standin = github_standin
    standin.create_repo(REPO, {"app.py": "print('v1')\n"})
    folder = _person_clone(standin, tmp_path)
    steps, seen = tmp_path / "steps.txt", tmp_path / "seen-by-agent.txt"
    daemon = start_daemon(PREDICTORX_STEP_TIMES=str(steps))
    _connect(server, standin)
    project = _project(server, daemon, folder)
    agent = (f'for i in $(seq 1 600); do grep -q "$PREDICTORX_TASK_ID target_answered" {steps} && break; '
             f"sleep 0.05; done; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline > {seen} 2>/dev/null; "
             f"env >> {seen}; echo \"print('v2')\" > app.py")
    server.api("POST", "/api/agents", {"name": "coder", "provider": "command", "command": ["sh", "-c", agent],
                                       **UNCONFINED})
    issue = server.api("POST", "/api/issues", {"title": "v2", "project_id": project["id"], "assignee": "coder"})
    task = server.wait_task(server.runs(issue["number"])[0]["id"], timeout=60)
    assert task["status"] == "completed", task
    wait_until(lambda: standin.branch_head(REPO, task["branch_name"]), 30, 0.1, "the branch on the forge")
    order = [line.split(" ")[1] for line in steps.read_text().splitlines() if line.startswith(task["id"])]
    assert "target_answered" in order and order.index("target_answered") < order.index("agent_exited"), order
    assert order.count("target_asked") == 1  # its end asked nothing more
    read = seen.read_bytes()
    assert b"PREDICTORX_TASK_ID" in read and len(read) > 1000  # it did read the processes' environments
    for secret in _secrets(standin):
        assert secret.encode() not in read
        assert secret not in daemon.output()
        assert secret not in server.log_path.read_text()


def test_only_the_daemon_that_ran_the_task_gets_its_push_target(server, start_daemon, github_standin, tmp_path):
    standin = github_standin
    standin.create_repo(REPO, {"app.py": "print('v1')\n"})
    folder = _person_clone(standin, tmp_path)
    daemon = start_daemon()
    _connect(server, standin)
    project = _project(server, daemon, folder, auto_push=False)  # pushed only when asked
    server.api("POST", "/api/agents", {"name": "coder", "provider": "command", "command": ["sh", "-c", AGENT],
                                       **UNCONFINED})
    issue = server.api("POST", "/api/issues", {"title": "v2", "project_id": project["id"], "assignee": "coder"})
    task = server.wait_task(server.runs(issue["number"])[0]["id"], timeout=60)
    assert task["status"] == "completed" and task["branch_name"]
    assert standin.branch_head(REPO, task["branch_name"]) is None  # auto_push off: nothing pushed
    other = server.api("POST", "/api/daemon/register", {"daemon_id": "0" * 8 + "-0000-4000-8000-" + "0" * 12,
                                                        "name": "other", "runtimes": [{"provider": "command"}]})
    for token, path in ((other["token"], "forge-target"), (other["token"], "forge-push")):
        r = httpx.request("GET" if path == "forge-target" else "POST",
                          f"{server.url}/api/daemon/tasks/{task['id']}/{path}",
                          headers={"Authorization": f"Bearer {token}"},
                          json=None if path == "forge-target" else {"ok": True, "sha": "a" * 40}, timeout=30)
        assert r.status_code == 404, r.text
        assert standin.token not in r.text
    r = httpx.get(f"{server.url}/api/daemon/tasks/{task['id']}/forge-target", headers=server.headers(), timeout=30)
    assert r.status_code == 403  # a person's token is no daemon's
    asked = server.api("POST", f"/api/tasks/{task['id']}/push")
    assert asked["asked"] and asked["daemon_connected"]
    wait_until(lambda: standin.branch_head(REPO, task["branch_name"]), 30, 0.1, "the asked-for push")


def test_a_follow_up_in_a_repository_checkout_continues_the_forge_branch(server, start_daemon, github_standin,
                                                                           tmp_path):
    """A checkout follow-up starts from the branch's head fetched from the forge into the repo cache
    and delivers onto the same branch name, then pushes it (leased on that head)."""
    standin = github_standin
    repo = standin.create_repo("acme/api", {"app.py": "print('v1')\n"})
    branch = "agent/coder/earlier-task"
    earlier = standin.commit_on_server("acme/api", branch, {"app.py": "print('earlier')\n"}, "an earlier run")
    _connect(server, standin)
    # The project's repository is the forge's, read from disk (the repo cache needs no credential for
    # it); the follow-up names its branch on the forge through the pull request it continues.
    project = server.api("POST", "/api/projects", {"title": "Api", "resources": [
        {"resource_type": "github_repo", "resource_ref": {"url": f"file://{repo.bare}"}}]})
    server.api("POST", "/api/agents", {"name": "coder", "provider": "command", "command": ["sh", "-c", AGENT],
                                       **UNCONFINED})
    issue = server.api("POST", "/api/issues", {"title": "more", "project_id": project["id"]})
    task_id = _queue_on_branch(server, issue["number"], "acme/api", repo.clone_url, branch, earlier)
    start_daemon()
    done = server.wait_task(task_id, timeout=60)
    assert done["status"] == "completed", done
    assert done["branch_name"] == branch
    review = server.api("GET", f"/api/tasks/{task_id}")
    head = wait_until(lambda: (h := standin.branch_head("acme/api", branch)) != earlier and h, 30, 0.1, "the push")
    log = subprocess.run(["git", "--git-dir", str(repo.bare), "log", "--format=%H", head], capture_output=True,
                         text=True, check=True, timeout=30).stdout.split()
    assert earlier in log  # built on the forge's head, not on the default branch
    out = subprocess.run(["git", "--git-dir", str(repo.bare), "show", f"{head}:app.py"], capture_output=True,
                         text=True, check=True, timeout=30).stdout
    assert out == "print('v2')\n" and review["status"] == "completed"


def _queue_on_branch(server, issue_number: int, repo_path: str, repo_url: str, branch: str, head: str) -> str:
    from predictorx.service import tasks as task_service
    from predictorx.store.db import Database
    from predictorx.store.schema import Agent, ForgeConnection, Issue, PullRequest

    db = Database(server.database_url)
    try:
        with db.write() as s:
            issue = s.query(Issue).filter_by(number=issue_number).one()
            conn = s.query(ForgeConnection).one()
            pr = PullRequest(workspace_id=issue.workspace_id, issue_id=issue.id, connection_id=conn.id,
                             repo_path=repo_path, repo_url=repo_url, branch=branch, state="open", head_sha=head)
            s.add(pr)
            s.flush()
            task = task_service.follow_up(s, issue, s.query(Agent).filter_by(name="coder").one(), "Go on.")
            task.pull_request_id = pr.id
            return task.id
    finally:
        db.dispose()


def test_an_in_place_agents_own_commits_are_pushed_as_its_branch(server, start_daemon, github_standin, tmp_path):
    """In place nothing is switched or committed for the agent; what it committed itself is named
    by the task's branch in the person's repository, and that branch is what reaches the forge."""
    standin = github_standin
    standin.create_repo(REPO, {"app.py": "print('v1')\n"})
    folder = _person_clone(standin, tmp_path)
    daemon = start_daemon()
    _connect(server, standin)
    project = server.api("POST", "/api/projects", {"title": "Shop", "resources": [{
        "resource_type": "local_directory", "label": "shop",
        "resource_ref": {"local_path": str(folder), "daemon_id": daemon.id, "execution_mode": "in_place"}}]})
    server.api("PATCH", f"/api/projects/{project['id']}", {"forge_policy": {"auto_pr": False}})
    script = "echo \"print('v2')\" > app.py && git commit -qam 'v2, by the agent'"
    server.api("POST", "/api/agents", {"name": "coder", "provider": "command", "command": ["sh", "-c", script],
                                       **UNCONFINED})
    issue = server.api("POST", "/api/issues", {"title": "v2", "project_id": project["id"], "assignee": "coder"})
    task = server.wait_task(server.runs(issue["number"])[0]["id"], timeout=60)
    assert task["status"] == "completed" and task["branch_name"].startswith("agent/coder/"), task
    head = git(folder, "rev-parse", "HEAD").strip()
    assert git(folder, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert wait_until(lambda: standin.branch_head(REPO, task["branch_name"]), 30, 0.1, "the push") == head
