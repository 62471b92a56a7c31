"""Claude Code: `claude -p --output-format stream-json --verbose`, the prompt on stdin.

The stream (one JSON object a line):

- ``{"type":"system","subtype":"init","session_id":…,"model":…,"cwd":…,"tools":[…]}``
- ``{"type":"assistant","message":{"content":[{"type":"text","text":…} | {"type":"thinking",
  "thinking":…} | {"type":"tool_use","id":…,"name":…,"input":{…}}]},"session_id":…}``
- ``{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":…,"content":… ,
  "is_error":bool}]}}`` — tool results travel back as the "user" turn.
- ``{"type":"result","subtype":"success"|"error_max_turns"|"error_during_execution",
  "is_error":bool,"result":…,"session_id":…,"usage":{…},"total_cost_usd":…,"num_turns":…}``
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from . import message as m
from . import usage
from .adapter import AgentAdapter, parse_json_object
from .message import AgentMessage
from .process import ProcessOutcome
from .result import RunResult
from .registry import register
from .spec import RunSpec
from .stream_state import StreamState

#: Claude Code refuses `--permission-mode bypassPermissions` as root ("cannot be used with
#: root/sudo privileges") unless told it runs in a sandbox; said before it is started, in words
#: that name the setting, instead of an opaque "exited with code 1".
ROOT_REFUSAL = ("Claude Code does not run unattended (permission mode bypassPermissions) as root unless it "
                "is told it runs in a sandbox: run the daemon as a regular user, or — if this machine or "
                "container is the sandbox — start it with IS_SANDBOX=1 in its environment "
                "(IS_SANDBOX=1 predictorx daemon start), which its Claude Code agents inherit")


#: What Claude Code 2.1.328 prints (stderr, exit code 1) when it refuses; the daemon's own check
#: below can miss a refusal (a `--command` wrapper or a sandbox that runs it as root, a future
#: version's stricter rule), so the reason is also recognised after the fact.
_ROOT_REFUSED_SAYS = "cannot be used with root/sudo privileges"


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def root_refusal(is_sandbox: str | None) -> str | None:
    """Why a run as root would be refused, or None. Claude Code reads IS_SANDBOX=1 and nothing
    else (2.1.328 refuses IS_SANDBOX=true, yes, TRUE…), so neither does this."""
    if not _is_root() or is_sandbox == "1":
        return None
    if is_sandbox:
        return f"{ROOT_REFUSAL} (IS_SANDBOX={is_sandbox} is set, but Claude Code takes only IS_SANDBOX=1)"
    return ROOT_REFUSAL


class ClaudeAdapter(AgentAdapter):
    provider = "claude"
    executable = "claude"
    instruction_file = "CLAUDE.md"
    capabilities = ("resume", "model", "usage", "thinking", "tool-events")
    unattended_args = ("--permission-mode", "bypassPermissions")
    prompt_on_stdin_only = True  # it reads stdin ~0.2 s after it starts (2.1.328)
    # Set inside a Claude Code session; a daemon started from one would make every agent refuse
    # to start ("cannot be launched inside another Claude Code session").
    scrubbed_env = ("CLAUDECODE",)

    def build_argv(self, spec: RunSpec) -> list[str]:
        refused = root_refusal(self.build_env(spec).get("IS_SANDBOX"))
        if refused:
            raise ValueError(refused)
        argv = [*self.command_prefix(spec), "-p", "--output-format", "stream-json", "--verbose"]
        argv += self.unattended_args
        if spec.model:
            argv += ["--model", spec.model]
        if spec.resume_session_id:
            argv += ["--resume", spec.resume_session_id]
        return argv + list(spec.extra_args)

    def conclude(self, state: StreamState, outcome: ProcessOutcome, spec: RunSpec) -> RunResult:
        result = super().conclude(state, outcome, spec)
        if result.status == "failed" and _ROOT_REFUSED_SAYS in outcome.stderr_tail:
            # Claude Code's own words name neither the setting nor the way out.
            return replace(result, failure_reason=f"{ROOT_REFUSAL}. Claude Code said: {outcome.stderr_tail.strip()[-300:]}")
        return result

    def parse_line(self, line: str, state: StreamState) -> list[AgentMessage]:
        event = parse_json_object(line)
        if event is None:
            return [m.system("output", text=line)]
        if isinstance(event.get("session_id"), str):
            state.session_id = event["session_id"]
        kind = event.get("type")
        if kind == "system":
            if event.get("subtype") == "init" and isinstance(event.get("model"), str):
                state.model = event["model"]
            return [self._system(event)]
        if kind == "assistant":
            usage.add_claude_message(event, state)
            return self._assistant(event, state)
        if kind == "user":
            return self._tool_results(event)
        if kind == "result":
            return self._result(event, state)
        return []  # stream_event (partial messages) and future types carry nothing new

    @staticmethod
    def _system(event: dict[str, Any]) -> AgentMessage:
        subtype = event.get("subtype") or "system"
        if subtype == "init":
            return m.system("init", session_id=event.get("session_id"), model=event.get("model"), cwd=event.get("cwd"))
        details = {k: v for k, v in event.items() if k not in ("type", "subtype")}
        return m.system(subtype, **details)

    @staticmethod
    def _assistant(event: dict[str, Any], state: StreamState) -> list[AgentMessage]:
        content = (event.get("message") or {}).get("content") or []
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        out: list[AgentMessage] = []
        for block in content:
            kind = block.get("type")
            if kind == "text" and block.get("text"):
                out.append(m.text(block["text"]))
                state.last_text = block["text"]
            elif kind == "thinking" and block.get("thinking"):
                out.append(m.thinking(block["thinking"]))
            elif kind == "tool_use":
                out.append(m.tool_use(block.get("id"), block.get("name") or "tool", block.get("input")))
        return out

    @staticmethod
    def _tool_results(event: dict[str, Any]) -> list[AgentMessage]:
        content = (event.get("message") or {}).get("content") or []
        if isinstance(content, str):
            return []  # the prompt echoed back, not news
        return [
            m.tool_result(block.get("tool_use_id"), _flatten(block.get("content")), bool(block.get("is_error")))
            for block in content
            if block.get("type") == "tool_result"
        ]

    @staticmethod
    def _result(event: dict[str, Any], state: StreamState) -> list[AgentMessage]:
        usage.set_claude_result(event, state)
        failed = event.get("is_error") or event.get("subtype", "success") != "success"
        if not failed:
            if isinstance(event.get("result"), str):
                state.result = event["result"]
            return []
        reason = event.get("result") if isinstance(event.get("result"), str) and event.get("result") else None
        if reason is None:
            errors = event.get("errors")
            reason = "; ".join(map(str, errors)) if errors else str(event.get("subtype") or "error")
        state.error = reason
        return [m.error(reason, subtype=event.get("subtype"))]


def _flatten(content: Any) -> Any:
    """Tool result content is a string or a list of blocks; text blocks read best joined."""
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return "\n".join(b.get("text", "") for b in content)
    return content


register(ClaudeAdapter)
