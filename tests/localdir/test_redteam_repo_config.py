"""An agent can write its checkout's git config, so the daemon's own git commands after the run
must not run a program that config names: with `core.fsmonitor`, `diff.<driver>.textconv`,
`gpg.program` + `commit.gpgSign` or a filter driver they did, outside the sandbox, as the daemon —
whose state dir holds its token (R-SEC-6, docs/security-sandbox.md). The table-driven test of
every vector is test_redteam_run_git_dir.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

from predictorx.daemon import review, worktree


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          timeout=30).stdout.strip()


def test_redteam_agent_written_repo_config_runs_nothing_in_the_daemon(tmp_path: Path):
    marker = tmp_path / "ran.txt"
    evil = tmp_path / "evil.sh"
    evil.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\nexit 1\n')
    evil.chmod(0o755)
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-q", "--allow-empty", "-m", "base")
    p = worktree.prepare(repo, tmp_path / "env", "bot", "t1")
    # What the agent leaves behind: changed files, and its checkout's config pointing at its script.
    (p.worktree_dir / ".gitattributes").write_text("*.txt diff=evil\n")
    (p.worktree_dir / "a.txt").write_text("hello\n")
    for key, value in (("core.fsmonitor", str(evil)), ("diff.evil.textconv", str(evil)),
                       ("commit.gpgSign", "true"), ("gpg.program", str(evil))):
        _git(p.worktree_dir, "config", key, value)

    done = worktree.finalize(p)
    assert done.error is None and done.branch == p.branch  # committed
    out = review.branch_review(repo, p.baseline_commit, p.branch, mode="worktree", repo_label="r")
    assert {f["path"] for f in out["files"]} == {".gitattributes", "a.txt"} and "+hello" in out["patch"]
    assert not marker.exists(), marker.read_text()
    assert "evil" not in (repo / ".git" / "config").read_text()  # the person's config is theirs


def _evil(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "ran.txt"
    evil = tmp_path / "evil.sh"
    evil.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\nexit 1\n')
    evil.chmod(0o755)
    return marker, evil


def _repo(path: Path, name: str, text: str) -> Path:
    """A repository on `main` with one commit holding `name`."""
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    (path / name).write_text(text)
    _git(path, "add", name)
    _git(path, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-q", "-m", "base")
    return path


def test_redteam_agent_written_filter_driver_runs_nothing_in_the_daemon(tmp_path: Path):
    """A `filter.<driver>.clean|process` the agent adds to its checkout's config, with a
    `.gitattributes` line, ran as the daemon when it committed the leftovers (docs/security-sandbox.md
    listed it as not covered); and a `merge.<driver>` too (issue 29 finding 11)."""
    marker, evil = _evil(tmp_path)
    repo = _repo(tmp_path / "repo", "kept.txt", "before\n")
    p = worktree.prepare(repo, tmp_path / "env", "bot", "t1")
    wt = p.worktree_dir
    _git(wt, "config", "filter.evil.clean", str(evil))
    _git(wt, "config", "filter.Other.process", str(evil))  # a long-running filter, by another name
    _git(wt, "config", "filter.Other.required", "true")
    _git(wt, "config", "merge.evil.driver", f"{evil} %O %A %B")
    (wt / "a.txt").write_text("hello\n")
    (wt / "b.txt").write_text("more\n")
    (wt / "kept.txt").write_text("changed\n")
    (wt / ".gitattributes").write_text("a.txt filter=evil merge=evil\nb.txt filter=Other\nkept.txt filter=evil\n")

    done = worktree.finalize(p)
    assert done.error is None and done.branch == p.branch  # committed as they are
    out = review.branch_review(repo, p.baseline_commit, p.branch, mode="worktree", repo_label="r")
    assert {f["path"] for f in out["files"]} == {".gitattributes", "a.txt", "b.txt", "kept.txt"}
    assert "+hello" in out["patch"]
    assert not marker.exists(), marker.read_text()


def test_redteam_agent_written_repo_cache_config_runs_nothing_on_fetch(tmp_path: Path):
    """A sandboxed agent may write the daemon's repo cache (`predictorx repo checkout` fetches into
    it). Its config then named what the daemon's next fetch of that repository — for any task —
    ran as the daemon: `remote.origin.uploadpack` (through the shell for a file:// URL), an
    `ext::` transport by `url.<x>.insteadOf` with `protocol.ext.allow`, a smudge filter."""
    from predictorx.daemon.repocache import RepoCache

    marker, evil = _evil(tmp_path)
    src = _repo(tmp_path / "src", "a.txt", "hello\n")
    url = f"file://{src}"
    cache = RepoCache(tmp_path / "root")
    first = cache.checkout(url, None, tmp_path / "wt1", "agent/bot/t1")
    # What the agent leaves in the cache's config.
    _git(first.cache, "config", "remote.origin.uploadpack", f"{evil} upload; git-upload-pack")
    _git(first.cache, "config", "filter.evil.smudge", f"{evil} smudge")
    (first.cache / "info").mkdir(exist_ok=True)
    (first.cache / "info" / "attributes").write_text("* filter=evil\n")
    second = cache.checkout(url, None, tmp_path / "wt2", "agent/bot/t2")
    assert second.fetch_error is None and (tmp_path / "wt2" / "a.txt").read_text() == "hello\n"
    assert not marker.exists(), marker.read_text()

    _git(first.cache, "config", "protocol.ext.allow", "always")
    _git(first.cache, "config", f"url.ext::{evil} %S .insteadOf", url)
    third = cache.checkout(url, None, tmp_path / "wt3", "agent/bot/t3")
    assert third.fetch_error and "not allowed" in third.fetch_error  # the cached copy is used
    assert not marker.exists(), marker.read_text()


def test_redteam_worktree_mode_agent_config_never_reaches_the_persons_repository(tmp_path: Path):
    """In worktree mode the agent's git dir was the person's `.git`: a filter driver it named there
    (config plus `info/attributes`) ran in the next task's baseline `git add` — and in the person's
    own git. Now its checkout is a repository of its own and the person's config stays theirs."""
    marker, evil = _evil(tmp_path)
    repo = _repo(tmp_path / "repo", "kept.txt", "before\n")
    p = worktree.prepare(repo, tmp_path / "env1", "bot", "t1")
    wt = p.worktree_dir
    _git(wt, "config", "filter.evil.clean", str(evil))
    _git(wt, "config", "core.alternateRefsCommand", str(evil))
    attributes = Path(_git(wt, "rev-parse", "--path-format=absolute", "--git-path", "info/attributes"))
    attributes.parent.mkdir(parents=True, exist_ok=True)
    attributes.write_text("* filter=evil\n")
    (wt / "a.txt").write_text("agent\n")
    assert worktree.finalize(p).error is None
    (repo / "kept.txt").write_text("the person's next edit\n")
    second = worktree.prepare(repo, tmp_path / "env2", "bot", "t2")  # the baseline `git add` of their state
    assert (second.worktree_dir / "kept.txt").read_text() == "the person's next edit\n"
    worktree.finalize(second)
    assert not marker.exists(), marker.read_text()
    assert "evil" not in (repo / ".git" / "config").read_text()
    assert not (repo / ".git" / "info" / "attributes").exists()
