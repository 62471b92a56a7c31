"""Compiled bytecode for the Python processes a run starts from Predictor X: the `predictorx mcp`
front and what it imports when the agent calls a tool, and the `predictorx` commands an agent runs.

Without the package's `__pycache__` (an editable install, `PYTHONDONTWRITEBYTECODE=1`, or a
sandbox where the package is mounted read-only) every such process compiled each module it
imports again. The daemon, outside every sandbox, compiles the package once at its start, as
`pip install` does for a wheel: only what is missing or stale (~0.4 s of CPU the first time,
~0.02 s of stats after). A package folder it may not write (a system install, which pip compiled)
is left as it is. agents-room compiles its own package the same way (its `bytecode.py`)."""

from __future__ import annotations

import compileall
import logging
from pathlib import Path

log = logging.getLogger("predictorx.daemon")


def ensure(package: Path | None = None) -> bool:
    """Compile Predictor X's modules (or `package`'s) whose bytecode is missing or stale; whether
    all now have it."""
    package = package or Path(__file__).resolve().parents[1]
    try:
        ok = bool(compileall.compile_dir(str(package), quiet=2, workers=1))
    except OSError as e:
        log.info("Predictor X's bytecode was not compiled (%s): its run processes compile as they import", e)
        return False
    return ok
