"""Writing a file in the person's folder whole or not at all, keeping their permissions on it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.predictorx-{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        if path.exists():
            shutil.copymode(path, tmp)  # keep the person's permissions on their file
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
