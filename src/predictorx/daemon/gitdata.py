"""Reading files of a git dir an agent wrote as plain data: regular files only, never through a
symlink, never blocking on a FIFO, never more than asked for. `delivery` and `gitview` read the
agent's refs and objects this way instead of letting the daemon's git treat that git dir as a
repository (whose config, hooks and indirections would then be the agent's)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

SHA = re.compile(r"^[0-9a-f]{40}$")


def open_regular(path: Path) -> int | None:
    """An fd for `path` if it is a regular file (never through a symlink, never blocking on a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def real_dirs(base: Path, parts: list[str]) -> bool:
    """Every `base/parts[0]/…` prefix is a real directory (no symlink, no `..`)."""
    here = base
    for part in parts:
        if part in ("", ".", ".."):
            return False
        here = here / part
        try:
            if not stat.S_ISDIR(os.lstat(here).st_mode):
                return False
        except OSError:
            return False
    return True


def read_small(git_dir: Path, rel: str, limit: int = 4096) -> str | None:
    """A file under `git_dir` as text, if every component is a real directory and it is a regular file."""
    parts = rel.split("/")
    if not parts[-1] or parts[-1] in (".", "..") or not real_dirs(git_dir, parts[:-1]):
        return None
    fd = open_regular(git_dir.joinpath(*parts))
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read(limit).decode("utf-8", "replace")


def ref_value(git_dir: Path, ref: str) -> str | None:
    """A branch's commit id from its loose file or `packed-refs`; symbolic refs are not followed."""
    if not ref.startswith("refs/heads/"):
        return None
    loose = read_small(git_dir, ref)
    if loose is not None:
        return loose.strip() if SHA.match(loose.strip()) else None
    packed = read_small(git_dir, "packed-refs", limit=64 * 2**20) or ""
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name == ref and SHA.match(sha):
            return sha
    return None
