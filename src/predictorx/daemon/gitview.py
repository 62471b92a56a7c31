"""Read-only git questions about a repository an agent wrote — a person's folder in place, a
run's checkout — asked without reading it as a repository.

The harness wants HEAD, the commits made since the task started and the default branch. `git log`
in the agent's repository would read its config (`include.path`, `log.showSignature` with
`gpg.program`, `core.fsmonitor`, …), its `commondir` and `config.worktree`. Instead the daemon
makes a shadow git dir of its own: its config written here, the agent's HEAD and refs copied as
text (regular files only, checked to be commit ids or symbolic refs), and the agent's object files
borrowed read-only as an alternate. Nothing there is configuration the agent chose.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .gitcmd import sealed_env
from .gitdata import SHA, open_regular, read_small

MAX_REFS = 5000
_HEAD = re.compile(r"^(ref: refs/[!-~]+|[0-9a-f]{40})$")
_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"


@contextmanager
def sealed_view(tree: Path) -> Iterator[dict[str, str] | None]:
    """The environment for git questions about the repository at `tree` (a `.git` directory, or a
    `gitdir:` file of a linked worktree), or None when there is none to ask about."""
    located = _locate(Path(tree))
    if located is None:
        yield None
        return
    git_dir, common = located
    head = (read_small(git_dir, "HEAD") or "").strip()
    if not _HEAD.match(head):
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="predictorx-view-") as tmp:
        shadow = Path(tmp)
        (shadow / "config").write_text(_CONFIG)
        (shadow / "HEAD").write_text(head + "\n")
        packed = read_small(common, "packed-refs", limit=64 * 2**20)
        if packed:
            (shadow / "packed-refs").write_text("".join(
                line + "\n" for line in packed.splitlines() if line.startswith("#") or _ref_line(line)))
        _copy_refs(common / "refs", shadow / "refs", [0])
        (shadow / "objects" / "info").mkdir(parents=True)
        (shadow / "objects" / "info" / "alternates").write_text(str(common / "objects") + "\n")
        yield sealed_env(shadow)


def _ref_line(line: str) -> bool:
    sha, _, name = line.lstrip("^").partition(" ")
    return bool(SHA.match(sha)) and (line.startswith("^") or name.startswith("refs/"))


def _locate(tree: Path) -> tuple[Path, Path] | None:
    dot = tree / ".git"
    if tree.is_symlink() or dot.is_symlink():  # a link the agent made to a repository it cannot see
        return None
    if dot.is_dir():
        git_dir = dot
    else:
        fd = open_regular(dot)
        if fd is None:
            return None
        with os.fdopen(fd, "rb") as f:
            text = f.read(4096).decode("utf-8", "replace").strip()
        if not text.startswith("gitdir: "):
            return None
        git_dir = (tree / text[len("gitdir: "):]).absolute()
        if git_dir.is_symlink() or not git_dir.is_dir():
            return None
    common_text = (read_small(git_dir, "commondir") or "").strip()
    common = (git_dir / common_text).absolute() if common_text else git_dir
    if common.is_symlink() or not (common / "objects").is_dir():
        return None
    return git_dir, common


def _copy_refs(src: Path, dst: Path, count: list[int]) -> None:
    try:
        entries = list(os.scandir(src))
    except OSError:
        return
    for entry in entries:
        if count[0] >= MAX_REFS or entry.is_symlink() or entry.name in (".", ".."):
            continue
        if entry.is_dir(follow_symlinks=False):
            _copy_refs(Path(entry.path), dst / entry.name, count)
            continue
        text = (read_small(src, entry.name) or "").strip()
        if _HEAD.match(text):
            dst.mkdir(parents=True, exist_ok=True)
            (dst / entry.name).write_text(text + "\n")
            count[0] += 1
