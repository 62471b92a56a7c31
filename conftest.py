"""The whole test session runs in temporary dirs, and fails if the person's own state changed.

Loaded by pytest before any test module, fixture or app exists (this is the rootdir's conftest):
HOME, the XDG dirs, PREDICTORX_HOME, the workspaces root, the lock dir and AGENTS_ROOM_DB point
into one temporary dir for the whole session, so even a module- or session-scoped fixture (which
runs before any function-scoped autouse fixture) cannot write config.json into the real state dir.

The guard: the real state dir, lock dir, workspaces root and agents-room store are fingerprinted
(stat only, nothing is read) when the session starts and compared when it ends; any change makes
the run fail with the paths that changed.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import platformdirs
import pytest

# The forge stand-ins' fixtures are imported by some test modules and named by others' `pytest_plugins`:
# rewritten at their first import, so pytest need not warn that it could not rewrite them later.
pytest.register_assert_rewrite("forgestand.fixtures")


def pytest_configure(config: pytest.Config) -> None:
    # A helper module pytest cannot rewrite would run its asserts bare: an error, not a warning.
    config.addinivalue_line("filterwarnings", "error::pytest.PytestAssertRewriteWarning")

#: What `python3` on PATH runs for the whole session: the interpreter under the suite (outside its
#: venv, like a plain `python3`), so the fake agent CLIs (`#!/usr/bin/env -S python3 -S`, started for
#: every probe and run) do not go through a version manager's shim first — pyenv's costs a bash
#: and a `pyenv exec` per start, twice the CPU of the fake itself.
PYTHON3 = Path(os.path.realpath(sys.executable))


def person_state() -> dict[str, Path]:
    """Where the person's own Predictor X and agents-room keep state, by the environment as it is."""
    env = os.environ
    home = Path(env.get("HOME") or Path.home())
    return {
        "state dir": Path(env["PREDICTORX_HOME"]).expanduser() if env.get("PREDICTORX_HOME")
        else Path(platformdirs.user_data_dir("predictorx")),
        "lock dir": Path(env["PREDICTORX_LOCK_DIR"]).expanduser() if env.get("PREDICTORX_LOCK_DIR")
        else Path(platformdirs.user_cache_dir("predictorx")) / "locks",
        "workspaces root": Path(env["PREDICTORX_WORKSPACES_ROOT"]).expanduser() if env.get("PREDICTORX_WORKSPACES_ROOT")
        else home / "predictorx_workspaces",
        "agents-room store": (Path(env["AGENTS_ROOM_DB"]).expanduser().parent if env.get("AGENTS_ROOM_DB")
                              else home / ".agents-room"),
    }


# A Predictor X or agents-room the person runs meanwhile writes these all the time (SQLite pages,
# its log): only their appearing or disappearing counts, not their size or time.
LIVE_SUFFIXES = (".db", ".db-wal", ".db-shm", ".db-journal", ".log")


def fingerprint(root: Path) -> dict[str, tuple]:
    """Every path under `root` with its type, size and modification time (lstat: nothing is read)."""
    seen: dict[str, tuple] = {}
    if not os.path.lexists(root):
        return seen
    stack = [root]
    while stack:
        path = stack.pop()
        try:
            st = path.lstat()
        except OSError:
            continue
        live = path.name.endswith(LIVE_SUFFIXES)
        seen[str(path)] = (st.st_mode >> 12,) if live else (st.st_mode, st.st_size, st.st_mtime_ns)
        if path.is_dir() and not path.is_symlink():
            try:
                stack.extend(path.iterdir())
            except OSError:
                continue
    return seen


def changes(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    out = [f"created {p}" for p in sorted(after.keys() - before.keys())]
    out += [f"removed {p}" for p in sorted(before.keys() - after.keys())]
    out += [f"changed {p}" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]
            and not (Path(p).is_dir() and before[p][0] == after[p][0])]  # a dir's own mtime follows its entries
    return out


def isolate(base: Path) -> None:
    """Point every per-person location at `base` for this process and everything it starts."""
    home = base / "home"
    for var, path in (("HOME", home), ("XDG_DATA_HOME", home / ".local" / "share"),
                      ("XDG_CONFIG_HOME", home / ".config"), ("XDG_CACHE_HOME", home / ".cache"),
                      ("XDG_STATE_HOME", home / ".local" / "state"), ("PREDICTORX_HOME", base / "state"),
                      ("PREDICTORX_WORKSPACES_ROOT", base / "workspaces"), ("PREDICTORX_LOCK_DIR", base / "locks"),
                      ("AGENTS_ROOM_DB", base / "agents-room" / "room.db")):
        os.environ[var] = str(path)
    home.mkdir(parents=True)
    python_dir = base / "python3-bin"
    python_dir.mkdir()
    (python_dir / "python3").symlink_to(PYTHON3)
    os.environ["PATH"] = os.pathsep.join([str(python_dir), os.environ.get("PATH", os.defpath)])
    for var in ("PREDICTORX_SERVER_URL", "PREDICTORX_TOKEN", "PREDICTORX_DATABASE_URL", "PREDICTORX_WORKSPACE"):
        os.environ.pop(var, None)
    # git finds no ~/.gitconfig in the new HOME: commits made by session-wide fixtures need a name.
    for var, value in (("GIT_AUTHOR_NAME", "Test"), ("GIT_AUTHOR_EMAIL", "test@example.com"),
                       ("GIT_COMMITTER_NAME", "Test"), ("GIT_COMMITTER_EMAIL", "test@example.com")):
        os.environ.setdefault(var, value)


# At import, before pytest collects a single test module. A pytest-xdist worker inherits the
# environment its controller had already isolated: it isolates itself again (a dir of its own),
# and the controller, whose session ends after every worker's, alone checks the person's state.
WORKER = os.environ.get("PYTEST_XDIST_WORKER")
PERSON_STATE = {} if WORKER else person_state()
BEFORE = {name: fingerprint(path) for name, path in PERSON_STATE.items()}
SESSION_DIR = Path(tempfile.mkdtemp(prefix=f"predictorx-tests-{WORKER or 'main'}-"))
isolate(SESSION_DIR)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    found = [f"{name}: {line}" for name, path in PERSON_STATE.items()
             for line in changes(BEFORE[name], fingerprint(path))]
    shutil.rmtree(SESSION_DIR, ignore_errors=True)
    if not found:
        return
    shown = found[:20] + ([f"… and {len(found) - 20} more"] if len(found) > 20 else [])
    message = ("the test session changed the person's own state, which no test may touch "
               "(a test or fixture wrote outside its temporary dirs; if a Predictor X or agents-room of "
               "yours was running meanwhile, stop it and run again):\n  " + "\n  ".join(shown))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_sep("=", "person's state changed", red=True, bold=True)
        reporter.write_line(message)
    else:
        print(message)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
