"""The Gitea and Forgejo stand-in itself, held to Gitea's swagger.v1.json."""

from __future__ import annotations

import httpx2 as httpx
import pytest

from forgestand.webhooks import signature_ok

from .test_github_standin import push_branch, run_git


def api(standin, method: str, path: str, **kw) -> httpx.Response:
    headers = {"Authorization": f"token {standin.token}", **kw.pop("headers", {})}
    return httpx.request(method, standin.api_url + path, headers=headers, timeout=10, **kw)


@pytest.fixture(params=["gitea", "forgejo"])
def standin(request, forge_standin_factory):
    return forge_standin_factory(request.param)


def test_a_pull_request_from_push_to_merge(standin, tmp_path):
    s = standin
    repo = s.create_repo("acme/widget")
    assert api(s, "GET", "/user").json()["login"] == s.login
    info = api(s, "GET", "/repos/acme/widget").json()
    assert info["clone_url"] == repo.clone_url and info["html_url"] == repo.web_url
    sha = push_branch(s, "acme/widget", tmp_path / "w", "agent/issue-1", {"a.txt": "one\n"})
    assert api(s, "GET", "/repos/acme/widget/pulls/main/agent/issue-1").status_code == 404
    created = api(s, "POST", "/repos/acme/widget/pulls",
                  json={"title": "WIP: Fix it", "head": "agent/issue-1", "base": "main", "body": "b"})
    assert created.status_code == 201, created.text
    assert created.json()["draft"] is True
    number = created.json()["number"]
    assert api(s, "GET", "/repos/acme/widget/pulls/main/agent/issue-1").json()["number"] == number
    assert [p["number"] for p in api(s, "GET", "/repos/acme/widget/pulls", params={"state": "all"}).json()] == [number]

    s.submit_review("acme/widget", number, "changes_requested", "please", comments=[("a.txt", 1, "say two")])
    reviews = api(s, "GET", f"/repos/acme/widget/pulls/{number}/reviews").json()
    assert reviews[0]["state"] == "REQUEST_CHANGES"
    comments = api(s, "GET", f"/repos/acme/widget/pulls/{number}/reviews/{reviews[0]['id']}/comments").json()
    assert (comments[0]["path"], comments[0]["position"], comments[0]["body"]) == ("a.txt", 1, "say two")

    s.set_check("acme/widget", sha, "ci", "failure", log="boom")
    assert api(s, "GET", f"/repos/acme/widget/commits/{sha}/status").json()["state"] == "failure"
    wip = api(s, "POST", f"/repos/acme/widget/pulls/{number}/merge", json={"Do": "merge"})
    assert wip.status_code == 405 and wip.json()["message"] == "Work in progress PRs cannot be merged"
    assert api(s, "PATCH", f"/repos/acme/widget/pulls/{number}", json={"title": "Fix it"}).json()["draft"] is False
    s.protect_branch("acme/widget", "main", ["ci"])
    refused = api(s, "POST", f"/repos/acme/widget/pulls/{number}/merge", json={"Do": "squash"})
    assert refused.status_code == 405
    assert refused.json()["message"] == "not allowed to merge [reason: Not all required status checks successful]"
    s.set_check("acme/widget", sha, "ci", "success")
    assert api(s, "POST", f"/repos/acme/widget/pulls/{number}/merge", json={"Do": "squash"}).status_code == 200
    pr = api(s, "GET", f"/repos/acme/widget/pulls/{number}").json()
    assert pr["merged"] is True and pr["merge_commit_sha"] == s.branch_head("acme/widget", "main")
    assert run_git(repo.bare, "cat-file", "-e", "main:a.txt").returncode == 0
    assert api(s, "DELETE", "/repos/acme/widget/branches/agent%2Fissue-1").status_code == 204
    assert s.branch_head("acme/widget", "agent/issue-1") is None


def test_wrong_token_and_invalid_body(standin):
    s = standin
    s.create_repo("acme/w")
    assert httpx.get(s.api_url + "/user", headers={"Authorization": "token nope"}, timeout=10).status_code == 401
    bad = api(s, "POST", "/repos/acme/w/pulls/1/merge", json={"Do": "octopus"})
    assert bad.status_code == 422 and len(s.violations) == 1 and "octopus" in s.violations[0]
    s.violations.clear()


@pytest.mark.parametrize("event", ["pr", "review", "review_comment", "comment", "check", "ping"])
def test_webhooks_are_signed_like_the_forge(standin, event):
    s = standin
    s.create_repo("acme/h")
    sha = s.commit_on_server("acme/h", "feat", {"f": "1"})
    pr = s.open_pr("acme/h", "feat")
    s.submit_review("acme/h", pr.number, "changes_requested", "no", comments=[("f", 1, "why")])
    s.comment("acme/h", pr.number, "@predictorx-bot please")
    s.set_check("acme/h", sha, "ci", "failure", "log")
    delivery = s.webhook(event, "acme/h", pr.number, name="ci")
    headers = delivery.headers(s.kind, s.webhook_secret)
    assert signature_ok(s.kind, headers, delivery.body, s.webhook_secret)
    assert signature_ok("gitea", headers, delivery.body, s.webhook_secret)  # Forgejo sends both
    assert not signature_ok(s.kind, delivery.headers(s.kind, s.webhook_secret, tamper=True), delivery.body, s.webhook_secret)
    if event == "review":  # as Gitea sends them: the event's short name, and its type
        assert headers["X-Gitea-Event"] == "pull_request_rejected"
        assert headers["X-Gitea-Event-Type"] == "pull_request_review_rejected"
    if event == "review_comment":
        assert (headers["X-Gitea-Event"], headers["X-Gitea-Event-Type"]) == ("pull_request_comment",
                                                                              "pull_request_review_comment")
    if event == "comment":
        assert (headers["X-Gitea-Event"], headers["X-Gitea-Event-Type"]) == ("issue_comment", "pull_request_comment")
