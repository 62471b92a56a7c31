"""From branch to merged, end to end (issue 22 Tests): a real server and daemon processes, real git
(the person's folder whose `origin` is the stand-in forge, pushes through nginx + git
http-backend), an agent making commits, the forge's API played by the stand-ins (every request
checked against the forge's published OpenAPI description), and the Merge button pressed in
Chromium.

issue → run → branch pushed → PR opened → "changes requested" review webhook → follow-up on the
same branch → its push updates the PR → failed check webhook → follow-up → checks pass → Merge in
the browser → the issue is done. GitHub in full; GitLab and Forgejo the same flow.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from forgestand.fixtures import forge_standin_factory  # noqa: F401  (fixture)

from .harness import UNCONFINED, git, wait_until

REPO = {"github": "octo/app", "gitlab": "group/app", "forgejo": "octo/app", "gitea": "octo/app"}
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: The agent: one more line and a commit per run, on whatever branch its daemon gave it.
AGENT_SCRIPT = ('n=$(ls runs 2>/dev/null | wc -l); mkdir -p runs; echo "run $n" > runs/$n.txt; '
                'git add runs && git -c user.name=coder -c user.email=coder@example.com commit -qm "run $n"; echo "did run $n"')


def _chromium() -> str | None:
    for candidate in (os.environ.get("PREDICTORX_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


class Loop:
    """One forge's side of the flow: the stand-in, our connection to it, the person's folder."""

    def __init__(self, server, daemon, standin, tmp: Path):
        self.server, self.s, self.tmp = server, standin, tmp
        self.path = REPO[standin.kind]
        self.repo = standin.create_repo(self.path, files={"README.md": "# app\n"})
        conn = server.api("POST", "/api/forges", {"kind": standin.kind, "name": standin.kind, "base_url": standin.base_url,
                                                  "api_url": standin.api_url, "credential": standin.token})
        self.conn_id, self.secret = conn["id"], conn["webhook_secret"]
        self.hook = f"{server.url}/api/forges/{self.conn_id}/webhook"
        folder = tmp / f"folder-{standin.kind}"
        git(tmp, "clone", "-q", standin.authed_url(self.path), str(folder))
        git(folder, "remote", "set-url", "origin", self.repo.clone_url)  # the person's folder: no token in it
        project = server.api("POST", "/api/projects", {"title": f"App on {standin.kind}", "resources": [{
            "resource_type": "local_directory", "label": "app",
            "resource_ref": {"local_path": str(folder), "daemon_id": daemon.id, "execution_mode": "worktree"}}]})
        self.project = project

    def deliver(self, event: str, number: int, **extra) -> None:
        delivery = self.s.webhook(event, self.path, number, **extra)
        assert self.s.deliver(self.hook, delivery, secret=self.secret) == 200

    def pr_of(self, task_id: str) -> dict:
        return self.server.api("GET", f"/api/tasks/{task_id}/pr")

    def follow_up_done(self, issue: int, after: int) -> dict:
        """The follow-up queued after run number `after`, once it completed and its push landed."""
        runs = wait_until(lambda: (r := self.server.runs(issue)) and len(r) > after and r, 30, 0.1,
                          "a follow-up task")
        task = self.server.wait_task(runs[after]["id"], timeout=90)
        assert task["status"] == "completed", task
        assert task["pull_request_id"], task
        return task


def _flow(server, daemon, standin, tmp: Path, browser_page=None, *, protected: bool = False) -> None:
    """The whole loop; the merge pressed in `browser_page`, or (None) through the CLI.
    `protected`: the base branch requires the "ci" check, and a Merge pressed before it is green
    shows the forge's refusal on the page."""
    loop = Loop(server, daemon, standin, tmp)
    s, path = standin, loop.path
    if protected:
        s.protect_branch(path, s.repo(path).default_branch, required_checks=["ci"])
    issue = server.api("POST", "/api/issues", {"title": f"Add runs ({s.kind})", "project_id": loop.project["id"],
                                               "assignee": "coder"})
    first = server.wait_task(server.runs(issue["number"])[0]["id"], timeout=90)
    assert first["status"] == "completed", (first.get("failure_reason"), first)
    pr = wait_until(lambda: (p := loop.pr_of(first["id"])).get("number") and p, 60, 0.1, "the PR to open")
    on_forge = s.pr(path, pr["number"])
    head1 = s.branch_head(path, pr["branch"])
    assert on_forge.head == pr["branch"] and on_forge.head_sha == head1
    assert f"/issues/{issue['number']}" in on_forge.body

    # A review asks for changes: a follow-up continues the branch, its push updates the same PR.
    s.submit_review(path, pr["number"], "changes_requested", body="Also a second run, please.",
                    comments=[("runs/0.txt", 1, "Number them from one.")])
    loop.deliver("review", pr["number"])
    second = loop.follow_up_done(issue["number"], 1)
    head2 = wait_until(lambda: (h := s.branch_head(path, pr["branch"])) != head1 and h, 60, 0.1,
                       "the follow-up's push")
    assert git(Path(s.repo(path).bare), "cat-file", "-p", f"{head2}:runs/1.txt").strip() == "run 1"
    assert len(s.prs(path)) == 1 and s.pr(path, pr["number"]).head_sha == head2

    # A failed check on the new head: another follow-up, another push to the same PR.
    wait_until(lambda: loop.pr_of(second["id"]).get("head_sha") == head2, 30, 0.1, "the PR row at the new head")
    s.set_check(path, head2, "ci", "failure", log="FAILED test_runs - expected 3 files")
    loop.deliver("check", pr["number"], name="ci")
    loop.follow_up_done(issue["number"], 2)
    head3 = wait_until(lambda: (h := s.branch_head(path, pr["branch"])) != head2 and h, 60, 0.1, "the second push")
    wait_until(lambda: loop.pr_of(first["id"]).get("head_sha") == head3, 30, 0.1, "the PR row at the newest head")

    if protected and browser_page is not None:  # too early: the forge refuses, the page says why
        browser_page.goto(f"{server.url}/tasks/{first['id']}")
        panel = browser_page.locator("#pull-request")
        panel.locator("#merge-pr").click()
        panel.locator("#pr-waiting", has_text="refused").wait_for()
        reason = panel.locator("[role=alert]").inner_text()
        assert "refused" in reason and s.pr(path, pr["number"]).state == "open"

    # Checks pass — the open task page shows it live — then a person merges from there.
    if browser_page is not None:
        browser_page.goto(f"{server.url}/tasks/{first['id']}")
        browser_page.locator("#pull-request #merge-pr").wait_for()
        browser_page.wait_for_function("document.body.classList.contains('live-on')")
    s.set_check(path, head3, "ci", "success")
    loop.deliver("check", pr["number"], name="ci")
    wait_until(lambda: loop.pr_of(first["id"])["check_state"] == "success", 30, 0.1, "checks green")
    if browser_page is not None:
        page = browser_page
        panel = page.locator("#pull-request")
        panel.locator('#pr-checks[data-checks="success"]').wait_for()  # no reload: the event stream
        panel.locator("#merge-pr").click()
        panel.locator("#pr-state", has_text="merged").wait_for()
        page.goto(f"{server.url}/issues/{issue['number']}")  # the issue page's panel says the same
        issue_panel = page.locator("#pull-requests")
        issue_panel.locator("#pr-state", has_text="merged").wait_for()
        assert issue_panel.locator("#pr-merged-by").inner_text().strip()
    else:
        shown = server.cli("task", "pr", first["id"], "-o", "json")  # opening again: the same PR
        assert f'"url": "{pr["url"]}"' in shown.stdout or pr["url"] in shown.stdout
        bad = server.cli("task", "merge", first["id"], "--method", "octopus", check=False)
        assert bad.returncode != 0 and "--method must be merge, squash or rebase" in bad.stderr
        server.cli("task", "merge", first["id"], "--method", "squash")
        assert s.pr(path, pr["number"]).merge_method == "squash"
    assert s.pr(path, pr["number"]).state == "merged"
    final = loop.pr_of(first["id"])
    assert final["state"] == "merged" and final["merged_by"] and final["followups"] == 2
    assert server.api("GET", f"/api/issues/{issue['number']}")["status"] == "done"


