"""The GitHub stand-in itself: a whole PR flow over real git and the API, held to @octokit/openapi."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx2 as httpx
import pytest

from forgestand.webhooks import signature_ok


def run_git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def push_branch(standin, path: str, work: Path, branch: str, files: dict[str, str]) -> str:
    """Clone over smart HTTP with the token, commit, push the branch; the pushed sha."""
    assert run_git(work.parent, "clone", "-q", standin.authed_url(path), str(work)).returncode == 0
    run_git(work, "checkout", "-q", "-b", branch)
    for name, text in files.items():
        (work / name).write_text(text)
    run_git(work, "add", "-A")
    run_git(work, "commit", "-q", "-m", f"work on {branch}")
    done = run_git(work, "push", "-q", "origin", branch)
    assert done.returncode == 0, done.stderr
    return run_git(work, "rev-parse", "HEAD").stdout.strip()


def api(standin, method: str, path: str, **kw) -> httpx.Response:
    headers = {"Authorization": f"Bearer {standin.token}", "Accept": "application/vnd.github+json", **kw.pop("headers", {})}
    return httpx.request(method, standin.api_url + path, headers=headers, timeout=10, **kw)


def test_a_pull_request_from_push_to_merge(github_standin, tmp_path):
    s = github_standin
    repo = s.create_repo("acme/widget")
    assert api(s, "GET", "/user").json()["login"] == s.login
    info = api(s, "GET", "/repos/acme/widget").json()
    assert info["clone_url"] == repo.clone_url and info["default_branch"] == "main"
    assert info["html_url"].startswith(s.base_url)
    sha = push_branch(s, "acme/widget", tmp_path / "w", "agent/issue-1", {"a.txt": "one\n"})
    assert s.branch_head("acme/widget", "agent/issue-1") == sha

    assert api(s, "GET", "/repos/acme/widget/pulls", params={"head": "acme:agent/issue-1", "state": "all"}).json() == []
    created = api(s, "POST", "/repos/acme/widget/pulls",
                  json={"title": "Fix it", "head": "agent/issue-1", "base": "main", "body": "b", "draft": True})
    assert created.status_code == 201, created.text
    number = created.json()["number"]
    listed = api(s, "GET", "/repos/acme/widget/pulls", params={"head": "acme:agent/issue-1", "state": "all"}).json()
    assert [p["number"] for p in listed] == [number] and listed[0]["head"]["sha"] == sha
    assert api(s, "GET", "/repos/acme/widget/pulls", params={"head": "acme:other", "state": "all"}).json() == []
    # as on GitHub, a head without its owner is ignored: everything comes back
    assert len(api(s, "GET", "/repos/acme/widget/pulls", params={"head": "other", "state": "all"}).json()) == 1

    s.submit_review("acme/widget", number, "changes_requested", "please", comments=[("a.txt", 1, "say two")])
    reviews = api(s, "GET", f"/repos/acme/widget/pulls/{number}/reviews").json()
    assert reviews[0]["state"] == "CHANGES_REQUESTED"
    comments = api(s, "GET", f"/repos/acme/widget/pulls/{number}/reviews/{reviews[0]['id']}/comments").json()
    assert (comments[0]["path"], comments[0]["line"], comments[0]["body"]) == ("a.txt", 1, "say two")

    s.set_check("acme/widget", sha, "ci", "failure", log="boom at line 3")
    runs = api(s, "GET", f"/repos/acme/widget/commits/{sha}/check-runs").json()["check_runs"]
    assert runs[0]["conclusion"] == "failure" and "boom" in runs[0]["output"]["text"]
    assert api(s, "GET", f"/repos/acme/widget/commits/{sha}/status").json()["state"] == "failure"

    draft = api(s, "PUT", f"/repos/acme/widget/pulls/{number}/merge", json={"merge_method": "merge"})
    assert draft.status_code == 405 and draft.json()["message"] == "Pull Request is still a draft"
    ready = httpx.post(s.base_url + "/api/graphql", headers={"Authorization": f"bearer {s.token}"}, timeout=10, json={
        "query": "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }",
        "variables": {"id": created.json()["node_id"]}})
    assert ready.json() == {"data": {"markPullRequestReadyForReview": {"pullRequest": {
        "isDraft": False, "id": created.json()["node_id"], "number": number}}}}
    assert api(s, "GET", f"/repos/acme/widget/pulls/{number}").json()["draft"] is False

    s.protect_branch("acme/widget", "main", ["ci"])
    refused = api(s, "PUT", f"/repos/acme/widget/pulls/{number}/merge", json={"merge_method": "squash"})
    assert refused.status_code == 405 and refused.json()["message"] == 'Required status check "ci" is expected.'
    s.set_check("acme/widget", sha, "ci", "success")
    merged = api(s, "PUT", f"/repos/acme/widget/pulls/{number}/merge", json={"merge_method": "merge", "sha": sha})
    assert merged.status_code == 200, merged.text
    head = s.branch_head("acme/widget", "main")
    assert head == merged.json()["sha"]
    parents = run_git(repo.bare, "rev-list", "--parents", "-n", "1", head).stdout.split()
    assert parents[2] == sha  # a real merge commit with the branch as second parent
    assert api(s, "GET", f"/repos/acme/widget/pulls/{number}").json()["merged"] is True
    assert api(s, "DELETE", "/repos/acme/widget/git/refs/heads/agent/issue-1").status_code == 204
    assert s.branch_head("acme/widget", "agent/issue-1") is None
    gone = api(s, "DELETE", "/repos/acme/widget/git/refs/heads/agent/issue-1")  # GitHub's answer, no violation
    assert gone.status_code == 422 and gone.json()["message"] == "Reference does not exist"
    # the stand-in's own logs (nginx, fcgiwrap) never hold the token a push carried
    logs = [p for p in s.root.rglob("*") if p.is_file() and p.suffix in (".log", ".stderr")]
    assert logs and not [p for p in logs if s.token in p.read_text(errors="replace")]


def test_squash_and_rebase_are_real_git(github_standin):
    s = github_standin
    s.create_repo("acme/r")
    for method in ("squash", "rebase"):
        s.commit_on_server("acme/r", f"b-{method}", {f"{method}.txt": "x\n"})
        pr = s.open_pr("acme/r", f"b-{method}")
        s.commit_on_server("acme/r", "main", {f"main-{method}.txt": "y\n"})
        resp = api(s, "PUT", f"/repos/acme/r/pulls/{pr.number}/merge", json={"merge_method": method})
        assert resp.status_code == 200, resp.text
        parents = run_git(s.repo("acme/r").bare, "rev-list", "--parents", "-n", "1", "main").stdout.split()
        assert len(parents) == 2  # one parent: squashed or replayed
        assert run_git(s.repo("acme/r").bare, "cat-file", "-e", f"main:{method}.txt").returncode == 0


def test_an_invalid_request_is_a_violation_and_the_forges_422(github_standin):
    s = github_standin
    s.create_repo("acme/w")
    bad = api(s, "POST", "/repos/acme/w/pulls", json={"title": "x", "head": "b", "base": "main", "draft": "yes"})
    assert bad.status_code == 422 and bad.json()["message"] == "Validation Failed"
    unknown = api(s, "GET", "/repos/acme/w/no-such-thing")
    assert unknown.status_code == 404
    typo = api(s, "GET", "/repos/acme/w/pulls", params={"haed": "acme:b"})
    assert typo.status_code == 422
    assert len(s.violations) == 3 and "draft" in s.violations[0] and "haed" in s.violations[2]
    s.violations.clear()
    misspelt = api(s, "PUT", "/repos/acme/w/pulls/1/merge", json={"merge_methd": "squash"})
    assert misspelt.status_code == 422 and s.violations == [
        "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge (pulls/merge) body: field 'merge_methd' is not in "
        "GitHub's REST description (@octokit/openapi)"]
    s.violations.clear()


def test_a_wrong_token_is_refused_on_the_api_and_on_git(github_standin, tmp_path):
    s = github_standin
    repo = s.create_repo("acme/secret")
    resp = httpx.get(s.api_url + "/user", headers={"Authorization": "token nope"}, timeout=10)
    assert resp.status_code == 401 and resp.json()["message"] == "Bad credentials"
    wrong = repo.clone_url.replace("http://", "http://x-access-token:nope@")
    done = run_git(tmp_path, "clone", "-q", wrong, str(tmp_path / "c"))
    assert done.returncode != 0 and ("401" in done.stderr or "Authentication failed" in done.stderr)
    assert ("/acme/secret.git/info/refs?service=git-upload-pack", 401) in s.git_requests
    assert run_git(tmp_path, "clone", "-q", s.authed_url("acme/secret"), str(tmp_path / "ok")).returncode == 0
    # a push with a wrong credential is refused too; nothing reaches the bare repository
    work = tmp_path / "ok"
    run_git(work, "checkout", "-q", "-b", "sneaky")
    (work / "x").write_text("x")
    run_git(work, "add", "x")
    run_git(work, "commit", "-q", "-m", "x")
    pushed = run_git(work, "push", "-q", wrong, "sneaky")
    assert pushed.returncode != 0 and s.branch_head("acme/secret", "sneaky") is None
    assert ("/acme/secret.git/info/refs?service=git-receive-pack", 401) in s.git_requests
    assert run_git(work, "push", "-q", "origin", "sneaky").returncode == 0
    assert s.branch_head("acme/secret", "sneaky") is not None


def test_conditional_get_answers_304_and_is_counted(github_standin):
    s = github_standin
    s.create_repo("acme/e")
    first = api(s, "GET", "/repos/acme/e/pulls", params={"state": "all"})
    again = api(s, "GET", "/repos/acme/e/pulls", params={"state": "all"}, headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    s.commit_on_server("acme/e", "x", {"x": "1"})
    s.open_pr("acme/e", "x")
    changed = api(s, "GET", "/repos/acme/e/pulls", params={"state": "all"}, headers={"If-None-Match": first.headers["etag"]})
    assert changed.status_code == 200 and len(changed.json()) == 1
    assert s.count("GET", "/pulls") == 3


@pytest.mark.parametrize("event", ["pr", "review", "review_comment", "comment", "check", "status", "ping"])
def test_webhooks_are_schema_valid_and_signed(github_standin, event):
    s = github_standin
    s.create_repo("acme/h")
    sha = s.commit_on_server("acme/h", "feat", {"f": "1"})
    pr = s.open_pr("acme/h", "feat")
    s.submit_review("acme/h", pr.number, "changes_requested", "no", comments=[("f", 1, "why")])
    s.comment("acme/h", pr.number, "@predictorx-bot please")
    s.set_check("acme/h", sha, "ci", "failure", "log")
    delivery = s.webhook(event, "acme/h", pr.number, name="ci")
    headers = delivery.headers("github", s.webhook_secret)
    assert signature_ok("github", headers, delivery.body, s.webhook_secret)
    assert not signature_ok("github", delivery.headers("github", s.webhook_secret, tamper=True), delivery.body, s.webhook_secret)
    assert headers["X-GitHub-Delivery"] == delivery.delivery_id and headers["X-GitHub-Event"] == delivery.event
