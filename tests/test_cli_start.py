"""The CLI starts fast (issue 23, item 9): people and agents run `predictorx` all day, so a command
imports what it runs and nothing more. `python -X importtime` shows which modules a command line
imports; the budget is the CPU time of the whole start (nearly all of it imports) against a bare
interpreter's, best of five — a ratio, and CPU rather than wall time, so that the machine's speed
and load cancel out. Wall-clock figures: bench/cli_start.py."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys

import pytest

LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \| *(\S+)$")
SERVER_SIDE = ("sqlalchemy", "fastapi", "starlette", "uvicorn", "alembic", "predictorx.server", "predictorx.service",
               "predictorx.store", "predictorx.daemon", "predictorx.workflows", "predictorx.workflowmcp")
ONE_REQUEST = ["issue", "list", "--output", "json"]
# What a command that makes one plain-http request must not import: the command line is
# cli/commandline.py, a table plain text (cli/output.py), the request a socket (apiclient.py);
# dataclasses and inspect are slow imports of the standard library (issue 23, item 9).
HEAVY = ("typer", "click", "rich", "pydantic", "pydantic_core", "httpx2", "httpcore2", "http.client", "email", "ssl",
         "dataclasses", "inspect")
ENV = {**os.environ, "PREDICTORX_SERVER_URL": "http://127.0.0.1:9", "PREDICTORX_TOKEN": "pxt_nobody"}


def imports(*args: str) -> set[str]:
    """The modules `python -X importtime ARGS` imports."""
    done = subprocess.run([sys.executable, "-X", "importtime", *args], env=ENV, capture_output=True, text=True,
                          timeout=60)
    return {m.group(1) for m in map(LINE.match, done.stderr.splitlines()) if m}


def cpu_ms(*args: str) -> float:
    """CPU milliseconds of `python ARGS` from start to exit, best of five."""
    best = float("inf")
    for _ in range(5):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, *args], env=ENV, capture_output=True, timeout=60)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    return best


@pytest.fixture(scope="module")
def bare() -> float:
    return cpu_ms("-c", "pass")


def loaded(modules: set[str], *prefixes: str) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_version_loads_no_library(bare: float) -> None:
    assert loaded(imports("-m", "predictorx", "version"), "typer", "click", "rich", "httpx2", "pydantic",
                  *SERVER_SIDE) == []
    took = cpu_ms("-m", "predictorx", "version")
    assert took <= 2.5 * bare + 5, f"`predictorx version` takes {took:.0f} ms of CPU, a bare interpreter {bare:.0f}"


def test_a_command_that_makes_one_request_loads_its_commands_only(bare: float) -> None:
    modules = imports("-m", "predictorx", *ONE_REQUEST)
    # No server code, no command-line or HTTP library, no other command group.
    assert loaded(modules, *HEAVY, "predictorx.resources", "predictorx.cli.projects",
                  "predictorx.cli.workflow_commands", *SERVER_SIDE) == []
    assert "predictorx.cli.issues" in modules and "socket" in modules
    # Today ~4.5× (before issue 23 ~28×; with typer, which built a pydantic adapter for every
    # option, ~16×). At load 6+ the small bare run's best CPU time moves least, so the ratio
    # drifts up there: the bound leaves that room; the module lists above are the sharp check.
    took = cpu_ms("-m", "predictorx", *ONE_REQUEST)
    assert took <= 9 * bare, f"`predictorx {' '.join(ONE_REQUEST)}` takes {took:.0f} ms of CPU, a bare interpreter {bare:.0f}"


def test_a_table_and_a_usage_error_load_no_library_either() -> None:
    """The table of `issue list` is plain text, and a mistyped option is answered without typer."""
    assert loaded(imports("-m", "predictorx", "issue", "list"), *HEAVY, *SERVER_SIDE) == []
    assert loaded(imports("-m", "predictorx", "issue", "list", "--no-such-option"), "typer", "click", "rich",
                  "pydantic", *SERVER_SIDE) == []


def test_no_module_imports_the_libraries_the_command_line_left() -> None:
    """typer (which imports pydantic) and rich are no longer dependencies: the commands are declared
    with cli/commandline.py, tables are plain text. A module importing them again fails here, not in
    a fresh clone."""
    import ast
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src" / "predictorx"
    found = []
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            found += [f"{path.relative_to(src)}: {n}" for n in names if n.split(".")[0] in ("typer", "rich", "click")]
    assert found == []
