"""One drive of every `Forge` method against a forge stand-in (tests/forgestand), shared by the
per-forge client tests. The stand-in validates every request and answer against the forge's own
API description; a violation fails the test at teardown."""

from __future__ import annotations

import socket
from dataclasses import replace
from typing import Any

import pytest

from predictorx.forges import registry
from predictorx.forges.base import (
    Connection,
    Forge,
    ForgeRefused,
    ForgeUnavailable,
    PullRequest,
    RepoRef,
    WebhookRejected,
)

BRANCH = "agent/issue-7"


def client_for(standin: Any) -> tuple[Forge, Connection]:
    forge = registry.get(standin.kind)
    conn = standin.connection()
    assert forge.default_api_url(standin.base_url) == standin.api_url  # self-hosted layout
    return forge, conn


def connect_and_read_the_repository(standin: Any, path: str) -> tuple[Forge, Connection, RepoRef]:
    forge, conn = client_for(standin)
    repo = standin.create_repo(path)
    assert forge.whoami(conn) == standin.login
    ref = forge.repo_from_url(standin.base_url, repo.clone_url)
    assert ref == RepoRef(path)
    info = forge.repo(conn, ref)
    assert info.default_branch == "main" and info.clone_url == repo.clone_url
    assert set(info.merge_methods) <= {"merge", "squash", "rebase"} and info.merge_methods
    return forge, conn, ref


def a_bad_token_is_refused_with_the_forges_words(standin: Any) -> None:
    forge, conn = client_for(standin)
    with pytest.raises(ForgeRefused) as refused:
        forge.whoami(replace(conn, token="not-the-token"))
    assert refused.value.status == 401
    assert "not-the-token" not in str(refused.value)


def an_unreachable_forge_is_unavailable(standin: Any) -> None:
    forge, conn = client_for(standin)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ForgeUnavailable):
        forge.whoami(replace(conn, api_url=f"http://127.0.0.1:{port}/api"))


def same(a: PullRequest | None, b: PullRequest) -> bool:
    return a is not None and replace(a, mergeable="") == replace(b, mergeable="")


def open_a_draft_and_find_it(standin: Any, forge: Forge, conn: Connection, ref: RepoRef) -> PullRequest:
    sha = standin.commit_on_server(ref.path, BRANCH, {"feature.py": "def f():\n    return 1\n"})
    assert forge.find_pr(conn, ref, BRANCH) is None
    pr = forge.open_pr(conn, ref, head_branch=BRANCH, base_branch="main", title="Make f return 1",
                       body="From issue 7", draft=True)
    assert pr.state == "draft" and pr.head_branch == BRANCH and pr.base_branch == "main" and pr.head_sha == sha
    assert pr.url.startswith(standin.base_url)
    # A list answer may lack the forge's mergeability word (GitHub computes it per PR): compare the rest.
    assert same(forge.find_pr(conn, ref, BRANCH), pr)
    assert same(forge.get_pr(conn, ref, pr.number), pr)
    assert standin.pr(ref.path, pr.number).head == BRANCH
    return pr


def poll_with_validators(standin: Any, forge: Forge, conn: Connection, ref: RepoRef, pr: PullRequest) -> None:
    """A conditional GET answers "unchanged" without the PR, and the PR once it changed."""
    got, validators = forge.get_pr_if_changed(conn, ref, pr.number, {})
    assert same(got, pr) and validators
    again, kept = forge.get_pr_if_changed(conn, ref, pr.number, validators)
    assert again is None and kept == validators
    new_sha = standin.commit_on_server(ref.path, BRANCH, {"feature.py": "def f():\n    return 2\n"})
    changed, newer = forge.get_pr_if_changed(conn, ref, pr.number, validators)
    assert changed is not None and changed.head_sha == new_sha and newer != validators


def reviews_and_comments_come_back(standin: Any, forge: Forge, conn: Connection, ref: RepoRef, number: int) -> None:
    standin.submit_review(ref.path, number, "changes_requested", "Not yet.",
                          comments=[("feature.py", 2, "return 2, please")], author="reviewer")
    reviews = forge.reviews(conn, ref, number)
    asked = [r for r in reviews if r.state == "changes_requested"]
    assert len(asked) == 1 and asked[0].author == "reviewer"
    assert [(c.path, c.line, c.body) for c in asked[0].comments] == [("feature.py", 2, "return 2, please")]
    standin.comment(ref.path, number, "@predictorx-bot also add a test", author="reviewer")
    said = forge.comments(conn, ref, number)
    assert [c.body for c in said][-1] == "@predictorx-bot also add a test"
    assert said[-1].author == "reviewer" and said[-1].id and said[-1].created_at
    assert forge.comments(conn, ref, number, since=said[-1].created_at) == []


def checks_come_back(standin: Any, forge: Forge, conn: Connection, ref: RepoRef, sha: str) -> None:
    standin.set_check(ref.path, sha, "ci", "failure", log="test_f failed: assert 1 == 2")
    checks = forge.checks(conn, ref, sha)
    failed = [c for c in checks if c.state == "failure"]
    assert failed and all(c.name == "ci" for c in failed)
    again, validators = forge.checks_if_changed(conn, ref, sha, {})
    assert again == checks and validators
    assert forge.checks_if_changed(conn, ref, sha, validators) == (None, validators)  # unchanged
    standin.set_check(ref.path, sha, "ci", "success")
    changed, _ = forge.checks_if_changed(conn, ref, sha, validators)
    assert changed is not None and {c.state for c in changed} == {"success"}
    assert {c.state for c in forge.checks(conn, ref, sha)} == {"success"}


