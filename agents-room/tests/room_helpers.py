"""Helpers the tests import by name (``conftest`` is ambiguous beside Predictor X's own tests)."""

import os
import subprocess
import sys

PY = sys.executable


def run_cli(*args: str, input: str | None = None, env: dict | None = None, cwd=None, timeout: float = 30):
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run(
        [PY, "-m", "agents_room", *args], input=input, capture_output=True, text=True, env=e, cwd=cwd, timeout=timeout
    )