@pytest.fixture
def loop_env(server, start_daemon):
    daemon = start_daemon()
    server.api("POST", "/api/agents", {"name": "coder", "provider": "command", "command": ["sh", "-c", AGENT_SCRIPT],
                                       **UNCONFINED})
    return daemon


@pytest.fixture
def signed_in_page(server):
    executable = _chromium()
    if executable is None:
        pytest.skip("no Chromium found: install chromium or set PREDICTORX_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        context = browser.new_context()
        context.set_default_timeout(30_000)
        page = context.new_page()
        page.goto(server.api("POST", "/api/login-link")["url"])
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(lambda url: "/login" not in url)
        yield page
        browser.close()


def test_github_from_branch_to_merged_in_the_browser(server, loop_env, forge_standin_factory, signed_in_page,  # noqa: F811
                                                      tmp_path):
    _flow(server, loop_env, forge_standin_factory("github"), tmp_path, signed_in_page, protected=True)


def test_the_same_flow_on_gitlab_merged_in_the_browser(server, loop_env, forge_standin_factory, signed_in_page,  # noqa: F811
                                                       tmp_path):
    _flow(server, loop_env, forge_standin_factory("gitlab"), tmp_path, signed_in_page)


def test_the_same_flow_on_forgejo_merged_with_the_cli(server, loop_env, forge_standin_factory, tmp_path):  # noqa: F811
    _flow(server, loop_env, forge_standin_factory("forgejo"), tmp_path, None)


def test_task_merge_and_discard_of_a_local_folder_without_a_forge_go_to_its_daemon(server, start_daemon, tmp_path):
    """`predictorx task merge|discard` of a task whose folder has no forge: the same commands,
    carried out in the person's folder by its daemon (service/forgepush.py, server/forgeasks.py)."""
    from .harness import make_repo

    daemon = start_daemon()
    folder = make_repo(tmp_path / "plain", {"README.md": "# plain\n"})
    project = server.api("POST", "/api/projects", {"title": "plain", "resources": [{
        "resource_type": "local_directory", "label": "plain",
        "resource_ref": {"local_path": str(folder), "daemon_id": daemon.id, "execution_mode": "worktree"}}]})
    server.api("POST", "/api/agents", {"name": "coder", "provider": "command", "command": ["sh", "-c", AGENT_SCRIPT],
                                       **UNCONFINED})

    def run(title: str) -> dict:
        issue = server.api("POST", "/api/issues", {"title": title, "project_id": project["id"], "assignee": "coder"})
        task = server.wait_task(server.runs(issue["number"])[0]["id"], timeout=90)
        assert task["status"] == "completed" and task["branch_name"], task
        return task

    first = run("merge me")
    assert server.api("GET", f"/api/tasks/{first['id']}/pr") == {}
    out = server.cli("task", "merge", first["id"])
    assert "merge" in out.stdout.lower() or "fast-forward" in out.stdout.lower(), out.stdout
    assert (folder / "runs" / "0.txt").read_text() == "run 0\n"

    second = run("throw me away")
    branch = second["branch_name"]
    assert branch in git(folder, "branch", "--list", branch)
    server.cli("task", "discard", second["id"])
    assert git(folder, "branch", "--list", branch).strip() == ""
    refused = server.cli("task", "merge", second["id"], check=False)
    assert refused.returncode != 0 and "already discarded" in refused.stderr


def test_where_the_forge_cannot_reach_the_server_the_server_polls(tmp_path, database_url, forge_standin_factory):  # noqa: F811
    """No webhook at all: the server's poller finds the review (and asks conditionally after)."""
    from .harness import Daemon, Server

    server = Server(tmp_path / "poll-home", database_url, PREDICTORX_FORGE_POLL_INTERVAL="1")
    daemon = None
    try:
        daemon = Daemon(server, tmp_path / "poll-daemon")
        server.api("POST", "/api/agents", {"name": "coder", "provider": "command",
                                           "command": ["sh", "-c", AGENT_SCRIPT], **UNCONFINED})
        loop = Loop(server, daemon, forge_standin_factory("github"), tmp_path)
        s, path = loop.s, loop.path
        issue = server.api("POST", "/api/issues", {"title": "Polled", "project_id": loop.project["id"],
                                                   "assignee": "coder"})
        first = server.wait_task(server.runs(issue["number"])[0]["id"], timeout=90)
        pr = wait_until(lambda: (p := loop.pr_of(first["id"])).get("number") and p, 60, 0.1, "the PR to open")
        s.submit_review(path, pr["number"], "changes_requested", body="Seen by polling.",
                        comments=[("runs/0.txt", 1, "Polled comment.")])
        follow = wait_until(lambda: (r := server.runs(issue["number"])) and len(r) > 1 and r[-1], 30, 0.2,
                            "the poller to queue the follow-up")
        assert follow["pull_request_id"] == pr["id"] and "Polled comment." in follow["prompt"]
        wait_until(lambda: any(c.status == 304 for c in s.calls), 30, 0.2, "a conditional poll answered 304")
    finally:
        if daemon is not None:
            daemon.stop()
        server.stop()
