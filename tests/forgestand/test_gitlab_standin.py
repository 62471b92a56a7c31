"""The GitLab stand-in itself, held to the v4 subset derived from GitLab's API docs."""

from __future__ import annotations

from urllib.parse import quote

import httpx2 as httpx

from forgestand.webhooks import signature_ok

from .test_github_standin import push_branch, run_git


def api(standin, method: str, path: str, **kw) -> httpx.Response:
    headers = {"PRIVATE-TOKEN": standin.token, **kw.pop("headers", {})}
    return httpx.request(method, standin.api_url + path, headers=headers, timeout=10, **kw)


def test_a_merge_request_from_push_to_merge(gitlab_standin, tmp_path):
    s = gitlab_standin
    repo = s.create_repo("acme/tools/widget")
    project = "/projects/" + quote("acme/tools/widget", safe="")
    assert api(s, "GET", "/user").json()["username"] == s.login
    info = api(s, "GET", project).json()
    assert info["http_url_to_repo"] == repo.clone_url and info["web_url"] == repo.web_url
    assert api(s, "GET", f"/projects/{info['id']}").json()["path_with_namespace"] == "acme/tools/widget"
    sha = push_branch(s, "acme/tools/widget", tmp_path / "w", "agent/issue-1", {"a.txt": "one\n"})
    assert api(s, "GET", f"{project}/merge_requests", params={"source_branch": "agent/issue-1", "state": "all"}).json() == []
    created = api(s, "POST", f"{project}/merge_requests", json={
        "source_branch": "agent/issue-1", "target_branch": "main", "title": "Draft: Fix it", "description": "b"})
    assert created.status_code == 201, created.text
    mr = created.json()
    assert mr["draft"] is True and mr["sha"] == sha
    iid = mr["iid"]
    listed = api(s, "GET", f"{project}/merge_requests", params={"source_branch": "agent/issue-1", "state": "all"}).json()
    assert [m["iid"] for m in listed] == [iid]

    s.submit_review("acme/tools/widget", iid, "changes_requested", "please", comments=[("a.txt", 1, "say two")])
    assert api(s, "GET", f"{project}/merge_requests/{iid}/approvals").json()["approved"] is False
    assert api(s, "GET", f"{project}/merge_requests/{iid}/reviewers").json()[0]["state"] == "requested_changes"
    notes = [n for d in api(s, "GET", f"{project}/merge_requests/{iid}/discussions").json() for n in d["notes"]]
    diff = [n for n in notes if n["type"] == "DiffNote"][0]
    assert (diff["position"]["new_path"], diff["position"]["new_line"], diff["body"]) == ("a.txt", 1, "say two")

    run = s.set_check("acme/tools/widget", sha, "test", "failure", log="boom at line 3")
    assert api(s, "GET", f"{project}/repository/commits/{sha}/statuses").json()[0]["status"] == "failed"
    pipeline = api(s, "GET", f"{project}/merge_requests/{iid}/pipelines").json()[0]
    assert pipeline["status"] == "failed"
    job = api(s, "GET", f"{project}/pipelines/{pipeline['id']}/jobs").json()[0]
    assert job["id"] == run.id
    log = api(s, "GET", f"{project}/jobs/{job['id']}/trace")
    assert log.text == "boom at line 3" and log.headers["content-type"].startswith("text/plain")

    s.protect_branch("acme/tools/widget", "main", ["test"])
    api(s, "PUT", f"{project}/merge_requests/{iid}", json={"title": "Fix it"})
    assert api(s, "GET", f"{project}/merge_requests/{iid}").json()["detailed_merge_status"] == "requested_changes"
    refused = api(s, "PUT", f"{project}/merge_requests/{iid}/merge", json={"squash": True})
    assert refused.status_code == 405 and refused.json()["message"] == "405 Method Not Allowed"
    s.set_check("acme/tools/widget", sha, "test", "success")
    merged = api(s, "PUT", f"{project}/merge_requests/{iid}/merge", json={"squash": True, "sha": sha})
    assert merged.status_code == 200, merged.text
    assert merged.json()["state"] == "merged"
    assert merged.json()["squash_commit_sha"] == s.branch_head("acme/tools/widget", "main")
    assert run_git(repo.bare, "cat-file", "-e", "main:a.txt").returncode == 0
    branch = quote("agent/issue-1", safe="")
    assert api(s, "DELETE", f"{project}/repository/branches/{branch}").status_code == 204
    assert s.branch_head("acme/tools/widget", "agent/issue-1") is None


def test_wrong_token_and_invalid_body(gitlab_standin):
    s = gitlab_standin
    s.create_repo("acme/w")
    resp = httpx.get(s.api_url + "/user", headers={"PRIVATE-TOKEN": "nope"}, timeout=10)
    assert resp.status_code == 401 and resp.json() == {"message": "401 Unauthorized"}
    assert httpx.get(s.api_url + "/user", headers={"Authorization": f"Bearer {s.token}"}, timeout=10).status_code == 200
    bad = api(s, "POST", "/projects/acme%2Fw/merge_requests", json={"source_branch": "x", "target_branch": "main"})
    assert bad.status_code == 400 and "title" in bad.json()["error"]
    assert len(s.violations) == 1
    s.violations.clear()


def test_webhooks_carry_the_token_and_a_uuid(gitlab_standin):
    s = gitlab_standin
    s.create_repo("acme/h")
    sha = s.commit_on_server("acme/h", "feat", {"f": "1"})
    pr = s.open_pr("acme/h", "feat")
    s.submit_review("acme/h", pr.number, "changes_requested", "no", comments=[("f", 1, "why")])
    s.comment("acme/h", pr.number, "@predictorx-bot please")
    s.set_check("acme/h", sha, "ci", "failure", "log")
    kinds = {}
    for event in ("pr", "review", "review_comment", "comment", "check"):
        delivery = s.webhook(event, "acme/h", pr.number)
        headers = delivery.headers("gitlab", s.webhook_secret)
        assert signature_ok("gitlab", headers, delivery.body, s.webhook_secret)
        assert not signature_ok("gitlab", delivery.headers("gitlab", s.webhook_secret, tamper=True), delivery.body,
                                s.webhook_secret)
        assert headers["X-Gitlab-Event-UUID"] == delivery.delivery_id
        kinds[event] = (headers["X-Gitlab-Event"], delivery.payload["object_kind"])
    assert kinds["check"] == ("Pipeline Hook", "pipeline") and kinds["comment"] == ("Note Hook", "note")
    assert kinds["review"] == ("Merge Request Hook", "merge_request")
