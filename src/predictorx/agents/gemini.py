"""Gemini CLI: `gemini --output-format stream-json --yolo`, the prompt on stdin.

Gemini runs headless when stdin is not a terminal and takes stdin as the prompt (`-p` text
would only be appended to it), so the prompt goes to stdin and is never limited by argv size.

The stream (one JSON object a line, each with a `timestamp`):

- ``{"type":"init","session_id":…,"model":…}``
- ``{"type":"message","role":"user"|"assistant","content":…,"delta":true?}`` — assistant text
  arrives in chunks (`delta`), joined here into one text message per stretch of text.
- ``{"type":"tool_use","tool_name":…,"tool_id":…,"parameters":{…}}``
- ``{"type":"tool_result","tool_id":…,"status":"success"|"error","output":…,"error":{"type":…,
  "message":…}}``
- ``{"type":"error","severity":"warning"|"error","message":…}`` — not fatal by itself.
- ``{"type":"result","status":"success"|"error","error":{…},"stats":{"total_tokens":…,
  "input_tokens":…,"output_tokens":…,"duration_ms":…,"tool_calls":…}}``
"""

from __future__ import annotations

from typing import Any

from . import message as m
from .adapter import AgentAdapter, parse_json_object
from .message import AgentMessage
from .registry import register
from .spec import RunSpec
from .stream_state import StreamState


class GeminiAdapter(AgentAdapter):
    provider = "gemini"
    executable = "gemini"
    instruction_file = "GEMINI.md"
    capabilities = ("resume", "model", "usage", "tool-events")
    # Sessions are kept per project folder (~/.gemini/tmp/<folder>/chats): `--resume` elsewhere fails.
    sessions_per_folder = True
    # Headless Gemini only runs read-only tools unless approval is automatic.
    unattended_args = ("--yolo",)

    def build_argv(self, spec: RunSpec) -> list[str]:
        argv = [*self.command_prefix(spec), "--output-format", "stream-json", *self.unattended_args]
        if spec.model:
            argv += ["--model", spec.model]
        if spec.resume_session_id:
            argv += ["--resume", spec.resume_session_id]
        return argv + list(spec.extra_args)

    def build_env(self, spec: RunSpec) -> dict[str, str]:
        env = super().build_env(spec)
        # A task's workdir is new to Gemini; an untrusted folder would silently drop --yolo.
        env.setdefault("GEMINI_CLI_TRUST_WORKSPACE", "true")
        return env

    def parse_line(self, line: str, state: StreamState) -> list[AgentMessage]:
        event = parse_json_object(line)
        if event is None:
            return [*self._flush(state), m.system("output", text=line)]
        kind = event.get("type")
        if kind == "message":
            return self._message(event, state)
        out = self._flush(state)
        if kind == "init":
            state.session_id = event.get("session_id") or state.session_id
            if isinstance(event.get("model"), str):
                state.model = event["model"]
            out.append(m.system("init", session_id=state.session_id, model=event.get("model")))
        elif kind == "tool_use":
            out.append(m.tool_use(event.get("tool_id"), event.get("tool_name") or "tool", event.get("parameters")))
        elif kind == "tool_result":
            failed = event.get("status") == "error"
            output = _message_of(event.get("error")) if failed else event.get("output", "")
            out.append(m.tool_result(event.get("tool_id"), output, failed))
        elif kind == "thought":  # reasoning summaries, in the CLIs that stream them
            summary = " — ".join(x for x in (event.get("subject"), event.get("description")) if x)
            if summary:
                out.append(m.thinking(summary))
        elif kind == "error":
            message = event.get("message") or "error"
            state.last_error_message = message
            out.append(m.error(message, severity=event.get("severity")))
        elif kind == "result":
            out += self._result(event, state)
        return out

    def finish(self, state: StreamState) -> list[AgentMessage]:
        return self._flush(state)

    @staticmethod
    def _message(event: dict[str, Any], state: StreamState) -> list[AgentMessage]:
        if event.get("role") != "assistant":
            return []  # the prompt echoed back
        content = event.get("content") or ""
        if event.get("delta"):
            state.scratch["text"] = state.scratch.get("text", "") + content
            return []
        flushed = GeminiAdapter._flush(state)
        if content:
            state.last_text = content
            flushed.append(m.text(content))
        return flushed

    @staticmethod
    def _flush(state: StreamState) -> list[AgentMessage]:
        pending = state.scratch.pop("text", "")
        if not pending:
            return []
        state.last_text = pending
        return [m.text(pending)]

    @staticmethod
    def _result(event: dict[str, Any], state: StreamState) -> list[AgentMessage]:
        if event.get("stats"):
            state.usage = dict(event["stats"])
        if event.get("status") == "error":
            state.error = _message_of(event.get("error")) or "the run ended with an error"
            return [m.error(state.error)]
        if state.last_text is not None:
            state.result = state.last_text
        return []


def _message_of(value: Any) -> str | None:
    if isinstance(value, dict):
        return value.get("message") or value.get("type")
    return value if isinstance(value, str) else None


register(GeminiAdapter)
