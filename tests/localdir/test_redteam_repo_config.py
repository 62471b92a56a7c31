"""An agent can write its repository's git config (its git dirs are writable, in the sandbox too),
so the daemon's own git commands after the run must not run a program that config names: with
`core.fsmonitor`, `diff.<driver>.textconv` or `gpg.program` + `commit.gpgSign` they did, outside
the sandbox, as the daemon — whose state dir holds its token (R-SEC-6, docs/security-sandbox.md)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from predictorx.daemon import review


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
    base = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "agent/bot/t1")
    # What the agent leaves behind: changed files, and its repository's config pointing at its script.
    (repo / ".gitattributes").write_text("*.txt diff=evil\n")
    (repo / "a.txt").write_text("hello\n")
    for key, value in (("core.fsmonitor", str(evil)), ("diff.evil.textconv", str(evil)),
                       ("commit.gpgSign", "true"), ("gpg.program", str(evil))):
        _git(repo, "config", key, value)

    assert review.commit_checkout_leftovers(repo, "agent/bot/t1", "bot", "t1") is None  # committed
    out = review.branch_review(repo, base, "agent/bot/t1", mode="checkout", repo_label="r")
    assert {f["path"] for f in out["files"]} == {".gitattributes", "a.txt"} and "+hello" in out["patch"]
    assert not marker.exists(), marker.read_text()
