"""The architecture's boundaries hold (issue 10 §5, issue 23): import-linter's contracts in
pyproject.toml (agents-room stands alone, the daemon only speaks HTTP, the server never imports the
daemon, the CLI is thin, the workflow engine is pure, routes and pages never import the store, no
cycles inside a package), no page imports a route, and no source file grows past 600 lines."""

from __future__ import annotations

import ast
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


def _imported_modules(path: Path, package: str) -> set[str]:
    """Every module `path` imports (relative imports resolved against `package`), at any depth."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def test_no_page_imports_a_route_module():
    """A page and an API route doing the same thing call the same service use case: a page never
    calls a route function (issue 23 item 2)."""
    web = ROOT / "src" / "predictorx" / "server" / "web"
    offenders = sorted(f"{path.relative_to(ROOT)} imports {m}" for path in web.rglob("*.py")
                       for m in _imported_modules(path, "predictorx.server.web")
                       if m == "predictorx.server.routes" or m.startswith("predictorx.server.routes."))
    assert not offenders, "call the service's use case instead:\n" + "\n".join(offenders)


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


def test_the_daemon_is_a_run_host(tmp_path, monkeypatch):
    """`TaskRun` depends on the RunHost protocol, and the real daemon provides all of it."""
    monkeypatch.setenv("PREDICTORX_HOME", str(tmp_path))
    from predictorx.daemon.host import RunHost
    from predictorx.daemon.main import Daemon
    from predictorx.daemon.serverapi import ServerApi

    daemon = Daemon(ServerApi("http://127.0.0.1:9", "pxd_x"), workspaces_root=tmp_path / "ws")
    wanted = set(RunHost.__annotations__) | {n for n in vars(RunHost) if not n.startswith("_")}
    assert wanted and not [n for n in sorted(wanted) if not hasattr(daemon, n)]
