"""The architecture's boundaries hold (issue 10 §5): import-linter's contracts in pyproject.toml
(agents-room stands alone, the daemon only speaks HTTP, the server never imports the daemon, the
CLI is thin, no cycles inside a package), and no source file grows past 600 lines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "src", ROOT / "agents-room" / "src"]
MAX_LINES = 600


def test_import_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    assert lint.exists(), "import-linter is part of the dev extra; run `make test` to install it"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in SOURCES)}
    res = subprocess.run([str(lint), "--no-cache", str(ROOT / "pyproject.toml")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]


def test_no_source_file_over_600_lines():
    too_long = []
    for src in SOURCES:
        for path in src.rglob("*.py"):
            if "migrations" in path.parts:
                continue  # generated Alembic revisions are data, not design
            n = sum(1 for _ in path.open(encoding="utf-8"))
            if n > MAX_LINES:
                too_long.append(f"{path.relative_to(ROOT)}: {n} lines")
    assert not too_long, "split these into one module per concept: " + "; ".join(too_long)
