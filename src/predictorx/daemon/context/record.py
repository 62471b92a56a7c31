"""The undo record of a task's project context, kept in its env root (finding 13, R-LD-6).

`prepare_context` writes this record *before* it changes the person's folder (the instruction
block, `.predictorx/project/resources.json`) and deletes it after taking them out again. A daemon
that is killed in between (kill -9, power loss) leaves the record behind, and the next daemon
start (`recovery.recover`) takes the block and the file out exactly as the normal end would have: the
person's file is byte for byte what it was.
"""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path

import psutil

from .types import BlockHandle, ContextFiles

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


def owner_alive(rec: dict) -> bool:
    pid = rec.get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return False
    try:
        return abs(psutil.Process(pid).create_time() - float(rec.get("pid_started", 0))) < 1.0
    except (psutil.Error, ValueError):
        return False
