"""The bare-repo cache and task checkouts against real local "remotes" (R-CTX-4)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from predictorx.daemon import repocache
from predictorx.daemon.repocache import (
    GitError,
    RefNotFound,
    RepoCache,
    RepoCacheBusy,
    RepoCacheError,
    URLNotAllowed,
    check_allowed,
    last_used,
    normalize_url,
    run_git,
    sanitize_branch,
    task_branch,
)

from ctx_gitutil import Remote, git


# -- URLs and names -------------------------------------------------------------------------------

@pytest.mark.parametrize("a, b", [
    ("https://github.com/Acme/Shop.git", "https://GITHUB.com/Acme/Shop/"),
    ("https://github.com/acme/shop", "https://user:token@github.com/acme/shop.git"),
    ("git@github.com:acme/shop.git", "ssh://git@github.com/acme/shop"),
    ("https://example.com:443/a/b", "https://example.com/a/b"),
    ("/srv/git/repo.git", "file:///srv/git/repo"),
    ("file:///srv/git/./repo.git/", "/srv/git/repo"),
])
def test_normalize_treats_spellings_of_one_repo_alike(a: str, b: str) -> None:
    assert normalize_url(a) == normalize_url(b)


def test_windows_path_is_not_an_ssh_url() -> None:
    assert not normalize_url("C:/src/repo.git").startswith("ssh://")


def test_normalize_keeps_path_case_and_ports() -> None:
    assert normalize_url("https://h/Acme/Shop") != normalize_url("https://h/acme/shop")
    assert normalize_url("https://h:8443/a/b") != normalize_url("https://h/a/b")


def test_check_allowed() -> None:
    allowed = ["https://github.com/acme/shop", "git@gitea.local:team/infra.git"]
    assert check_allowed("https://github.com/acme/shop.git/", allowed) == "https://github.com/acme/shop"
    assert check_allowed("ssh://gitea.local/team/infra", allowed)
    with pytest.raises(URLNotAllowed) as err:
        check_allowed("https://github.com/evil/repo", allowed)
    assert "https://github.com/evil/repo" in str(err.value)
    assert "https://github.com/acme/shop, git@gitea.local:team/infra.git" in str(err.value)
    with pytest.raises(URLNotAllowed, match="none"):
        check_allowed("https://github.com/acme/shop", [])


def test_task_branch_name() -> None:
    assert task_branch("Claude Coder", "0b5e-41") == "agent/Claude-Coder/0b5e-41"
    assert task_branch("..", "x.lock") == "agent/agent/x"
    assert sanitize_branch("HEAD") == "HEAD-branch"


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40))
def test_sanitized_branch_names_are_valid_for_git(name: str) -> None:
    branch = sanitize_branch(name)
    assert subprocess.run(["git", "check-ref-format", "--branch", branch], capture_output=True).returncode == 0, branch


# -- git calls ------------------------------------------------------------------------------------

def test_run_git_times_out_and_kills_the_group(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(GitError) as err:
        run_git(["-c", "alias.nap=!sleep 5", "nap"], cwd=tmp_path, timeout=0.5)
    assert err.value.timed_out and "timed out" in str(err.value)
    assert time.monotonic() - started < 3


def test_run_git_never_prompts() -> None:
    assert repocache.git_env()["GIT_TERMINAL_PROMPT"] == "0"


# -- cache ----------------------------------------------------------------------------------------

def test_clone_then_fetch_picks_up_new_commits(tmp_path: Path, remote: Remote) -> None:
    cache = RepoCache(tmp_path / "ws")
    path = cache.ensure(remote.url)
    assert path.parent == tmp_path / "ws" / ".repos" and path.name.startswith("remote-")
    assert git("--git-dir", str(path), "rev-parse", "refs/remotes/origin/main") == git("rev-parse", "HEAD", cwd=remote.work)
    new = remote.commit("b.txt", "b\n")
    cache.ensure(remote.url)
    assert git("--git-dir", str(path), "rev-parse", "refs/remotes/origin/main") == new
    assert cache.ensure("file://" + remote.url + "/") == path  # same repository, same cache


def test_checkout_creates_worktree_on_task_branch(tmp_path: Path, remote: Remote) -> None:
    cache = RepoCache(tmp_path / "ws")
    dest = tmp_path / "task" / "workdir" / "remote"
    result = cache.checkout(remote.url, None, dest, task_branch("bot", "t1"))
    assert result.branch == "agent/bot/t1" and result.ref == "origin/main" and result.fetch_error is None
    assert (dest / "README.md").read_text() == "hello\n"
    assert git("branch", "--show-current", cwd=dest) == "agent/bot/t1"
    assert git("rev-parse", "HEAD", cwd=dest) == result.commit
    # The worktree pushes to the real remote, not to the cache.
    (dest / "c.txt").write_text("agent work\n")
    git("add", "c.txt", cwd=dest)
    git("commit", "-qm", "agent", cwd=dest)
    git("push", "-q", "origin", "agent/bot/t1", cwd=dest)
    assert git("--git-dir", remote.url, "rev-parse", "agent/bot/t1") == git("rev-parse", "HEAD", cwd=dest)


def test_branch_collision_gets_a_suffix(tmp_path: Path, remote: Remote) -> None:
    cache = RepoCache(tmp_path / "ws")
    first = cache.checkout(remote.url, None, tmp_path / "a", "agent/bot/t1")
    second = cache.checkout(remote.url, None, tmp_path / "b", "agent/bot/t1")
    assert (first.branch, second.branch) == ("agent/bot/t1", "agent/bot/t1-2")


def test_checkout_by_branch_tag_and_commit(tmp_path: Path, remote: Remote) -> None:
    first = git("rev-parse", "HEAD", cwd=remote.work)
    remote.tag("v1")
    feature = remote.commit("f.txt", "f\n", branch="feature/x")
    cache = RepoCache(tmp_path / "ws")
    assert cache.checkout(remote.url, "feature/x", tmp_path / "1", "b1").commit == feature
    by_tag = cache.checkout(remote.url, "v1", tmp_path / "2", "b2")
    assert (by_tag.commit, by_tag.ref) == (first, "tag v1")
    assert cache.checkout(remote.url, first[:10], tmp_path / "3", "b3").commit == first


def test_unknown_ref_names_the_branches(tmp_path: Path, remote: Remote) -> None:
    with pytest.raises(RefNotFound, match="branches: main"):
        RepoCache(tmp_path / "ws").checkout(remote.url, "nope", tmp_path / "d", "b")
    assert not (tmp_path / "d").exists() or not any((tmp_path / "d").iterdir())


def test_option_like_values_are_refused(tmp_path: Path, remote: Remote) -> None:
    cache = RepoCache(tmp_path / "ws")
    with pytest.raises(RepoCacheError):
        cache.checkout(remote.url, "--upload-pack=touch /tmp/x", tmp_path / "d", "b")
    with pytest.raises(RepoCacheError):
        cache.ensure("--upload-pack=evil")


def test_dest_must_be_empty(tmp_path: Path, remote: Remote) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("x")
    with pytest.raises(RepoCacheError, match="not an empty directory"):
        RepoCache(tmp_path / "ws").checkout(remote.url, None, tmp_path / "d", "b")


def test_unreachable_remote_falls_back_to_cached_copy(tmp_path: Path, remote: Remote) -> None:
    cache = RepoCache(tmp_path / "ws")
    cache.ensure(remote.url)
    moved = remote.bare.rename(tmp_path / "gone.git")
    result = cache.checkout(remote.url, None, tmp_path / "d", "b")
    assert result.fetch_error and (tmp_path / "d" / "README.md").exists()
    with pytest.raises(GitError):
        cache.ensure(remote.url)
    assert moved.exists()


def test_clone_failure_leaves_no_cache(tmp_path: Path) -> None:
    cache = RepoCache(tmp_path / "ws")
    with pytest.raises(GitError):
        cache.ensure(str(tmp_path / "does-not-exist.git"))
    assert cache.list_caches() == []
    assert not list((tmp_path / "ws" / ".repos").glob("*.partial-*"))


def test_last_used_is_recorded(tmp_path: Path, remote: Remote) -> None:
    cache = RepoCache(tmp_path / "ws")
    before = time.time()
    path = cache.ensure(remote.url)
    assert last_used(path).timestamp() >= before - 1


def test_threads_fetching_at_once_are_serialised(tmp_path: Path, remote: Remote, monkeypatch) -> None:
    cache = RepoCache(tmp_path / "ws")
    spans: list[tuple[float, float]] = []
    inner = RepoCache._ensure_locked

    def recording(self, *args, **kwargs):
        start = time.monotonic()
        try:
            return inner(self, *args, **kwargs)
        finally:
            spans.append((start, time.monotonic()))

    monkeypatch.setattr(RepoCache, "_ensure_locked", recording)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            cache.checkout(remote.url, None, tmp_path / f"w{i}", "agent/bot/t")
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    spans.sort()
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
    branches = git("--git-dir", str(cache.cache_path(remote.url)), "branch", "--format=%(refname:short)").split()
    assert sorted(branches) == ["agent/bot/t", "agent/bot/t-2", "agent/bot/t-3", "agent/bot/t-4"]


_HOLD_LOCK = """
import sys, time
from pathlib import Path
from predictorx.daemon.repocache import RepoCache
with RepoCache(Path(sys.argv[1])).lock(sys.argv[2]):
    print("locked", flush=True)
    time.sleep(float(sys.argv[3]))
