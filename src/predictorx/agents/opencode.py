"""OpenCode: `opencode run --format json`, the prompt on stdin.

OpenCode takes its working directory from `--dir`, else from the inherited `PWD` — never from
the process's cwd — so both are pinned to the task's directory (the base adapter sets PWD).

At start OpenCode installs its default plugins from the npm registry, checks for updates, fetches
the models.dev catalogue and downloads language servers: a platform run must not depend on (or
wait for) the internet, so the daemon turns each off unless its own environment says otherwise
(`RUN_ENV`, R-EX-9).

`opencode run` appends stdin to its message when stdin is not a terminal, so the prompt goes
there whole (no argv size limit, no flag parsing of a prompt that starts with a dash). `run`
approves tool calls itself; nothing extra is needed to run unattended.

The stream (one JSON object a line, each with `type`, `timestamp` and `sessionID`):

- ``{"type":"step_start","part":{"type":"step-start",…}}``
- ``{"type":"text","part":{"type":"text","text":…}}`` — a finished text part.
- ``{"type":"reasoning","part":{"type":"reasoning","text":…}}`` — in versions that stream it.
- ``{"type":"tool_use","part":{"type":"tool","callID":…,"tool":…,"state":{"status":
  "completed"|"error","input":{…},"output":…,"error":…,"title":…}}}`` — a finished tool call.
- ``{"type":"step_finish","part":{"reason":"stop"|"tool-calls","cost":…,"tokens":{"input":…,
  "output":…,"reasoning":…,"cache":{"read":…,"write":…}}}}`` — usage per step, summed here.
- ``{"type":"error","error":{"name":…,"data":{"message":…}}}`` — the session failed.
"""

from __future__ import annotations

from typing import Any

from . import message as m
from .adapter import AgentAdapter, parse_json_object
from .message import AgentMessage
from .registry import register
from .spec import RunSpec
from .stream_state import StreamState


#: Set for every run unless the daemon's environment already sets them (a person may opt back in).
RUN_ENV = {
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",  # else `bun add` of its default plugins from the registry
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",  # the bundled models.dev snapshot instead of a download
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
}


class OpenCodeAdapter(AgentAdapter):
    provider = "opencode"
    executable = "opencode"
    instruction_file = "AGENTS.md"
    capabilities = ("resume", "model", "usage", "thinking", "tool-events")
    # Sessions belong to the project they ran in: `--session` from another folder never returns.
    sessions_per_folder = True

    def build_argv(self, spec: RunSpec) -> list[str]:
        # OpenCode works where `--dir` (else the inherited PWD) says, not in its process's cwd.
        argv = [*self.command_prefix(spec), "run", "--format", "json", "--dir", str(spec.cwd)]
        if spec.model:
            argv += ["--model", spec.model]  # provider/model, e.g. anthropic/claude-sonnet-4
        if spec.resume_session_id:
            argv += ["--session", spec.resume_session_id]
        return argv + list(spec.extra_args)

    def build_env(self, spec: RunSpec) -> dict[str, str]:
        env = super().build_env(spec)
        for key, value in RUN_ENV.items():
            env.setdefault(key, value)
        return env

    def parse_line(self, line: str, state: StreamState) -> list[AgentMessage]:
        event = parse_json_object(line)
        if event is None:
            return [m.system("output", text=line)]
        out: list[AgentMessage] = []
        session_id = event.get("sessionID") or (event.get("part") or {}).get("sessionID")
        if session_id and session_id != state.session_id:
            state.session_id = session_id
            out.append(m.system("session", session_id=session_id))
        kind, part = event.get("type"), event.get("part") or {}
        if kind == "text" and part.get("text"):
            state.last_text = part["text"]
            out.append(m.text(part["text"]))
        elif kind == "reasoning" and part.get("text"):
            out.append(m.thinking(part["text"]))
        elif kind == "tool_use":
            out += _tool(part)
        elif kind == "step_finish":
            _add_step_usage(part, state)
            if part.get("reason") == "stop" and state.last_text is not None:
                state.result = state.last_text
        elif kind == "error":
            state.error = _error_message(event.get("error"))
            out.append(m.error(state.error))
        return out


def _tool(part: dict[str, Any]) -> list[AgentMessage]:
    call_id, tool_state = part.get("callID") or part.get("id"), part.get("state") or {}
    use = m.tool_use(call_id, part.get("tool") or "tool", tool_state.get("input"))
    status = tool_state.get("status")
    if status == "error":
        return [use, m.tool_result(call_id, tool_state.get("error") or "error", True)]
    if status == "completed":
        return [use, m.tool_result(call_id, tool_state.get("output", ""), False, title=tool_state.get("title"))]
    return [use]


def _add_step_usage(part: dict[str, Any], state: StreamState) -> None:
    tokens = part.get("tokens") or {}
    cache = tokens.get("cache") or {}
    state.add_usage(
        {
            "input_tokens": tokens.get("input", 0),
            "output_tokens": tokens.get("output", 0),
            "reasoning_tokens": tokens.get("reasoning", 0),
            "cache_read_tokens": cache.get("read", 0),
            "cache_write_tokens": cache.get("write", 0),
            "cost": part.get("cost", 0),
        }
    )


def _error_message(error: Any) -> str:
    if isinstance(error, dict):
        data = error.get("data") or {}
        return (data.get("message") if isinstance(data, dict) else None) or error.get("message") or error.get("name") or "error"
    return str(error) if error else "error"


register(OpenCodeAdapter)
