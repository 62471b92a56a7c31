"""Helpers for the local-directory tests: real git repositories, never a mocked git."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path


def git(cwd: Path, *args: str, check: bool = True) -> str:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}  # our own `git status` must not rewrite the index
    r = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, env=env)
    if check and r.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {r.stderr}")
    return r.stdout


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for rel, text in (files or {"README.md": "hello\n"}).items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def snapshot(repo: Path) -> tuple[str, str, str, str]:
    """What must never change for the person: status, index bytes, stash list, HEAD."""
    return (git(repo, "status", "--porcelain=v1", "--untracked-files=all", "--ignored"),
            hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest(),
            git(repo, "stash", "list"),
            git(repo, "rev-parse", "HEAD"))


def tree_files(root: Path) -> dict[str, bytes]:
    """Every file under root except .git, as {relative path: content}."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for f in filenames:
            if f == ".git":
                continue
            p = Path(dirpath) / f
            out[str(p.relative_to(root))] = p.read_bytes()
    return out