"""


def test_another_process_holding_the_lock_makes_us_wait(tmp_path: Path, remote: Remote) -> None:
    cache = RepoCache(tmp_path / "ws", lock_timeout=0.3)
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(tmp_path / "ws"), remote.url, "1.5"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RepoCacheBusy, match="locked by another fetch"):
            cache.ensure(remote.url)
        started = time.monotonic()
        RepoCache(tmp_path / "ws", lock_timeout=10).ensure(remote.url)
        assert time.monotonic() - started > 0.5  # waited for the holder to let go
    finally:
        holder.wait(timeout=10)


def test_relative_paths_work(tmp_path: Path, remote: Remote, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = RepoCache(Path("ws")).checkout(remote.url, None, Path("task") / "r", "b")
    assert result.path == tmp_path / "task" / "r" and (result.path / "README.md").exists()


def test_redirecting_git_variables_are_ignored(tmp_path: Path, remote: Remote, monkeypatch) -> None:
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path / "elsewhere"))
    result = RepoCache(tmp_path / "ws").checkout(remote.url, None, tmp_path / "r", "b")
    assert (result.path / "README.md").exists() and not (tmp_path / "elsewhere").exists()


def test_git_errors_name_the_command_and_hide_credentials() -> None:
    err = GitError(["--git-dir", "/c.git", "fetch", "origin"], 128,
                   "fatal: repository 'https://bot:s3cret@example.com/o/r/' not found\n")
    assert str(err).startswith("git fetch failed (exit 128)")
    assert "s3cret" not in str(err) and "***@example.com" in str(err)
