"""`acp`: any agent that speaks the Agent Client Protocol, Predictor X being the client.

The agent's ACP server is the agent's stored command line (`--acp-command`, or a shipped profile's,
acp_profiles.py), started by the shared runner like every CLI (own process group, sandbox, raw
`acp.stream.jsonl`); the official SDK (`agent-client-protocol`) speaks JSON-RPC over its stdio
(acp_link.py). One run is:

1. ``initialize`` with the capabilities we honour (acp_client.py: files in the workdir, no
   terminals), then ``session/load`` of the earlier session for a follow-up when the agent
   advertises ``loadSession`` (its replayed history is not recorded again), else ``session/new``
   in the workdir with the run's MCP servers (agents-room, ``predictorx mcp``);
2. ``session/prompt`` with the task's prompt; every ``session/update`` becomes the task's messages
   in arrival order (acp_updates.py); permission requests are answered by the policy;
3. the stop reason is the run's end: ``end_turn`` completed, ``cancelled`` cancelled, the others
   failed with a sentence. Then stdin is closed and the agent gets `EXIT_GRACE_S` to exit before
   its group is stopped.

Cancel sends ``session/cancel`` and gives the agent `CANCEL_GRACE_S` to answer before the group is
stopped, so a cancel still ends within the runner's 5 s budget.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..agentconfig import acp_profiles
from . import message as m
from .acp_link import split_overrides
from .adapter import AgentAdapter, MessageHandler, _with_stderr
from .process import ProcessOutcome
from .registry import register
from .result import RunResult
from .spec import RunSpec
from .stream_state import StreamState
from .usage import USAGE_EVENT, usage_news

log = logging.getLogger(__name__)

_FAILED_STOPS = {"max_tokens": "the agent stopped: its model reached its token limit",
                 "max_turn_requests": "the agent stopped: it reached its limit of model requests for one turn",
                 "refusal": "the agent refused to continue"}

class AcpAdapter(AgentAdapter):
    provider = "acp"
    executable = None
    instruction_file = "AGENTS.md"
    capabilities = ("resume", "model", "usage", "thinking", "tool-events", "permissions", "plan")
    # Agents keep sessions by folder (Gemini's, OpenCode's), and session/load names the folder.
    sessions_per_folder = True

    def probe(self, path: str | None = None) -> str | None:
        if path:
            return super().probe(path)
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"agent-client-protocol {version('agent-client-protocol')}"
        except PackageNotFoundError:
            return None

    def config_provider(self, command: list[str] | None) -> str:
        profile = acp_profiles.for_command(list(command or []))
        return profile.config_of if profile else self.provider

    def build_argv(self, spec: RunSpec) -> list[str]:
        problem = acp_profiles.check_command(spec.argv_override)
        if problem:
            raise ValueError(problem)
        argv = list(spec.argv_override or [])
        profile = acp_profiles.for_command(argv)
        if spec.model and profile and profile.model_flag:
            argv += [profile.model_flag, spec.model]
        return argv + split_overrides(spec.extra_args)[1]

    def build_env(self, spec: RunSpec) -> dict[str, str]:
        env = super().build_env(spec)
        profile = acp_profiles.for_command(list(spec.argv_override or []))
        for key, value in (profile.env if profile else {}).items():
            env.setdefault(key, value)
        return env

    async def run(self, spec: RunSpec, on_message: MessageHandler, cancel: asyncio.Event) -> RunResult:
        try:
            argv = self.build_argv(spec)
        except ValueError as exc:
            return RunResult("failed", None, None, str(exc), None, None)
        if cancel.is_set():
            return RunResult("cancelled", None, None, "cancelled before the agent started", None, None)
        env = self.build_env(spec)
        if spec.sandbox is not None:
            argv = spec.sandbox(argv, env)
        from .acp_session import run_conversation  # the SDK loads with the first ACP run, not the daemon

        profile = acp_profiles.for_command(list(spec.argv_override or []))
        on_argv = bool(profile and profile.model_flag)  # else through the session's model option
        state, talk, outcome = await run_conversation(spec, argv, env, on_message, cancel, _policy(spec),
                                                      None if on_argv else spec.model)
        said = usage_news(state, spec.model)
        if said is not None:  # the run's usage, sent with its finish (issue 27)
            try:
                await on_message(m.system(USAGE_EVENT, **said))
            except Exception:  # a failed delivery does not change the outcome
                log.exception("acp: delivering the run's usage failed")
        return self._conclude(state, talk, outcome, spec, cancel)

    def _conclude(self, state: StreamState, talk: Any, outcome: ProcessOutcome, spec: RunSpec,
                  cancel: asyncio.Event) -> RunResult:
        answer = state.last_text

        def ended(status: Any, reason: str | None) -> RunResult:
            return RunResult(status, answer, state.session_id, reason, outcome.exit_code, state.usage)

        name = (spec.argv_override or ["acp"])[0]
        if outcome.spawn_error:
            return ended("failed", outcome.spawn_error)
        if cancel.is_set() or talk.stop_reason == "cancelled":
            return ended("cancelled", "cancelled; the agent was sent session/cancel and its process group was stopped")
        if outcome.timed_out:
            return ended("failed", _with_stderr(f"{name} timed out after {spec.timeout_s:g} s; its process group "
                                                "was stopped", outcome))
        if talk.stop_reason == "end_turn":
            return ended("completed", None)
        if talk.stop_reason in _FAILED_STOPS:
            return ended("failed", f"{_FAILED_STOPS[talk.stop_reason]} ({talk.stop_reason})")
        reason = talk.error or f"{name} ended before answering the prompt (exit code {outcome.exit_code})"
        return ended("failed", _with_stderr(f"ACP: {reason}", outcome))

def _policy(spec: RunSpec) -> str:
    return spec.permission_policy or "allow"


register(AcpAdapter)
