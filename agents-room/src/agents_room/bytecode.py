"""Compiled bytecode for the processes a run starts from this package (its hooks, its MCP front).

A hook is a Python process on every tool call. Without this package's ``__pycache__`` (an
editable install, ``PYTHONDONTWRITEBYTECODE=1``, or a sandbox where the package is read-only)
each one compiled every module it imports again: ~47 ms of CPU per hook call against ~19 ms with
bytecode (issue 30). ``run-config``, which a platform runs outside the agent's sandbox before the
run, compiles the package once, as ``pip install`` does for a wheel: only what is missing or stale,
a stat per module when all is there. A package folder it may not write (a system install, which
pip compiled) is left as it is.
"""

from __future__ import annotations

import os

_checked = False


def ensure() -> bool:
    """Compile this package's modules whose bytecode is missing or stale (once per process);
    whether all of them now have it."""
    global _checked
    if _checked:
        return True
    import compileall

    package = os.path.dirname(os.path.abspath(__file__))
    try:
        ok = bool(compileall.compile_dir(package, maxlevels=0, quiet=2, workers=1))
    except OSError:
        ok = False
    _checked = ok
    return ok
