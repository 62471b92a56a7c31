"""Undoing what a dead daemon's task left in a person's folder, from its undo record (finding 13,
R-LD-6): at daemon start, every record under the env roots is read and its project block and
files are taken out again. Writing the record is `record`'s; taking the block out is `block`'s."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from pathlib import Path

from .block import remove_block
from .record import RECORD_NAME, owner_alive
from .types import BlockHandle, ContextFiles


def undo(path: Path) -> str | None:
    """Take out what the record says was put in, and delete the record; a sentence for the log."""
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return f"Ignored an unreadable context record {path}."
    if owner_alive(rec):
        return None  # another daemon on this machine still runs that task
    removed = []
    b = rec.get("block")
    if isinstance(b, dict):
        handle = BlockHandle(path=Path(b["path"]), begin=base64.b64decode(b["begin"]),
                             inserted=base64.b64decode(b["inserted"]), separator=base64.b64decode(b["separator"]),
                             created=bool(b["created"]))
        if remove_block(handle):
            removed.append(f"the project block in {handle.path.name}")
    files = ContextFiles(files=[Path(f) for f in rec.get("files") or []], dirs=[Path(d) for d in rec.get("dirs") or []])
    existed = [f for f in files.files if f.exists()]
    files.remove()
    if any(not f.exists() for f in existed):
        removed.append(".predictorx/project/resources.json")
    path.unlink(missing_ok=True)
    if not removed:
        return None
    return (f"Removed {' and '.join(removed)} that task {rec.get('task_id')} left in {rec.get('workdir')} "
            "when a previous daemon stopped.")


def recover(roots: Iterable[Path]) -> list[str]:
    """At daemon start: undo the context of every task a dead daemon left (env roots at depth 0-2)."""
    said = []
    for root in roots:
        for pattern in (RECORD_NAME, f"*/{RECORD_NAME}", f"*/*/{RECORD_NAME}"):
            for record in sorted(Path(root).glob(pattern)):
                try:
                    sentence = undo(record)
                except Exception as e:  # noqa: BLE001 — one broken record must not stop the daemon
                    sentence = f"Could not undo the context recorded in {record}: {e}"
                if sentence:
                    said.append(sentence)
    return said
