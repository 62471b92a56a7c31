"""The daemon compiles Predictor X's bytecode at its start (issue 30), so a run's own Python
processes (the `predictorx mcp` front's tool calls, the agent's `predictorx` commands) do not
compile every module they import again where imports may not write it (PYTHONDONTWRITEBYTECODE,
an editable install, a sandbox mounting the package read-only)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib.util import cache_from_source
from pathlib import Path

import predictorx
from predictorx.daemon import bytecode


def test_the_package_is_compiled_once_and_then_only_looked_at(tmp_path):
    package = tmp_path / "src" / "predictorx"
    shutil.copytree(Path(predictorx.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    modules = sorted(package.rglob("*.py"))
    assert not any(Path(cache_from_source(str(m))).exists() for m in modules)
    assert bytecode.ensure(package) is True
    assert all(Path(cache_from_source(str(m))).is_file() for m in modules)
    # A process started as the runs' are (bytecode not written on import) reads it.
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    run = subprocess.run([sys.executable, "-v", "-c", "import predictorx.apiclient"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    compiled = re.findall(r"^# code object from (\S+/predictorx/\S+\.py)$", run.stderr, re.M)
    assert compiled == [] and f"{package}/__pycache__" in run.stderr

