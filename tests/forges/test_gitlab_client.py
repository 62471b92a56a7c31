"""The GitLab client, every method, against the GitLab stand-in (requests held to GitLab's
published API description where it has one, to its documented shapes elsewhere)."""

from __future__ import annotations

from predictorx.forges.base import ForgeRefused

from . import clientflow as flow


def test_the_whole_merge_request_life_in_a_nested_group(gitlab_standin) -> None:
    s = gitlab_standin
    forge, conn, ref = flow.connect_and_read_the_repository(s, "acme/platform/widget")
    pr = flow.open_a_draft_and_find_it(s, forge, conn, ref)
    assert s.pr(ref.path, pr.number).title.startswith("Draft: ")  # GitLab's draft is a title prefix
    flow.poll_with_validators(s, forge, conn, ref, pr)
    pr = forge.get_pr(conn, ref, pr.number)
    flow.reviews_and_comments_come_back(s, forge, conn, ref, pr.number)
    flow.checks_come_back(s, forge, conn, ref, pr.head_sha)
    flow.webhooks_verify_and_parse(s, forge, ref, pr.number)
    flow.refused_then_merged(s, forge, conn, ref, pr)
    flow.a_moved_head_is_refused_and_close_closes(s, forge, conn, ref)


def test_a_failed_jobs_log_tail_is_the_excerpt(gitlab_standin) -> None:
    s = gitlab_standin
    forge, conn, ref = flow.connect_and_read_the_repository(s, "acme/ci")
    sha = s.commit_on_server(ref.path, "agent/y", {"y.txt": "y\n"})
    s.set_check(ref.path, sha, "ci", "failure", log="\x1b[31mFAILED test_y - assert 0\x1b[0m\n")
    failed = [c for c in forge.checks(conn, ref, sha) if c.state == "failure"]
    assert failed and "FAILED test_y - assert 0" in failed[0].excerpt and "\x1b" not in failed[0].excerpt


def test_bad_token_and_unreachable(gitlab_standin) -> None:
    flow.a_bad_token_is_refused_with_the_forges_words(gitlab_standin)
    flow.an_unreachable_forge_is_unavailable(gitlab_standin)


def test_a_refused_merge_says_why(gitlab_standin) -> None:
    """GitLab's refusal is often only "405 Method Not Allowed"; the client adds the MR's own
    detailed merge status so the person sees the reason."""
    s = gitlab_standin
    forge, conn, ref = flow.connect_and_read_the_repository(s, "acme/guarded")
    sha = s.commit_on_server(ref.path, "agent/x", {"x.txt": "x\n"})
    pr = forge.open_pr(conn, ref, head_branch="agent/x", base_branch="main", title="X", body="", draft=False)
    s.protect_branch(ref.path, "main", ["ci"])
    s.set_check(ref.path, sha, "ci", "failure", log="boom")
    try:
        forge.merge(conn, ref, pr.number, method="merge", head_sha=sha)
    except ForgeRefused as e:
        assert e.status == 405 and "merge status:" in str(e)
    else:
        raise AssertionError("a merge with a failed required pipeline went through")


def test_write_access_decides_who_may_send_the_agent_work(gitlab_standin) -> None:
    s = gitlab_standin
    forge, conn, ref = flow.connect_and_read_the_repository(s, "group/sub/trust")
    flow.write_access_is_read(s, forge, conn, ref)
    assert not forge.author_may_write(conn, ref, "reviewer", "")  # GitLab asks by id; none given: no

    # Notes and reviews carry their author's id, for the question above.
    from forgestand.state import user_id_of

    s.commit_on_server(ref.path, "agent/t", {"t.txt": "t\n"})
    pr = forge.open_pr(conn, ref, head_branch="agent/t", base_branch="main", title="T", body="", draft=False)
    s.comment(ref.path, pr.number, "@bot hello", author="wendy")
    s.submit_review(ref.path, pr.number, "commented", comments=[("t.txt", 1, "why?")], author="max")
    assert [c.author_id for c in forge.comments(conn, ref, pr.number)] == [str(user_id_of("wendy"))]
    assert [r.author_id for r in forge.reviews(conn, ref, pr.number) if r.author == "max"] == [str(user_id_of("max"))]
