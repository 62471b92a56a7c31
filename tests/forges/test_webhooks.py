"""Webhook verification and parsing per forge, on the forges' own example payloads
(tests/forges/fixtures/README.md says where each comes from)."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest

from predictorx.forges import registry
from predictorx.forges.base import WebhookRejected

FIXTURES = Path(__file__).parent / "fixtures"
SECRET = "It's a Secret to Everybody"


def payload(kind: str, name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / kind / f"{name}.json").read_text())


def body_of(data: dict[str, Any]) -> bytes:
    return json.dumps(data).encode()


def sig(body: bytes, secret: str = SECRET) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


# -- verification --------------------------------------------------------------------------------

def test_github_signature_from_githubs_docs() -> None:
    """The worked example in GitHub's "Validating webhook deliveries"."""
    github = registry.get("github")
    body = b"Hello, World!"
    good = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    github.verify_webhook({"X-Hub-Signature-256": good}, body, SECRET)
    github.verify_webhook({"x-hub-signature-256": good.upper().replace("SHA256=", "sha256=")}, body, SECRET)
    for bad in ({"X-Hub-Signature-256": good[:-1] + "0"}, {"X-Hub-Signature-256": good[7:]}, {},
                {"X-Hub-Signature": "sha1=" + "0" * 40}):
        with pytest.raises(WebhookRejected):
            github.verify_webhook(bad, body, SECRET)
    with pytest.raises(WebhookRejected):
        github.verify_webhook({"X-Hub-Signature-256": good}, body + b" ", SECRET)
    with pytest.raises(WebhookRejected):
        github.verify_webhook({"X-Hub-Signature-256": good}, body, "")  # no secret: nothing verifies


def test_gitlab_token() -> None:
    gitlab = registry.get("gitlab")
    gitlab.verify_webhook({"X-Gitlab-Token": SECRET}, b"{}", SECRET)
    for bad in ({"X-Gitlab-Token": SECRET + "x"}, {"X-Gitlab-Token": ""}, {}):
        with pytest.raises(WebhookRejected):
            gitlab.verify_webhook(bad, b"{}", SECRET)


def test_gitea_signature_is_bare_hex() -> None:
    gitea = registry.get("gitea")
    body = body_of(payload("gitea", "status"))
    gitea.verify_webhook({"X-Gitea-Signature": sig(body)}, body, SECRET)
    for bad in ({"X-Gitea-Signature": "sha256=" + sig(body)}, {"X-Gitea-Signature": sig(body, "other")},
                {"X-Forgejo-Signature": sig(body)}, {}):
        with pytest.raises(WebhookRejected):
            gitea.verify_webhook(bad, body, SECRET)


def test_forgejo_takes_its_own_header_or_giteas() -> None:
    forgejo = registry.get("forgejo")
    body = body_of(payload("gitea", "status"))
    forgejo.verify_webhook({"X-Forgejo-Signature": sig(body), "X-Gitea-Signature": sig(body)}, body, SECRET)
    forgejo.verify_webhook({"X-Forgejo-Signature": sig(body)}, body, SECRET)
    forgejo.verify_webhook({"X-Gitea-Signature": sig(body)}, body, SECRET)
    with pytest.raises(WebhookRejected):  # Forgejo's own header wins: a wrong one is not rescued
        forgejo.verify_webhook({"X-Forgejo-Signature": sig(body, "x"), "X-Gitea-Signature": sig(body)}, body, SECRET)


# -- GitHub --------------------------------------------------------------------------------------

def gh(event: str, name: str, data: dict[str, Any] | None = None, delivery: str = "d-1"):
    body = body_of(data if data is not None else payload("github", name))
    return registry.get("github").parse_webhook({"X-GitHub-Event": event, "X-GitHub-Delivery": delivery}, body)


def test_github_ping_and_pr_events() -> None:
    assert gh("ping", "ping").kind == "ping"
    opened = gh("pull_request", "pull_request.opened")
    data = payload("github", "pull_request.opened")
    assert opened.kind == "pr" and opened.delivery_id == "d-1"
    assert opened.repo_path == data["repository"]["full_name"]
    assert opened.pr_number == data["number"] and opened.pr is not None
    assert opened.head_branch == data["pull_request"]["head"]["ref"]
    assert opened.head_sha == data["pull_request"]["head"]["sha"]
    assert opened.raw_event == "pull_request.opened"
    assert gh("pull_request", "pull_request.converted_to_draft").pr.state == "draft"  # type: ignore[union-attr]
    assert gh("pull_request", "pull_request.closed").pr.state == "closed"  # type: ignore[union-attr]
    merged = payload("github", "pull_request.closed")
    merged["pull_request"].update(merged=True, merged_at="2019-05-15T15:20:40Z", merged_by={"login": "Codertocat"})
    pr = gh("pull_request", "", merged).pr
    assert pr is not None and pr.state == "merged" and pr.merged_by == "Codertocat"


