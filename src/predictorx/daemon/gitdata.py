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


def repository_dirs(dot_git: Path) -> tuple[Path, Path] | None:
    """(git dir, common dir) of the repository whose `.git` entry is `dot_git`, where nothing in it
    leads elsewhere; None otherwise.

    An agent writes its `.git`; inside the sandbox a name pointing out of it reaches nothing, but
    the daemon, outside, would follow it to another repository of its user (another workspace's
    repo cache): `.git/commondir`, a `gitdir:` file, `.git` or its `objects`/`refs` as symlinks.
    Taken are a real `.git` folder without `commondir`, or a linked worktree's `gitdir:` file
    naming `<common>/worktrees/<name>` whose own `gitdir` file names this `.git` back (no run can
    write that unless it had the repository already); objects and refs real folders either way."""
    try:
        mode = os.lstat(dot_git).st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        if os.path.lexists(dot_git / "commondir"):
            return None
        git_dir = common = dot_git
    elif stat.S_ISREG(mode):
        linked = _linked_git_dir(dot_git)
        if linked is None:
            return None
        git_dir, common = linked, linked.parent.parent
    else:
        return None
    if not (real_dirs(common, ["objects"]) and real_dirs(common, ["refs"])):
        return None
    return git_dir, common


def _linked_git_dir(gitfile: Path) -> Path | None:
    text = _small_text(gitfile)
    if text is None or not text.startswith("gitdir:"):
        return None
    named = Path(os.path.realpath(gitfile.parent / text[len("gitdir:"):].strip()))
    if named.parent.name != "worktrees" or not named.is_dir():
        return None
    back, common = _small_text(named / "gitdir"), _small_text(named / "commondir")
    if back is None or os.path.realpath(named / back.strip()) != os.path.realpath(gitfile):
        return None
    if common is None or os.path.realpath(named / common.strip()) != str(named.parent.parent):
        return None
    return named


def _small_text(path: Path) -> str | None:
    fd = open_regular(path)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read(4096).decode("utf-8", "replace")
