"""The Gitea and Forgejo clients, every method, against their stand-ins (requests held to Gitea's
published swagger description, which Forgejo's v1 API shares; they differ in webhook headers)."""

from __future__ import annotations

import pytest

from . import clientflow as flow


@pytest.fixture(params=["gitea", "forgejo"])
def standin(request):
    return request.getfixturevalue(f"{request.param}_standin")


def test_the_whole_pull_request_life(standin) -> None:
    s = standin
    forge, conn, ref = flow.connect_and_read_the_repository(s, "acme/widget")
    pr = flow.open_a_draft_and_find_it(s, forge, conn, ref)
    assert s.pr(ref.path, pr.number).title.startswith("WIP: ")  # a draft is a "WIP: " title here
    flow.poll_with_validators(s, forge, conn, ref, pr)
    pr = forge.get_pr(conn, ref, pr.number)
    flow.reviews_and_comments_come_back(s, forge, conn, ref, pr.number)
    flow.checks_come_back(s, forge, conn, ref, pr.head_sha)
    flow.webhooks_verify_and_parse(s, forge, ref, pr.number)
    flow.refused_then_merged(s, forge, conn, ref, pr)
    flow.a_moved_head_is_refused_and_close_closes(s, forge, conn, ref)


def test_bad_token_and_unreachable(standin) -> None:
    flow.a_bad_token_is_refused_with_the_forges_words(standin)
    flow.an_unreachable_forge_is_unavailable(standin)


def test_write_access_decides_who_may_send_the_agent_work(standin) -> None:
    s = standin
    forge, conn, ref = flow.connect_and_read_the_repository(s, "acme/trust")
    flow.write_access_is_read(s, forge, conn, ref)