def test_github_review_and_comments() -> None:
    review = gh("pull_request_review", "pull_request_review.submitted")
    data = payload("github", "pull_request_review.submitted")
    assert review.kind == "review" and review.review is not None
    assert review.review.state == "commented" and review.review.id == str(data["review"]["id"])
    changes = payload("github", "pull_request_review.submitted")
    changes["review"]["state"] = "changes_requested"
    assert gh("pull_request_review", "", changes).review.state == "changes_requested"  # type: ignore[union-attr]
    assert gh("pull_request_review", "pull_request_review.dismissed").review.state == "none"  # type: ignore[union-attr]

    inline = gh("pull_request_review_comment", "pull_request_review_comment.created")
    c = payload("github", "pull_request_review_comment.created")["comment"]
    assert inline.kind == "comment" and inline.comment is not None
    assert (inline.comment.path, inline.comment.body, inline.comment.author) == (c["path"], c["body"], c["user"]["login"])
    assert inline.comment.line == (c.get("line") or c.get("original_line"))

    on_issue = gh("issue_comment", "issue_comment.created")
    assert on_issue.kind == "other"  # a comment on an issue, not a pull request
    on_pr = payload("github", "issue_comment.created")
    on_pr["issue"]["pull_request"] = {"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"}
    event = gh("issue_comment", "", on_pr)
    assert event.kind == "comment" and event.pr_number == on_pr["issue"]["number"]


def test_github_checks() -> None:
    run = gh("check_run", "check_run.completed")
    data = payload("github", "check_run.completed")["check_run"]
    assert run.kind == "check" and run.check is not None and run.head_sha == data["head_sha"]
    assert run.check.name == data["name"]
    assert run.check.state == ("failure" if data["conclusion"] in ("failure", "timed_out", "cancelled") else "success")
    failed = payload("github", "check_run.completed")
    failed["check_run"].update(conclusion="failure", output={"title": "2 tests failed", "summary": "test_x: assert 1 == 2"})
    check = gh("check_run", "", failed).check
    assert check is not None and check.state == "failure" and "assert 1 == 2" in check.excerpt
    assert gh("check_suite", "check_suite.completed").kind == "check"
    status = gh("status", "status")
    sdata = payload("github", "status")
    assert status.kind == "check" and status.head_sha == sdata["sha"] and status.check.name == sdata["context"]  # type: ignore[union-attr]


