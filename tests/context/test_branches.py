"""One branch naming, one ref sanitiser and one collision rule for both deliveries (R-WT-3):
a worktree of a person's folder and a checkout from the daemon's repo cache name a task's branch
the same way in the same situation."""

from __future__ import annotations

from pathlib import Path

from predictorx.daemon import worktree
import subprocess

import pytest

from predictorx.daemon.branches import NoFreeBranch, candidates, create_free_branch, ref_component, task_branch
from predictorx.daemon.repocache import RepoCache, cache_key, repo_name

from ctx_gitutil import Remote, git


@pytest.mark.parametrize("text, unicode, ascii", [
    ("Claude Coder", "Claude-Coder", "Claude-Coder"),
    ("Zoë's repo", "Zoë-s-repo", "Zo-s-repo"),
    ("..x..y.lock", "x.y", "x.y"),
    ("a" * 70 + ".lock", "a" * 64, "a" * 64),
    ("--", "fb", "fb"),
])
def test_one_ref_sanitiser_for_branches_and_cache_names(text: str, unicode: str, ascii: str) -> None:
    assert ref_component(text, "fb") == unicode
    assert ref_component(text, "fb", ascii_only=True) == ascii
    for name in (unicode, ascii):
        assert subprocess.run(["git", "check-ref-format", "--branch", f"agent/{name}"], capture_output=True).returncode == 0


def test_the_repo_cache_names_go_through_it() -> None:
    assert repo_name("https://example.com/org/Zoë's..Repo.git") == ref_component("Zoë's..Repo", "repo", ascii_only=True)
    assert cache_key("https://example.com/org/My.Repo.git").startswith("My.Repo-")


def test_the_collision_rule_in_order() -> None:
    names = list(candidates("agent/bot/t1"))
    assert names[:3] == ["agent/bot/t1", "agent/bot/t1-2", "agent/bot/t1-3"]
    assert names[98:101] == ["agent/bot/t1-99", "agent-bot-t1", "agent-bot-t1-2"]
    assert list(candidates("flat"))[:2] == ["flat", "flat-2"] and len(list(candidates("flat"))) == 99


def test_the_wanted_name_is_sanitised_once_and_a_full_house_is_an_error() -> None:
    made: list[str] = []

    def create(name: str) -> None:
        if len(made) < 3:
            made.append(name)
            raise FileExistsError(name)
        made.append(name)

    assert create_free_branch("agent/Claude Coder/t..1", create, FileExistsError) == "agent/Claude-Coder/t.1-4"

    def never(name: str) -> None:
        raise FileExistsError(name)

    try:
        create_free_branch("x", never, FileExistsError)
    except NoFreeBranch as e:
        assert "no free branch name like x" in str(e)
    else:
        raise AssertionError("a full house must fail")


def test_worktree_and_checkout_follow_the_same_rule(tmp_path: Path) -> None:
    remote = Remote(tmp_path / "remote")
    person = tmp_path / "person"
    git("clone", "-q", remote.url, str(person))
    cache = RepoCache(tmp_path / "ws")
    cache.ensure(remote.url)
    git("branch", "agent", cwd=person)
    git("--git-dir", str(cache.cache_path(remote.url)), "branch", "agent", "refs/remotes/origin/main")

    wanted = task_branch("bot", "t1")
    prepared = [worktree.prepare(person, tmp_path / f"env{n}", "bot", "t1") for n in (1, 2)]
    checkouts = [cache.checkout(remote.url, None, tmp_path / f"co{n}", wanted) for n in (1, 2)]
    # A branch named `agent` is where the folder of task branches would be: both go flat, then -2.
    assert [p.branch for p in prepared] == [c.branch for c in checkouts] == ["agent-bot-t1", "agent-bot-t1-2"]
    for p in prepared:
        worktree.finalize(p)
