"""What a sandboxed run's start costs the daemon (issue 30): the bwrap probe once, not per task,
and the plan's path checks on text, with the same answers as before."""

from __future__ import annotations

import os
import shutil
from pathlib import Path, PurePosixPath

import pytest

from predictorx.daemon import sandbox

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def _counting_bwrap(tmp_path: Path, name: str, real: str | None) -> tuple[Path, Path]:
    """A bwrap that notes each start in a file, then runs the real one (or fails, without one)."""
    log = tmp_path / f"{name}.log"
    script = tmp_path / name
    body = f'exec {real} "$@"' if real else 'echo "no namespaces here" >&2; exit 1'
    script.write_text(f'#!/bin/sh\necho started >> {log}\n{body}\n')
    script.chmod(0o755)
    return script, log


def _starts(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


@needs_bwrap
def test_a_probe_that_worked_is_not_run_again_for_each_task(tmp_path, monkeypatch):
    script, log = _counting_bwrap(tmp_path, "bwrap-ok", shutil.which("bwrap"))
    monkeypatch.setenv(sandbox.BWRAP_ENV, str(script))
    monkeypatch.setattr(sandbox, "_PROBED_OK", {})
    assert sandbox.bwrap_problem() is None
    assert sandbox.bwrap_problem() is None and sandbox.bwrap_problem() is None
    assert _starts(log) == 1
    os.utime(script, ns=(1, 1))  # another executable at that path: probed again
    assert sandbox.bwrap_problem() is None
    assert _starts(log) == 2


def test_a_probe_that_failed_is_run_again_each_time(tmp_path, monkeypatch):
    script, log = _counting_bwrap(tmp_path, "bwrap-broken", None)
    monkeypatch.setenv(sandbox.BWRAP_ENV, str(script))
    monkeypatch.setattr(sandbox, "_PROBED_OK", {})
    for _ in range(3):
        problem = sandbox.bwrap_problem()
        assert problem is not None and "no namespaces here" in problem
    assert _starts(log) == 3


@pytest.mark.parametrize("path", ["/", "/etc", "/etc/passwd", "/etcetera", "/home/u/.config/claude",
                                  "/home/u/.config", "/home/u/.configx/y", "/opt/a/b/c/d", "/usr"])
def test_under_answers_as_pathlibs_parents(path):
    roots = [Path(r) for r in ("/etc", "/home/u/.config", "/opt/a", "/srv/")]
    expected = any(PurePosixPath(path) == r or r in PurePosixPath(path).parents for r in roots)
    assert sandbox._under(Path(path), roots) is expected
    assert sandbox._under(Path(path), [Path("/")]) is True