def test_github_unknown_event_is_other_and_garbage_is_rejected() -> None:
    assert gh("star", "", {"action": "created", "repository": {"full_name": "a/b"}}).kind == "other"
    github = registry.get("github")
    with pytest.raises(WebhookRejected):
        github.parse_webhook({"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "x"}, b"not json")
    with pytest.raises(WebhookRejected):
        github.parse_webhook({"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "x"}, b'{"action": "opened"}')
    with pytest.raises(WebhookRejected):
        github.parse_webhook({"X-GitHub-Event": "ping"}, b"{}")  # no delivery id: no replay guard


# -- GitLab --------------------------------------------------------------------------------------

def gl(event: str, name: str, headers: dict[str, str] | None = None):
    body = body_of(payload("gitlab", name))
    return registry.get("gitlab").parse_webhook({"X-Gitlab-Event": event, **(headers or {})}, body), body


def test_gitlab_merge_request_and_delivery_ids() -> None:
    event, body = gl("Merge Request Hook", "merge_request", {"X-Gitlab-Event-UUID": "13792a34-cac6-4fda-95a8-c58e00a3954e"})
    assert event.kind == "pr" and event.delivery_id == "13792a34-cac6-4fda-95a8-c58e00a3954e"
    assert (event.repo_path, event.pr_number, event.head_branch) == ("gitlabhq/gitlab-test", 1, "ms-viewport")
    assert event.head_sha == "da1560886d4f094c3e6c9ef40349f7d38b5d27d7" and event.pr.state == "open"  # type: ignore[union-attr]
    without, _ = gl("Merge Request Hook", "merge_request")
    assert without.delivery_id == "sha256:" + hashlib.sha256(body).hexdigest()  # same body, same id


def test_gitlab_approval_is_a_review() -> None:
    data = payload("gitlab", "merge_request")
    data["object_attributes"]["action"] = "approved"
    event = registry.get("gitlab").parse_webhook({"X-Gitlab-Event": "Merge Request Hook"}, body_of(data))
    assert event.kind == "review" and event.review.state == "approved" and event.review.author == "root"  # type: ignore[union-attr]


def test_gitlab_note_pipeline_job() -> None:
    note, _ = gl("Note Hook", "note_merge_request")
    assert note.kind == "comment" and note.pr_number == 1 and note.comment is not None
    assert (note.comment.body, note.comment.author) == ("This MR needs work.", "root")
    assert note.repo_path == "gitlab-org/gitlab-test"
    pipeline, _ = gl("Pipeline Hook", "pipeline")
    assert pipeline.kind == "check" and pipeline.check.state == "failure" and pipeline.pr_number == 1  # type: ignore[union-attr]
    assert "test-image" in pipeline.check.excerpt  # type: ignore[union-attr]
    assert pipeline.head_sha == "bcbb5ec396a2c0f828686f14fac9b80b780504f2"
    job, _ = gl("Job Hook", "job")
    assert job.kind == "check" and job.check.name == "test" and job.check.state == "failure"  # type: ignore[union-attr]
    assert job.repo_path == "gitlab-org/gitlab-test"
    other = registry.get("gitlab").parse_webhook({"X-Gitlab-Event": "Push Hook"}, b'{"object_kind": "push"}')
    assert other.kind == "other"


# -- Gitea / Forgejo -----------------------------------------------------------------------------

def tea(kind: str, event: str, name: str, event_type: str = ""):
    prefix = "X-Forgejo" if kind == "forgejo" else "X-Gitea"
    headers = {f"{prefix}-Event": event, f"{prefix}-Delivery": "f6266f16-1bf3-46a5-9ea4-602e06ead473"}
    if event_type:
        headers[f"{prefix}-Event-Type"] = event_type
    return registry.get(kind).parse_webhook(headers, body_of(payload("gitea", name)))


@pytest.mark.parametrize("kind", ["gitea", "forgejo"])
def test_gitea_events(kind: str) -> None:
    opened = tea(kind, "pull_request", "pull_request.opened")
    assert opened.kind == "pr" and opened.pr.state == "draft" and opened.pr_number == 2  # type: ignore[union-attr]
    assert opened.delivery_id == "f6266f16-1bf3-46a5-9ea4-602e06ead473" and opened.repo_path == "gitea/webhooks"
    merged = tea(kind, "pull_request", "pull_request.closed_merged")
    assert merged.pr.state == "merged" and merged.pr.merged_by == "gitea"  # type: ignore[union-attr]
    rejected = tea(kind, "pull_request_rejected", "pull_request_rejected", "pull_request_review_rejected")
    assert rejected.kind == "review" and rejected.review.state == "changes_requested"  # type: ignore[union-attr]
    assert rejected.review.body == "Please add a test." and rejected.review.author == "reviewer"  # type: ignore[union-attr]
    approved = tea(kind, "pull_request_approved", "pull_request_approved")
    assert approved.review.state == "approved"  # type: ignore[union-attr]
    inline = tea(kind, "pull_request_comment", "pull_request_comment", "pull_request_review_comment")
    assert inline.kind == "comment" and inline.comment.body == "@predictorx-bot rename x"  # type: ignore[union-attr]
    assert inline.comment.author == "reviewer" and inline.pr_number == 2  # type: ignore[union-attr]
    comment = tea(kind, "issue_comment", "issue_comment.created", "pull_request_comment")
    assert comment.kind == "comment" and comment.pr_number == 2 and "@predictorx-bot" in comment.comment.body  # type: ignore[union-attr]
    status = tea(kind, "status", "status")
    assert status.kind == "check" and status.check.state == "failure" and status.check.name == "ci/build"  # type: ignore[union-attr]
    assert status.head_sha == payload("gitea", "status")["sha"]


def test_forgejo_reads_giteas_headers_too() -> None:
    body = body_of(payload("gitea", "status"))
    event = registry.get("forgejo").parse_webhook({"X-Gitea-Event": "status", "X-Gitea-Delivery": "abc"}, body)
    assert event.kind == "check" and event.delivery_id == "abc"
    with pytest.raises(WebhookRejected):
        registry.get("gitea").parse_webhook({"X-Forgejo-Event": "status", "X-Forgejo-Delivery": "abc"}, body)
