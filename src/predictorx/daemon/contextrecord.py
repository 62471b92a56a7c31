"""The undo record of a task's project context, kept in its env root (finding 13, R-LD-6).

`prepare_context` writes this record *before* it changes the person's folder (the instruction
block, `.predictorx/project/resources.json`) and deletes it after taking them out again. A daemon
that is killed in between (kill -9, power loss) leaves the record behind, and the next daemon
start (`recover`) takes the block and the file out exactly as the normal end would have: the
person's file is byte for byte what it was.
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

if TYPE_CHECKING:
    from .context import BlockHandle, ContextFiles

RECORD_NAME = ".context_record.json"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def save(path: Path, task_id: str, workdir: Path, *, resources: ContextFiles | None = None,
         block: BlockHandle | None = None) -> None:
    me = psutil.Process()
    record = {
        "version": 1, "task_id": task_id, "workdir": str(workdir), "pid": me.pid, "pid_started": me.create_time(),
        "saved_at": time.time(),
        "files": [str(f) for f in resources.files] if resources else [],
        "dirs": [str(d) for d in resources.dirs] if resources else [],
        "block": None if block is None else {
            "path": str(block.path), "begin": _b64(block.begin), "inserted": _b64(block.inserted),
            "separator": _b64(block.separator), "created": block.created},
    }
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(record, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _owner_alive(rec: dict) -> bool:
    pid = rec.get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return False
    try:
        return abs(psutil.Process(pid).create_time() - float(rec.get("pid_started", 0))) < 1.0
    except (psutil.Error, ValueError):
        return False


def undo(path: Path) -> str | None:
    """Take out what the record says was put in, and delete the record; a sentence for the log."""
    from .context import BlockHandle, ContextFiles, remove_block

    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return f"Ignored an unreadable context record {path}."
    if _owner_alive(rec):
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
