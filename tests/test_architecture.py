"""The architecture's boundaries hold (issue 10 §5, issue 23): import-linter's contracts in
pyproject.toml (agents-room stands alone, the daemon only speaks HTTP, the server never imports the
daemon, the CLI is thin, the workflow engine is pure, routes and pages never import the store, no
cycles inside a package), no page imports a route, no source file grows past 600 lines, and no
function past 80 lines but those in tests/static/long-functions.txt, a list that only shrinks:

    .venv/bin/python tests/test_architecture.py --shrink-long-functions
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "src", ROOT / "agents-room" / "src"]
MAX_LINES = 600
MAX_FUNCTION_LINES = 80
LONG_FUNCTIONS = ROOT / "tests" / "static" / "long-functions.txt"


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


# Pages that still call a route module's functions; this list only shrinks (it is empty).
PAGES_CALLING_ROUTES: set[str] = set()


def test_no_page_imports_a_route_module():
    """A page and an API route doing the same thing call the same service use case: a page never
    calls a route function (issue 23 item 2)."""
    web = ROOT / "src" / "predictorx" / "server" / "web"
    found = {f"{path.relative_to(ROOT)} imports {m}" for path in web.rglob("*.py")
             for m in _imported_modules(path, "predictorx.server.web")
             if m.startswith("predictorx.server.routes.")}
    assert not found - PAGES_CALLING_ROUTES, "call the service's use case instead:\n" + "\n".join(
        sorted(found - PAGES_CALLING_ROUTES))
    assert not PAGES_CALLING_ROUTES - found, ("no longer imported — well done; take it off PAGES_CALLING_ROUTES:\n"
                                              + "\n".join(sorted(PAGES_CALLING_ROUTES - found)))


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


def function_lengths() -> dict[tuple[str, str], int]:
    """(file, dotted name) → lines from `def` to its last line, for every function and method."""
    out: dict[tuple[str, str], int] = {}

    def walk(node: ast.AST, prefix: str, rel: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    n = (child.end_lineno or child.lineno) - child.lineno + 1
                    out[(rel, name)] = max(n, out.get((rel, name), 0))
                walk(child, name + ".", rel)
            else:
                walk(child, prefix, rel)

    for src in SOURCES:
        for path in sorted(src.rglob("*.py")):
            if "migrations" not in path.parts:
                walk(ast.parse(path.read_text(encoding="utf-8")), "", str(path.relative_to(ROOT)))
    return out


def read_long_functions() -> dict[tuple[str, str], int]:
    allowed: dict[tuple[str, str], int] = {}
    for line in LONG_FUNCTIONS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            path, name, n = line.split()
            allowed[(path, name)] = int(n)
    return allowed


def test_no_function_grows_past_80_lines():
    """A new function stays under 80 lines; today's longer ones (the list) may only get shorter."""
    now = {k: n for k, n in function_lengths().items() if n > MAX_FUNCTION_LINES}
    allowed = read_long_functions()
    grown = sorted(f"{p} {name}: {n} lines" + (f" (listed at {allowed[(p, name)]})" if (p, name) in allowed else "")
                   for (p, name), n in now.items() if n > allowed.get((p, name), MAX_FUNCTION_LINES))
    assert not grown, (f"functions over {MAX_FUNCTION_LINES} lines (split them; tests/static/long-functions.txt "
                       "only shrinks):\n" + "\n".join(grown))
    shrunk = sorted(f"{p} {name}: {n} → {now.get((p, name), 'under the cap or gone')}"
                    for (p, name), n in allowed.items() if now.get((p, name), 0) < n)
    assert not shrunk, ("shorter than tests/static/long-functions.txt says — well done; lower it with "
                        "`.venv/bin/python tests/test_architecture.py --shrink-long-functions`:\n" + "\n".join(shrunk))


def test_test_modules_outside_packages_have_unique_names():
    """pytest imports a test file in a folder without __init__.py by its bare name: two such files
    with one name (tests/daemon/test_x.py and agents-room/tests/test_x.py) stop the whole run at
    collection, and only when both are collected — a helper running its own folder never sees it."""
    seen: dict[str, list[str]] = {}
    for base in (ROOT / "tests", ROOT / "agents-room" / "tests"):
        for f in base.rglob("test_*.py"):
            if "node_modules" not in f.parts and not (f.parent / "__init__.py").exists():
                seen.setdefault(f.name, []).append(str(f.relative_to(ROOT)))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, f"rename one of each (pytest cannot collect both): {clashes}"


def write_long_functions(lengths: dict[tuple[str, str], int]) -> None:
    rows = [f"{p} {name} {n}" for (p, name), n in sorted(lengths.items()) if n > MAX_FUNCTION_LINES]
    LONG_FUNCTIONS.write_text(f"# functions over {MAX_FUNCTION_LINES} lines allowed, with their length "
                              "(tests/test_architecture.py); this file only shrinks\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--shrink-long-functions"]:
        sys.exit("usage: tests/test_architecture.py --shrink-long-functions")
    current = function_lengths()
    if LONG_FUNCTIONS.exists():
        old = read_long_functions()
        if any(n > old.get(k, MAX_FUNCTION_LINES) for k, n in current.items() if n > MAX_FUNCTION_LINES):
            sys.exit("a function is longer than the list allows: split it first (the list only shrinks)")
    write_long_functions(current)
    print(f"{LONG_FUNCTIONS.relative_to(ROOT)}: "
          f"{sum(1 for n in current.values() if n > MAX_FUNCTION_LINES)} functions over {MAX_FUNCTION_LINES} lines")


def test_no_bench_module_hides_an_installed_package():
    """bench/ goes on sys.path (the benches, and tests that load them): a bench named like a
    package — `bench/acp.py` beside agent-client-protocol's `acp` — made every later `import acp`
    in the pytest run load the bench, and the ACP adapter tests failed (fresh-clone run, 2026-12-05)."""
    from importlib.machinery import PathFinder

    bench, tests = (ROOT / "bench").resolve(), (ROOT / "tests").resolve()
    # what a run imports from: the standard library, site-packages, src/ (not bench/ or the tests' own folders)
    elsewhere = [p for p in sys.path if Path(p or ".").resolve() not in (bench, tests, ROOT.resolve())]
    clashes = [m.stem for m in bench.glob("*.py") if PathFinder.find_spec(m.stem, elsewhere) is not None]
    assert clashes == [], f"bench modules named like importable packages: {clashes}"
