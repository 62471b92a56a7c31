"""What a sandboxed run's start costs the daemon (issue 30): the bwrap probe once, not per task,
and the plan's path checks on text, with the same answers as before."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path, PurePosixPath

import pytest

from predictorx.daemon import sandbox, seccomp

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


X32_GETPID = [sys.executable, "-S", "-c", "import ctypes; ctypes.CDLL(None).syscall(0x40000000 | 39); print('ran')"]


@needs_bwrap
@pytest.mark.skipif(seccomp.machine() != "x86_64", reason="the x32 bit is x86_64's")
async def test_a_runs_filter_reaches_bwrap_as_the_daemons_fd_without_a_shell(tmp_path):
    """A run's seccomp filter was opened on fd 9 by a /bin/sh started only for that (~0.5 ms of CPU
    per run, issue 30): the plan's `launch` opens it in the daemon and the start passes that fd.
    The filter is in force (a call with the x32 bit kills the process) and no shell comes first."""
    from predictorx.agents.process import ProcessRequest, run_process
    from predictorx.agents.spec import sandboxed

    plan = sandbox.SandboxPlan(bwrap=sandbox.bwrap_executable(), provider="command", readable=[tmp_path],
                               home=tmp_path / "home", seccomp=sandbox.write_filter(tmp_path))
    env = {"PATH": "/usr/bin:/bin"}
    lines: list[str] = []

    async def on_line(line: str) -> None:
        lines.append(line)

    for argv, ran in ((X32_GETPID, False), ([*X32_GETPID[:3], "print('ran')"], True)):
        command, fds = sandboxed(plan, argv, env)
        assert command[0] == plan.bwrap and len(fds) == 1
        assert command[command.index("--seccomp") + 1] == str(fds[0])
        lines.clear()
        request = ProcessRequest(argv=command, cwd=tmp_path, env=env, stdin_data=None, pass_fds=fds, timeout_s=60,
                                 stream_log=tmp_path / "x.stream.jsonl", stderr_log=tmp_path / "x.stderr.log")
        try:
            outcome = await run_process(request, on_line, asyncio.Event())
        finally:
            os.close(fds[0])
        assert (outcome.exit_code == 0 and lines == ["ran"]) if ran else (outcome.exit_code != 0 and not lines), \
            (outcome, lines, (tmp_path / "x.stderr.log").read_text())
    assert plan(X32_GETPID, env)[0] == "/bin/sh"  # (a plan called as before still opens it so)


def test_a_plan_resolves_each_path_once_and_keeps_its_mounts(tmp_path, monkeypatch):
    """A PATH entry was resolved again among the mounts, and every `_under` turned each root into
    text again (issue 30): each path is resolved once per command line now, the mounts the same."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "work").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "bin")
    plan = sandbox.SandboxPlan(bwrap="bwrap", provider="command", writable=[tmp_path / "work", tmp_path / "link"],
                               readable=[tmp_path / "bin", tmp_path / "link"], hidden=[tmp_path / "work" / "secret"],
                               home=tmp_path / "home", chdir=tmp_path / "work")
    env = {"PATH": f"{tmp_path / 'link'}:{tmp_path / 'bin'}:/usr/bin"}
    expected = plan.arguments(["/bin/true"], env)
    (tmp_path / "work" / "secret").mkdir()
    covered = plan.arguments(["/bin/true"], env)
    assert covered == [*expected[:-2], "--tmpfs", str(tmp_path / "work" / "secret"), *expected[-2:]]
    resolved: list[str] = []
    real = os.path.realpath

    def counting(path, *args, **kwargs):
        resolved.append(os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os.path, "realpath", counting)
    assert plan.arguments(["/bin/true"], env) == covered
    again = sorted({p for p in resolved if resolved.count(p) > 1})
    assert not again, again
    assert str(tmp_path / "bin") not in resolved  # (found as its link's target: already resolved)
