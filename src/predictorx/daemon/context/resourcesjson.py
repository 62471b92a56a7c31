"""`.predictorx/project/resources.json` in the working directory (R-CTX-1): written never over a
file of the person's (ours carry ``"generated_by": "predictorx"``), through no symlink."""

from __future__ import annotations

import json
import os
import logging
from pathlib import Path
from typing import Any

from .files import write_atomic
from .types import GENERATED_BY, RESOURCES_JSON, ContextFiles, TaskContext, is_ours

log = logging.getLogger("predictorx.daemon.context")


def resources_document(ctx: TaskContext, task_id: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "project_id": ctx.project_id,
        "project_title": ctx.project_title,
        "project_description": ctx.project_description,
        "resources": [r.to_json() for r in ctx.resources],
        "generated_by": GENERATED_BY,
    }
    if task_id is not None:
        doc["task_id"] = task_id
    return doc


def write_resources_json(workdir: Path, ctx: TaskContext, *, task_id: str | None = None) -> ContextFiles:
    """Write `.predictorx/project/resources.json` under `workdir` (R-CTX-1).

    A file of the person's at that path (one without our marker) is left alone: the result's
    `skipped` says why and nothing is written. A stale file of ours (a crashed run) is replaced.
    Symlinks on the way are not followed, so nothing is ever written outside `workdir`.
    """
    workdir = Path(workdir)
    result = ContextFiles()
    target = workdir / RESOURCES_JSON
    for part in (workdir / RESOURCES_JSON.parts[0], workdir / Path(*RESOURCES_JSON.parts[:2]), target):
        if part.is_symlink():
            result.skipped = f"{part} is a symlink; not writing through it"
        elif part != target and part.exists() and not part.is_dir():
            result.skipped = f"{part} exists and is not a directory"
        if result.skipped:
            log.info("not writing %s: %s", RESOURCES_JSON, result.skipped)
            return result
    if target.exists() and not is_ours(target):
        result.skipped = f"{target} belongs to the user (no \"generated_by\": \"{GENERATED_BY}\"); left as is"
        log.info("not writing %s: %s", RESOURCES_JSON, result.skipped)
        return result

    try:
        for directory in (workdir / RESOURCES_JSON.parts[0], target.parent):
            if not directory.exists():
                directory.mkdir()
                result.dirs.append(directory)
        real = Path(os.path.realpath(workdir)) / RESOURCES_JSON  # write_atomic takes a real path
        write_atomic(real, (json.dumps(resources_document(ctx, task_id), indent=2, ensure_ascii=False) + "\n").encode())
        result.files.append(target)
    except BaseException:
        result.remove()
        raise
    return result


def planned_resources_json(workdir: Path) -> ContextFiles:
    """What `write_resources_json` would make in `workdir`: the file and the missing directories."""
    dirs = [d for d in (workdir / RESOURCES_JSON.parts[0], workdir / Path(*RESOURCES_JSON.parts[:2]))
            if not d.exists()]
    return ContextFiles(files=[workdir / RESOURCES_JSON], dirs=dirs)
