"""The one interface every agent CLI is driven through (R-EX-3).

An adapter knows three things about its CLI: how to launch it (`build_argv`, `stdin_payload`,
`build_env`), how to read one line of its stream (`parse_line`, pure), and what its end means
(`conclude`). Running, logging and stopping the process is shared (`process.run_process`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import signal
import subprocess
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import Any, ClassVar

from . import message as m
from .message import AgentMessage
from .process import ProcessOutcome, ProcessRequest, run_process
from .result import RunResult, RunStatus
from .spec import RunSpec, dies_with_parent, sandboxed
from .stream_state import StreamState
from .usage import USAGE_EVENT, usage_news

log = logging.getLogger(__name__)

MessageHandler = Callable[[AgentMessage], Awaitable[None]]

PROBE_TIMEOUT_S = 10.0
STDERR_TAIL_IN_REASON = 1500


class AgentAdapter:
    """Base adapter. Subclasses set the class attributes and implement `build_argv`/`parse_line`."""

    #: The provider name agents are created with (`--provider claude`).
    provider: ClassVar[str] = ""
    #: The executable looked up on PATH; None for providers that run whatever they are given.
    executable: ClassVar[str | None] = None
    #: The file in the working directory the CLI reads its standing instructions from (R-CTX-2).
    instruction_file: ClassVar[str] = "AGENTS.md"
    #: What this adapter can do, registered with the runtime (`resume`, `model`, `usage`, …).
    capabilities: ClassVar[tuple[str, ...]] = ()
    #: Flags that let the CLI act without a person to approve each tool call: a daemon runs
    #: agents unattended, so without them an agent could read the code but never change it.
    unattended_args: ClassVar[tuple[str, ...]] = ()
    #: The CLI finds a session only from the folder it ran in (R-EX-10): resumed there only.
    sessions_per_folder: ClassVar[bool] = False
    #: Variables of the daemon's environment the agent must not inherit.
    scrubbed_env: ClassVar[tuple[str, ...]] = ()

    # -- discovery ------------------------------------------------------------------------------
    def locate(self, path: str | None = None) -> str | None:
        """The executable's full path on `path` (default: the daemon's PATH), or None."""
        if not self.executable:
            return None
        return shutil.which(self.executable, path=path)

    def probe(self, path: str | None = None) -> str | None:
        """Run `<exe> --version` (bounded by a timeout); the first line it prints, or None.

        `path` is the executable to ask; by default the one found on PATH.
        """
        exe = path or self.locate()
        if not exe:
            return None
        try:
            proc = subprocess.Popen(
                [exe, "--version"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError:
            return None
        try:
            out, err = proc.communicate(timeout=PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            try:
                proc.communicate(timeout=PROBE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=PROBE_TIMEOUT_S)
            return None
        finally:
            _kill_group(proc.pid)  # `--version` has no business leaving anything behind
        if proc.returncode != 0:
            return None
        for line in (out or err).decode("utf-8", errors="replace").splitlines():
            if line.strip():
                return line.strip()
        return None

    def config_provider(self, command: list[str] | None) -> str:
        """Whose config dir (sandbox copy) and instruction file a run of this agent uses: its own;
        an ACP agent's are its CLI's (acp_profiles.py)."""
        return self.provider

    # -- launching ------------------------------------------------------------------------------
    def command_prefix(self, spec: RunSpec) -> list[str]:
        """The words that start the CLI: `argv_override` if given, else the executable."""
        if spec.argv_override:
            return list(spec.argv_override)
        if not self.executable:
            raise ValueError(f"the {self.provider} provider needs a command line (argv_override)")
        return [self.executable]

    def build_argv(self, spec: RunSpec) -> list[str]:
        raise TypeError(f"{type(self).__name__} does not define build_argv")

    def stdin_payload(self, spec: RunSpec) -> bytes | None:
        """What is written to the agent's stdin before it is closed; None: stdin is /dev/null."""
        return spec.prompt.encode("utf-8")

    #: The prompt goes on stdin only, never into argv: the CLI can be started before the prompt's
    #: end is known (`RunSpec.prompt_tail`), which then overlaps the CLI's own start-up.
    prompt_on_stdin_only = False

    async def _late_stdin(self, spec: RunSpec) -> bytes:
        assert spec.prompt_tail is not None
        whole = replace(spec, prompt=spec.prompt + await spec.prompt_tail, prompt_tail=None)
        return self.stdin_payload(whole) or b""

    def build_env(self, spec: RunSpec) -> dict[str, str]:
        """The daemon's environment minus its own secrets, plus the run's variables.

        The daemon's PREDICTORX_* settings (its database URL, its state dir holding the owner's
        token) are never inherited: the agent gets only what the run gives it (R-EX-4)."""
        env = {k: v for k, v in os.environ.items()
               if k not in self.scrubbed_env and not k.startswith("PREDICTORX_") and not k.endswith("DATABASE_URL")}
        env.update(spec.env)
        # Where the CLI works is the task's directory, pinned: some CLIs (OpenCode) take their
        # working directory from an inherited PWD, which would be the daemon's own (R-EX-9).
        env["PWD"] = str(spec.cwd)
        return env

    # -- reading --------------------------------------------------------------------------------
    def parse_line(self, line: str, state: StreamState) -> list[AgentMessage]:
        """Messages for one stdout line, in order; updates `state`. No I/O."""
        raise TypeError(f"{type(self).__name__} does not define parse_line")

    def finish(self, state: StreamState) -> list[AgentMessage]:
        """Messages still held back when the stream ends (e.g. buffered text deltas)."""
        return []

    def parse_stream(self, lines: Iterable[str]) -> tuple[list[AgentMessage], StreamState]:
        """Parse a whole recorded stream: for tests, and for re-reading a kept `stream.jsonl`."""
        state = StreamState()
        messages: list[AgentMessage] = []
        for line in lines:
            messages.extend(self.parse_line_safely(line, state))
        messages.extend(self.finish(state))
        return messages, state

    def parse_line_safely(self, line: str, state: StreamState) -> list[AgentMessage]:
        if not line.strip():
            return []
        try:
            return self.parse_line(line, state)
        except Exception as exc:  # noqa: BLE001 — a CLI upgrade must not lose the rest of the stream
            log.warning("%s: could not read line (%s): %.200s", self.provider, exc, line)
            return [m.system("unparsed", line=line)]

    # -- running --------------------------------------------------------------------------------
    async def run(self, spec: RunSpec, on_message: MessageHandler, cancel: asyncio.Event) -> RunResult:
        state = StreamState()
        if spec.prompt_tail is not None and not self.prompt_on_stdin_only:
            spec = replace(spec, prompt=spec.prompt + await spec.prompt_tail, prompt_tail=None)

        async def on_line(line: str) -> None:
            for msg in self.parse_line_safely(line, state):
                await on_message(msg)
            said = usage_news(state, spec.model)
            if said is not None:  # live usage: the runner sends it with the messages (issue 27)
                await on_message(m.system(USAGE_EVENT, **said))

        try:
            argv = self.build_argv(spec)
        except ValueError as exc:
            return RunResult("failed", None, None, str(exc), None, None)
        if cancel.is_set():  # cancelled while the task was being prepared: never start it
            return RunResult("cancelled", None, None, "cancelled before the agent started", None, None)
        env = self.build_env(spec)
        pass_fds: tuple[int, ...] = ()
        if spec.sandbox is not None:
            argv, pass_fds = sandboxed(spec.sandbox, argv, env)
        try:
            request = ProcessRequest(
                argv=argv,
                cwd=spec.cwd,
                env=env,
                stdin_data=self.stdin_payload(spec) if spec.prompt_tail is None else self._late_stdin(spec),
                stream_log=spec.logs_dir / f"{self.provider}.stream.jsonl",
                stderr_log=spec.logs_dir / f"{self.provider}.stderr.log",
                timeout_s=spec.timeout_s,
                secrets=spec.secrets,
                pass_fds=pass_fds,
                dies_with_parent=dies_with_parent(spec.sandbox),
            )
            outcome = await run_process(request, on_line, cancel)
        finally:
            for fd in pass_fds:  # (the process has its own: the sandbox's seccomp filter)
                os.close(fd)
        try:
            for msg in self.finish(state):
                await on_message(msg)
            said = usage_news(state, spec.model)
            if said is not None:
                await on_message(m.system(USAGE_EVENT, **said))
        except Exception:  # as for every other line: a failed delivery does not change the outcome
            log.exception("%s: delivering the last messages failed", self.provider)
        return self.conclude(state, outcome, spec)

    async def run_resuming(self, spec: RunSpec, on_message: MessageHandler, cancel: asyncio.Event,
                           fresh_prompt: str) -> RunResult:
        """`run`, continuing `spec.resume_session_id` (R-EX-10). A CLI that cannot find that session
        (it is keyed to a folder that is gone, or was deleted) fails before the model says
        anything: then the task starts a fresh session with `fresh_prompt`, and says so."""
        said = 0

        async def counting(msg: AgentMessage) -> None:
            nonlocal said
            if msg.kind in ("text", "thinking", "tool_use", "tool_result"):
                said += 1
            await on_message(msg)

        result = await self.run(spec, counting, cancel)
        if not spec.resume_session_id or result.status != "failed" or said or cancel.is_set():
            return result
        reason = (result.failure_reason or "").split("\n", 1)[0]
        log.info("%s: could not resume session %s (%s); starting afresh", self.provider, spec.resume_session_id, reason)
        await on_message(m.system("resume_failed", session_id=spec.resume_session_id, reason=reason,
                                  message="the earlier session could not be continued here; a new one was started"))
        return await self.run(replace(spec, resume_session_id=None, prompt=fresh_prompt), on_message, cancel)

    def conclude(self, state: StreamState, outcome: ProcessOutcome, spec: RunSpec) -> RunResult:
        """Turn what the stream said and how the process ended into the task's outcome."""
        answer = state.result if state.result is not None else state.last_text

        def ended(status: RunStatus, reason: str | None) -> RunResult:
            return RunResult(status, answer, state.session_id, reason, outcome.exit_code, state.usage)

        name = self.executable or self.provider
        if outcome.spawn_error:
            return ended("failed", outcome.spawn_error)
        if outcome.cancelled:
            return ended("cancelled", "cancelled; the agent's process group was stopped")
        if outcome.timed_out:
            return ended("failed", _with_stderr(f"{name} timed out after {spec.timeout_s:g} s; its process group was stopped", outcome))
        if state.error:
            return ended("failed", _with_stderr(f"{name} reported an error: {state.error}", outcome))
        if outcome.exit_code != 0:
            reason = f"{name} {_describe_exit(outcome.exit_code)}"
            if state.last_error_message:
                reason += f": {state.last_error_message}"
            return ended("failed", _with_stderr(reason, outcome))
        return ended("completed", None)


def parse_json_object(line: str) -> dict[str, Any] | None:
    """The line as a JSON object, or None if it is not one (CLIs sometimes print plain text)."""
    stripped = line.strip()
    if not stripped.startswith("{"):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "did not report an exit status"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _with_stderr(reason: str, outcome: ProcessOutcome) -> str:
    tail = outcome.stderr_tail
    if not tail:
        return reason
    if len(tail) > STDERR_TAIL_IN_REASON:
        tail = "…" + tail[-STDERR_TAIL_IN_REASON:]
    return f"{reason}\nstderr:\n{tail}"


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
