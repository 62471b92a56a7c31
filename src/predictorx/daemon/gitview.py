"""Read-only git questions about a repository an agent wrote — a person's folder in place, a
run's checkout — asked without reading it as a repository.

The handoff (workflowhooks.py) wants HEAD, the commits made since the task started and the default branch. `git log`
in the agent's repository would read its config (`include.path`, `log.showSignature` with
`gpg.program`, `core.fsmonitor`, …), its `commondir` and `config.worktree`. Instead the daemon
makes a shadow git dir of its own: its config written here, the agent's HEAD and refs copied as
text (regular files only, checked to be commit ids or symbolic refs), and the agent's object files
linked in one by one (loose-object folders and pack/index pairs that are real files and folders;
never its `info/alternates`). The only alternates are those the caller names — the object store
the daemon itself made the checkout borrow from. Nothing there is configuration or object-store
indirection the agent chose.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .gitcmd import sealed_env
from .gitdata import SHA, read_small, repository_dirs

MAX_REFS = 5000
_LOOSE_DIR = re.compile(r"^[0-9a-f]{2}$")
_PACK = re.compile(r"^(pack-[0-9a-f]{40})\.(pack|idx)$")
_HEAD = re.compile(r"^(ref: refs/[!-~]+|[0-9a-f]{40})$")
_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"


@contextmanager
def sealed_view(tree: Path, borrowed: Iterable[Path] = ()) -> Iterator[dict[str, str] | None]:
    """The environment for git questions about the repository at `tree` (a `.git` directory, or a
    `gitdir:` file of a linked worktree), or None when there is none to ask about. `borrowed`: the
    object stores the daemon made that checkout borrow from (never read from the agent's files)."""
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
        (shadow / "refs").mkdir()  # git needs it even when every ref is packed
        _copy_refs(common / "refs", shadow / "refs", [0])
        shallow = read_small(common, "shallow", limit=16 * 2**20)
        if shallow and all(SHA.match(line) for line in shallow.splitlines()):
            (shadow / "shallow").write_text(shallow)  # commit ids only: where a shallow history stops
        (shadow / "objects" / "info").mkdir(parents=True)
        _link_objects(common / "objects", shadow / "objects")
        stores = [str(Path(b)) for b in borrowed if Path(b).is_dir()]
        if stores:
            (shadow / "objects" / "info" / "alternates").write_text("".join(f"{b}\n" for b in stores))
        yield sealed_env(shadow)


def _link_objects(src: Path, dst: Path) -> None:
    """The agent's loose-object folders and pack/index pairs, linked (read in place, as data)."""
    for entry in _real_entries(src):
        if _LOOSE_DIR.match(entry.name) and entry.is_dir(follow_symlinks=False):
            (dst / entry.name).symlink_to(entry.path)
        elif entry.name == "pack" and entry.is_dir(follow_symlinks=False):
            files = {f.name for f in _real_entries(Path(entry.path)) if f.is_file(follow_symlinks=False)}
            (dst / "pack").mkdir(exist_ok=True)
            for name in files:
                m = _PACK.match(name)
                if m and f"{m[1]}.pack" in files and f"{m[1]}.idx" in files:
                    (dst / "pack" / name).symlink_to(Path(entry.path) / name)


def _real_entries(path: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(path) as it:
            return [e for e in it if not e.is_symlink()]
    except OSError:
        return []


def _ref_line(line: str) -> bool:
    sha, _, name = line.lstrip("^").partition(" ")
    return bool(SHA.match(sha)) and (line.startswith("^") or name.startswith("refs/"))


def _locate(tree: Path) -> tuple[Path, Path] | None:
    if tree.is_symlink():  # a link the agent made to a repository it cannot see
        return None
    return repository_dirs(tree / ".git")


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
