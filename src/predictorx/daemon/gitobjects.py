"""Which of some objects a repository holds, read from its object files without a git process
(daemon/smartpush.py: which of the commits a forge advertised it may name as the base of its pack,
as `git send-pack` does before it starts `pack-objects`).

Loose objects and version-2 pack indexes are read, through `objects/info/alternates` (a few levels
deep, as git follows them). An object this misses (an older index format, a commit-graph only) is
only left out of the bases — the pack is larger, still right; an object it finds is one git finds.
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
from collections.abc import Iterable
from pathlib import Path

from .gitdata import SHA

_IDX_V2 = b"\377tOc\x00\x00\x00\x02"
_FANOUT = 8
_NAMES = _FANOUT + 256 * 4
#: How deep alternates of alternates are followed (git's own limit is 5).
_ALTERNATE_DEPTH = 5


def present(git_dir: Path, shas: Iterable[str]) -> set[str]:
    """The objects of `shas` (40-hex names) that `git_dir` holds."""
    missing = {s for s in shas if SHA.match(s)}
    found: set[str] = set()
    for objects in _object_dirs(git_dir / "objects"):
        for sha in list(missing):
            if os.path.isfile(objects / sha[:2] / sha[2:]):
                found.add(sha)
                missing.discard(sha)
        for idx in _indexes(objects):
            if not missing:
                return found
            hit = _in_index(idx, missing)
            found |= hit
            missing -= hit
    return found


def _object_dirs(first: Path) -> list[Path]:
    seen: list[Path] = []
    todo = [(first, 0)]
    while todo:
        here, depth = todo.pop(0)
        real = Path(os.path.realpath(here))
        if real in seen or not real.is_dir():
            continue
        seen.append(real)
        if depth >= _ALTERNATE_DEPTH:
            continue
        try:
            lines = (real / "info" / "alternates").read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.strip()
            if line and not line.startswith(("#", '"')):
                todo.append((real / line if not os.path.isabs(line) else Path(line), depth + 1))
    return seen


def _indexes(objects: Path) -> list[Path]:
    try:
        names = os.listdir(objects / "pack")
    except OSError:
        return []
    return [objects / "pack" / n for n in names if n.endswith(".idx") and n[:-4] + ".pack" in names]


def _in_index(idx: Path, wanted: set[str]) -> set[str]:
    """The objects of `wanted` named in the version-2 pack index `idx` (binary search of its names)."""
    try:
        with open(idx, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if len(data) < _NAMES or data[:_FANOUT] != _IDX_V2:
                return set()
            fanout = struct.unpack_from(">256I", data, _FANOUT)
            names = _Names(data, fanout[255])
            hits = set()
            for sha in wanted:
                raw = bytes.fromhex(sha)
                lo, hi = (fanout[raw[0] - 1] if raw[0] else 0), fanout[raw[0]]
                at = bisect.bisect_left(names, raw, lo, hi)
                if at < hi and names[at] == raw:
                    hits.add(sha)
            return hits
    except (OSError, ValueError):
        return set()


class _Names:
    """An index's sorted object names as a sequence (what bisect searches)."""

    def __init__(self, data: mmap.mmap, count: int):
        self.data, self.count = data, count
        if len(data) < _NAMES + 20 * count:
            raise ValueError("a truncated pack index")

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> bytes:
        at = _NAMES + 20 * i
        return self.data[at:at + 20]
