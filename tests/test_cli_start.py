"""The CLI starts fast (issue 23, item 9): people and agents run `predictorx` all day, so a command
imports what it runs and nothing more. Checked with `python -X importtime`: which modules a command
line imports, and their cumulative import time against a bare interpreter's (a ratio: the machine's
speed and load cancel out; best of five). Wall-clock figures: bench/cli_start.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

LINE = re.compile(r"^import time:\s+(\d+) \|\s+\d+ \|( *)(\S+)$")
SERVER_SIDE = ("sqlalchemy", "fastapi", "starlette", "uvicorn", "alembic", "predictorx.server", "predictorx.service",
               "predictorx.store", "predictorx.daemon", "predictorx.harness")
ONE_REQUEST = ["issue", "list", "--output", "json"]


def imports(*args: str) -> tuple[set[str], int]:
    """(the modules `python -X importtime ARGS` imports, their summed import time in µs), best of 5."""
    env = {**os.environ, "PREDICTORX_SERVER_URL": "http://127.0.0.1:9", "PREDICTORX_TOKEN": "pxt_nobody"}
    best: tuple[set[str], int] | None = None
    for _ in range(5):
        done = subprocess.run([sys.executable, "-X", "importtime", *args], env=env, capture_output=True, text=True,
                              timeout=60)
        found = [m.groups() for m in map(LINE.match, done.stderr.splitlines()) if m]
        run = ({name for _, _, name in found}, sum(int(us) for us, _, _ in found))
        best = run if best is None or run[1] < best[1] else best
    assert best is not None
    return best


@pytest.fixture(scope="module")
def bare() -> int:
    return imports("-c", "pass")[1]


def loaded(modules: set[str], *prefixes: str) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_version_loads_no_library(bare: int) -> None:
    modules, took = imports("-m", "predictorx", "version")
    assert loaded(modules, "typer", "click", "rich", "httpx2", "pydantic", *SERVER_SIDE) == []
    assert took <= 4 * bare + 5_000, f"`predictorx version` imports for {took} µs, a bare interpreter {bare} µs"


def test_a_command_that_makes_one_request_loads_its_commands_only(bare: int) -> None:
    modules, took = imports("-m", "predictorx", *ONE_REQUEST)
    # No server code, no HTTP library (http.client does), no tables for JSON, no other command group.
    assert loaded(modules, "httpx2", "httpcore2", "rich", "predictorx.resources", "predictorx.cli.projects",
                  "predictorx.cli.harness", *SERVER_SIDE) == []
    assert "http.client" in modules and "predictorx.cli.issues" in modules
    # Today ~25× (typer's own start, which coerces every option through pydantic, is most of it);
    # before issue 23 ~50×.
    assert took <= 45 * bare, f"`predictorx {' '.join(ONE_REQUEST)}` imports for {took} µs, a bare interpreter {bare} µs"
