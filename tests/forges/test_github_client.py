"""The GitHub client, every method, against the GitHub stand-in (requests and answers held to
@octokit/openapi by the stand-in)."""

from __future__ import annotations

from predictorx.forges.base import ForgeRefused

from . import clientflow as flow


def test_the_whole_pull_request_life(github_standin) -> None:
    s = github_standin
    forge, conn, ref = flow.connect_and_read_the_repository(s, "acme/widget")
    pr = flow.open_a_draft_and_find_it(s, forge, conn, ref)
    assert s.pr(ref.path, pr.number).draft is True  # GitHub's own draft flag
    flow.poll_with_validators(s, forge, conn, ref, pr)
    pr = forge.get_pr(conn, ref, pr.number)
    flow.reviews_and_comments_come_back(s, forge, conn, ref, pr.number)
    flow.checks_come_back(s, forge, conn, ref, pr.head_sha)
    flow.webhooks_verify_and_parse(s, forge, ref, pr.number)
    flow.refused_then_merged(s, forge, conn, ref, pr)  # leaving draft is GraphQL on GitHub
    assert forge.get_pr(conn, ref, pr.number).merged_by == s.login
    flow.a_moved_head_is_refused_and_close_closes(s, forge, conn, ref)


def test_a_refused_merge_carries_githubs_reason(github_standin) -> None:
    s = github_standin
    forge, conn, ref = flow.connect_and_read_the_repository(s, "acme/guarded")
    sha = s.commit_on_server(ref.path, "agent/x", {"x.txt": "x\n"})
    pr = forge.open_pr(conn, ref, head_branch="agent/x", base_branch="main", title="X", body="", draft=False)
    s.protect_branch(ref.path, "main", ["ci"])
    try:
        forge.merge(conn, ref, pr.number, method="merge", head_sha=sha)
    except ForgeRefused as e:
        assert e.status == 405 and 'Required status check "ci" is expected.' in str(e)
    else:
        raise AssertionError("the protected branch was merged into")


def test_checks_merge_runs_and_statuses_and_carry_the_log(github_standin) -> None:
    s = github_standin
    forge, conn, ref = flow.connect_and_read_the_repository(s, "acme/ci")
    sha = s.commit_on_server(ref.path, "agent/y", {"y.txt": "y\n"})
    s.set_check(ref.path, sha, "ci", "failure", log="FAILED test_y - assert 0")
    checks = forge.checks(conn, ref, sha)
    assert any("assert 0" in c.excerpt for c in checks if c.state == "failure")
    assert len(checks) == 2  # the check run and the commit status of the same name


def test_a_ping_is_a_ping(github_standin) -> None:
    s = github_standin
    forge, _, ref = flow.connect_and_read_the_repository(s, "acme/ping")
    delivery = s.webhook("ping", ref.path)
    headers = delivery.headers("github", s.webhook_secret)
    forge.verify_webhook(headers, delivery.body, s.webhook_secret)
    event = forge.parse_webhook(headers, delivery.body)
    assert event.kind == "ping" and event.delivery_id == delivery.delivery_id


def test_bad_token_and_unreachable(github_standin) -> None:
    flow.a_bad_token_is_refused_with_the_forges_words(github_standin)
    flow.an_unreachable_forge_is_unavailable(github_standin)


def test_write_access_decides_who_may_send_the_agent_work(github_standin) -> None:
    s = github_standin
    forge, conn, ref = flow.connect_and_read_the_repository(s, "acme/trust")
    flow.write_access_is_read(s, forge, conn, ref)