def refused_then_merged(standin: Any, forge: Forge, conn: Connection, ref: RepoRef, pr: PullRequest) -> None:
    """Forges refuse to merge a draft, so it leaves draft first; then a failing required check
    refuses the merge with the forge's reason, then a green one merges."""
    standin.protect_branch(ref.path, "main", ["ci"])
    draft = forge.get_pr(conn, ref, pr.number)
    assert draft.state == "draft"
    with pytest.raises(ForgeRefused):
        forge.merge(conn, ref, pr.number, method=forge.repo(conn, ref).merge_methods[0], head_sha=draft.head_sha)
    ready = forge.mark_ready(conn, ref, pr.number)
    assert ready.state == "open" and not standin.pr(ref.path, pr.number).draft
    assert same(forge.mark_ready(conn, ref, pr.number), ready)  # already ready: unchanged
    current = forge.get_pr(conn, ref, pr.number)
    standin.set_check(ref.path, current.head_sha, "ci", "failure", log="boom")
    method = forge.repo(conn, ref).merge_methods[0]
    with pytest.raises(ForgeRefused) as refused:
        forge.merge(conn, ref, pr.number, method=method, head_sha=current.head_sha)
    assert refused.value.status >= 400 and str(refused.value)
    standin.set_check(ref.path, current.head_sha, "ci", "success")
    merged = forge.merge(conn, ref, pr.number, method=method, head_sha=current.head_sha)
    assert merged.sha == standin.branch_head(ref.path, "main") and merged.method == method
    after = forge.get_pr(conn, ref, pr.number)
    assert after.state == "merged"
    forge.delete_branch(conn, ref, BRANCH)
    assert standin.branch_head(ref.path, BRANCH) is None
    forge.delete_branch(conn, ref, BRANCH)  # already gone: not an error


def a_moved_head_is_refused_and_close_closes(standin: Any, forge: Forge, conn: Connection, ref: RepoRef) -> None:
    standin.commit_on_server(ref.path, "agent/other", {"other.txt": "1\n"})
    pr = forge.open_pr(conn, ref, head_branch="agent/other", base_branch="main", title="Other", body="", draft=False)
    assert pr.state == "open"
    standin.commit_on_server(ref.path, "agent/other", {"other.txt": "2\n"})
    with pytest.raises(ForgeRefused):
        forge.merge(conn, ref, pr.number, method=forge.repo(conn, ref).merge_methods[0], head_sha=pr.head_sha)
    forge.close_pr(conn, ref, pr.number)
    assert forge.get_pr(conn, ref, pr.number).state == "closed"
    assert standin.pr(ref.path, pr.number).state == "closed"


def webhooks_verify_and_parse(standin: Any, forge: Forge, ref: RepoRef, number: int) -> None:
    expected = {"pr": "pr", "review": "review", "review_comment": "comment", "comment": "comment", "check": "check"}
    for event, kind in expected.items():
        delivery = standin.webhook(event, ref.path, number, name="ci")
        headers = delivery.headers(standin.kind, standin.webhook_secret)
        forge.verify_webhook(headers, delivery.body, standin.webhook_secret)
        parsed = forge.parse_webhook(headers, delivery.body)
        assert parsed.kind == kind, (event, parsed)
        assert parsed.delivery_id == delivery.delivery_id
        assert parsed.repo_path in (ref.path, "")
        if kind != "check":
            assert parsed.pr_number == number
        if event == "review_comment":  # an inline comment says where (Gitea's payload says only what)
            assert parsed.comment is not None and parsed.comment.body == "return 2, please"
            if standin.kind in ("github", "gitlab"):
                assert (parsed.comment.path, parsed.comment.line) == ("feature.py", 2)
        if event == "review":
            assert parsed.review is not None and parsed.review.state == "changes_requested"
            assert parsed.review.author == "reviewer"
        if event == "check":
            assert parsed.check is not None and parsed.check.state in ("failure", "success", "pending")
        with pytest.raises(WebhookRejected):
            forge.verify_webhook(delivery.headers(standin.kind, standin.webhook_secret, tamper=True),
                                 delivery.body, standin.webhook_secret)


def write_access_is_read(standin: Any, forge: Forge, conn: Connection, ref: RepoRef) -> None:
    """Who may send the agent work: the owner, the token's account and writers (maintain
    counts) yes; triage, read and unknown accounts no."""
    from forgestand.state import user_id_of

    def may(login: str) -> bool:
        uid = standin.user_id if login == standin.login else user_id_of(login)
        return forge.author_may_write(conn, ref, login, str(uid))

    standin.set_permission(ref.path, "wendy", "write")
    standin.set_permission(ref.path, "max", "maintain")
    standin.set_permission(ref.path, "tia", "triage")
    assert may(standin.login) and may("reviewer") and may("wendy") and may("max")
    assert not may("tia") and not may("outsider")
    standin.set_permission(ref.path, "wendy", "read")  # a collaborator demoted
    assert not may("wendy")
