"""Real git repositories in temp dirs for the local-directory tests (never a mocked git)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ld_git import git, make_repo


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see neither the machine's git config nor its hooks; identity comes from the env."""
    cfg = tmp_path_factory.getbasetemp() / "gitconfig"
    if not cfg.exists():
        cfg.write_text("[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var, value in (("GIT_AUTHOR_NAME", "Person"), ("GIT_AUTHOR_EMAIL", "person@example.com"),
                       ("GIT_COMMITTER_NAME", "Person"), ("GIT_COMMITTER_EMAIL", "person@example.com")):
        monkeypatch.setenv(var, value)


@pytest.fixture
def dirty_repo(tmp_path: Path) -> Path:
    """A repository with every kind of state a person can have: modified (unstaged and staged),
    deleted, staged-new, untracked and ignored files, plus a stash entry."""
    repo = make_repo(tmp_path / "repo", {
        "README.md": "hello\n", "src/app.py": "print('v1')\n", "src/util.py": "x = 1\n",
        "docs/guide.md": "guide\n", "gone.txt": "bye\n", ".gitignore": "build/\n*.log\n",
        "run.sh": "#!/bin/sh\necho run\n",
    })
    os.chmod(repo / "run.sh", 0o755)
    git(repo, "add", "run.sh")
    git(repo, "commit", "-q", "-m", "exec bit")
    (repo / "README.md").write_text("stashed edit\n")
    git(repo, "stash", "push", "-q", "-m", "the person's stash")
    (repo / "src/app.py").write_text("print('v2, unstaged')\n")
    (repo / "src/util.py").write_text("x = 2  # staged\n")
    git(repo, "add", "src/util.py")
    (repo / "src/util.py").write_text("x = 3  # staged, then edited again\n")
    (repo / "gone.txt").unlink()
    (repo / "new_staged.txt").write_text("staged new file\n")
    git(repo, "add", "new_staged.txt")
    (repo / "notes").mkdir()
    (repo / "notes/todo.md").write_text("untracked\n")
    (repo / "build").mkdir()
    (repo / "build/out.bin").write_bytes(b"\0ignored build output")
    (repo / "debug.log").write_text("ignored\n")
    return repo
