"""How an agent process is started (issue 9): without forking the whole daemon, dying with it,
and with a prompt that may be written after the start."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from predictorx.agents import process
from predictorx.agents.process import ProcessRequest, run_process

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux process semantics")


def _request(tmp_path: Path, argv: list[str], stdin_data=None) -> ProcessRequest:
    return ProcessRequest(argv=argv, cwd=tmp_path, env=dict(os.environ), stdin_data=stdin_data,
                          stream_log=tmp_path / "logs" / "x.stream.jsonl", stderr_log=tmp_path / "logs" / "x.stderr.log",
                          timeout_s=30)


async def test_a_late_prompt_is_written_after_the_start(tmp_path: Path) -> None:
    started = tmp_path / "started"
    script = f"import sys; open({str(started)!r}, 'w').close(); print(sys.stdin.read().upper())"
    release = asyncio.Event()

    async def prompt() -> bytes:
        await release.wait()
        return b"the prompt"

    lines: list[str] = []

    async def on_line(line: str) -> None:
        lines.append(line)
    run = asyncio.ensure_future(run_process(_request(tmp_path, [sys.executable, "-c", script], prompt()),
                                            on_line, asyncio.Event()))
    deadline = time.monotonic() + 20
    while not started.exists():  # the agent runs while its prompt is still being made
        assert time.monotonic() < deadline and not run.done(), "the agent did not start before its prompt"
        await asyncio.sleep(0.02)
    release.set()
    outcome = await run
    assert outcome.exit_code == 0 and lines == ["THE PROMPT"]


async def test_a_prompt_that_fails_leaves_the_agent_an_empty_stdin(tmp_path: Path) -> None:
    async def prompt() -> bytes:
        raise RuntimeError("the running report was refused")

    lines: list[str] = []

    async def on_line(line: str) -> None:
        lines.append(line)
    script = "import sys; print(repr(sys.stdin.read()))"
    outcome = await run_process(_request(tmp_path, [sys.executable, "-c", script], prompt()), on_line, asyncio.Event())
    assert outcome.exit_code == 0 and lines == ["''"]


def test_agents_start_without_a_preexec_function(tmp_path: Path) -> None:
    """A preexec_fn makes Python fork the whole daemon (~10 ms at 70 MB, on every task's start);
    setpriv sets the parent-death signal instead, so the daemon uses vfork."""
    assert process._SETPRIV, "util-linux's setpriv is on every Debian system"
    argv, launch = process._launch(_request(tmp_path, ["sh", "-c", "true"]))
    assert "preexec_fn" not in launch and launch["umask"] == process._AGENT_UMASK
    assert argv[:4] == [process._SETPRIV, "--pdeathsig", "KILL", "--"] and Path(argv[4]).name == "sh"


def test_a_program_that_dies_with_its_parent_by_itself_starts_without_setpriv(tmp_path: Path) -> None:
    """The sandbox's bwrap has --die-with-parent: setpriv before it was one more exec per run
    (~1.5 ms of CPU, issue 30). Its umask still reaches it."""
    request = _request(tmp_path, ["sh", "-c", "true"])
    request.dies_with_parent = True
    argv, launch = process._launch(request)
    assert Path(argv[0]).name == "sh" and argv[1:] == ["-c", "true"] and process._SETPRIV not in argv
    assert "preexec_fn" not in launch and launch["umask"] == process._AGENT_UMASK


def test_a_sandbox_plan_dies_with_its_parent_and_a_plain_wrapper_does_not(tmp_path: Path) -> None:
    from predictorx.agents.spec import dies_with_parent
    from predictorx.daemon.sandbox import SandboxPlan

    plan = SandboxPlan(bwrap="/usr/bin/bwrap", provider="claude")
    assert "--die-with-parent" in plan.arguments(["true"], {}) and dies_with_parent(plan)
    assert not dies_with_parent(lambda argv, env: argv) and not dies_with_parent(None)


@pytest.mark.parametrize("in_bwrap", [False, True], ids=["setpriv", "bwrap-die-with-parent"])
def test_the_agent_dies_with_its_daemon(tmp_path: Path, in_bwrap: bool) -> None:
    pid_file = tmp_path / "agent.pid"
    bwrap = shutil.which("bwrap")
    if in_bwrap and bwrap is None:
        pytest.fail("bubblewrap is required (apt-get install bubblewrap)")
    argv = ["sh", "-c", f"echo $$ > {pid_file}; exec sleep 600"]
    if in_bwrap:  # no PID namespace: $$ is the agent's pid outside
        argv = [str(bwrap), "--dev-bind", "/", "/", "--die-with-parent", "--", *argv]
    daemon = f"""
import asyncio, os, sys
from pathlib import Path
from predictorx.agents.process import ProcessRequest, run_process
async def main():
    req = ProcessRequest(argv={argv!r}, cwd=Path({str(tmp_path)!r}),
                         env=dict(os.environ), stdin_data=None, stream_log=Path({str(tmp_path)!r}) / "s.log",
                         stderr_log=Path({str(tmp_path)!r}) / "e.log", dies_with_parent={in_bwrap!r})
    async def on_line(line): pass
    await run_process(req, on_line, asyncio.Event())
asyncio.run(main())
"""
    proc = subprocess.Popen([sys.executable, "-c", daemon])
    try:
        deadline = time.monotonic() + 20
        while not (pid_file.exists() and pid_file.read_text().strip()):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
        agent = psutil.Process(int(pid_file.read_text()))
        proc.send_signal(signal.SIGKILL)  # no cleanup of the daemon's runs
        proc.wait(10)
        agent.wait(5)  # raises TimeoutExpired if the kernel did not kill it
    finally:
        proc.kill()


async def test_a_relative_command_is_found_in_the_agents_folder(tmp_path: Path) -> None:
    tool = tmp_path / "bin" / "tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho found\n")
    tool.chmod(0o755)
    lines: list[str] = []

    async def on_line(line: str) -> None:
        lines.append(line)
    outcome = await run_process(_request(tmp_path, ["./bin/tool"]), on_line, asyncio.Event())
    assert outcome.exit_code == 0 and lines == ["found"]


async def test_a_command_that_cannot_be_run_says_why(tmp_path: Path) -> None:
    not_executable = tmp_path / "tool"
    not_executable.write_text("#!/bin/sh\n")
    not_executable.chmod(0o644)

    async def on_line(line: str) -> None:
        pass
    missing = await run_process(_request(tmp_path, ["no-such-agent-cli"]), on_line, asyncio.Event())
    assert missing.spawn_error and missing.spawn_error.startswith("executable not found: 'no-such-agent-cli'")
    if os.geteuid() != 0:  # (root may execute anything with an x bit, and reads past 0644)
        refused = await run_process(_request(tmp_path, [str(not_executable)]), on_line, asyncio.Event())
        assert refused.spawn_error and "could not start" in refused.spawn_error
