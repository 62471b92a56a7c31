"""Codex: `codex exec --json … <prompt>`, stdin closed.

`codex exec` reads stdin whenever it is not a terminal (and appends it to the prompt), so stdin
must be /dev/null — an open pipe would keep it waiting forever. The prompt goes as the last
argument; a prompt too long for one argument (Linux caps one at 128 KiB) is passed as `-` and
written to stdin, which is then closed, as the CLI documents.

The stream (one JSON object a line):

- ``{"type":"thread.started","thread_id":…}`` — the session id, for `codex exec resume <id>`.
- ``{"type":"turn.started"}`` / ``{"type":"turn.completed","usage":{"input_tokens":…,
  "cached_input_tokens":…,"output_tokens":…}}`` / ``{"type":"turn.failed","error":{"message":…}}``
- ``{"type":"item.started"|"item.updated"|"item.completed","item":{"id":…,"type":…}}`` with item
  types ``agent_message`` (text), ``reasoning`` (text), ``command_execution`` (command,
  aggregated_output, exit_code, status), ``file_change`` (changes, status), ``mcp_tool_call``
  (server, tool, arguments, result, error, status), ``web_search`` (query), ``todo_list``
  (items), ``error`` (message).
- ``{"type":"error","message":…}`` — a stream-level problem (e.g. reconnecting); the turn decides.
"""

from __future__ import annotations

from typing import Any

from . import message as m
from .adapter import AgentAdapter, parse_json_object
from .message import AgentMessage
from .registry import register
from .spec import RunSpec
from .stream_state import StreamState

#: What Codex prints as an `error` event though nothing went wrong: the daemon's own flags echoed.
_NOTICES = ("`--dangerously-bypass-hook-trust` is enabled",)
#: Longest prompt passed as an argument; Linux refuses a single argument over 128 KiB.
MAX_PROMPT_ARG_BYTES = 100_000


class CodexAdapter(AgentAdapter):
    provider = "codex"
    executable = "codex"
    instruction_file = "AGENTS.md"
    capabilities = ("resume", "model", "usage", "thinking", "tool-events")
    # exec's default sandbox is read-only and cuts the network, so an agent could neither edit
    # nor reach the Predictor X server nor the repo cache; the task's env root is the boundary.
    unattended_args = ("--dangerously-bypass-approvals-and-sandbox",)

    def build_argv(self, spec: RunSpec) -> list[str]:
        # The task's workdir need not be a git repository (it may hold several checkouts).
        argv = [*self.command_prefix(spec), "exec", "--json", "--skip-git-repo-check", *self.unattended_args]
        if spec.model:
            argv += ["--model", spec.model]
        if (any(arg.startswith("hooks.") for arg in spec.extra_args)
                and "--dangerously-bypass-hook-trust" not in spec.extra_args):  # Codex refuses it twice
            # Codex runs hooks only once a person has trusted them in its TUI; the hooks this run
            # is given on its command line (agents-room's) are the daemon's own, vetted: run them.
            argv.append("--dangerously-bypass-hook-trust")
        argv += list(spec.extra_args)
        if spec.resume_session_id:
            argv += ["resume", spec.resume_session_id]
        return argv + ["-" if self._prompt_on_stdin(spec) else spec.prompt]

    def stdin_payload(self, spec: RunSpec) -> bytes | None:
        return spec.prompt.encode("utf-8") if self._prompt_on_stdin(spec) else None

    @staticmethod
    def _prompt_on_stdin(spec: RunSpec) -> bool:
        return len(spec.prompt.encode("utf-8")) > MAX_PROMPT_ARG_BYTES or spec.prompt.startswith("-")

    def parse_line(self, line: str, state: StreamState) -> list[AgentMessage]:
        event = parse_json_object(line)
        if event is None:
            return [m.system("output", text=line)]
        kind = event.get("type")
        if kind in ("thread.started", "thread.resumed"):
            state.session_id = event.get("thread_id") or state.session_id
            return [m.system("session", session_id=state.session_id)]
        if kind == "turn.completed":
            state.add_usage(event.get("usage") or {})
            if state.last_text is not None:
                state.result = state.last_text
            return []
        if kind == "turn.failed":
            state.error = _message_of(event.get("error")) or "turn failed"
            return [m.error(state.error)]
        if kind == "error":
            message = _message_of(event) or "error"
            if message.startswith(_NOTICES):  # Codex says it on the error channel; nothing failed
                return [m.system("warning", message=message)]
            state.last_error_message = message
            return [m.error(message)]
        if kind in ("item.started", "item.updated", "item.completed"):
            return self._item(kind.split(".")[1], event.get("item") or {}, state)
        return []

    def _item(self, phase: str, item: dict[str, Any], state: StreamState) -> list[AgentMessage]:
        kind, item_id = item.get("type"), item.get("id")
        announced: set[str] = state.scratch.setdefault("announced", set())
        out: list[AgentMessage] = []

        def announce(name: str, input: Any) -> None:
            if item_id not in announced:
                announced.add(item_id)
                out.append(m.tool_use(item_id, name, input))

        if kind == "agent_message" and phase == "completed":
            state.last_text = item.get("text") or ""
            out.append(m.text(state.last_text))
        elif kind == "reasoning" and phase == "completed" and item.get("text"):
            out.append(m.thinking(item["text"]))
        elif kind == "command_execution":
            announce("shell", {"command": item.get("command")})
            if phase == "completed":
                exit_code = item.get("exit_code")
                failed = item.get("status") not in (None, "completed") or exit_code not in (None, 0)
                out.append(m.tool_result(item_id, item.get("aggregated_output", ""), failed, exit_code=exit_code))
        elif kind == "mcp_tool_call":
            announce(f"{item.get('server')}.{item.get('tool')}", item.get("arguments"))
            if phase == "completed":
                failed = item.get("status") == "failed" or bool(item.get("error"))
                output = _message_of(item.get("error")) if failed else _mcp_output(item.get("result"))
                out.append(m.tool_result(item_id, output, failed))
        elif kind == "file_change" and phase == "completed":
            announce("apply_patch", {"changes": item.get("changes") or []})
            failed = item.get("status") == "failed"
            out.append(m.tool_result(item_id, item.get("status") or "completed", failed))
        elif kind == "web_search" and phase == "completed":
            announce("web_search", {"query": item.get("query")})
        elif kind == "todo_list" and phase in ("started", "updated"):
            out.append(m.system("plan", items=item.get("items") or []))
        elif kind == "error" and phase == "completed":
            message = item.get("message") or "error"
            if message.startswith(_NOTICES):
                out.append(m.system("warning", message=message))
            else:
                state.last_error_message = message
                out.append(m.error(message))
        return out


def _message_of(value: Any) -> str | None:
    if isinstance(value, dict):
        return value.get("message")
    return value if isinstance(value, str) else None


def _mcp_output(result: Any) -> Any:
    if isinstance(result, dict):
        blocks = result.get("content") or []
        texts = [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        if texts and len(texts) == len(blocks):
            return "\n".join(texts)
        return result.get("structured_content") or blocks
    return result


register(CodexAdapter)
