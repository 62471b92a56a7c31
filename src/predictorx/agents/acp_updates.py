"""ACP `session/update` notifications → the task's ordered messages (pure; no I/O).

The updates arrive as their wire dicts (camelCase, as the agent sent them):

- ``agent_message_chunk`` / ``agent_thought_chunk`` — text in pieces, joined here into one text
  (or thinking) message per stretch, as the other adapters do with their deltas.
- ``tool_call`` — a tool call starts: ``tool_use`` {id, name (its title), input (rawInput), kind,
  status}; one already finished also gets its ``tool_result``. A call announced without input is
  held until its next update (which fills it in) or any other update.
- ``tool_call_update`` — its status moves on; ``completed``/``failed`` give the ``tool_result``
  (output: the text content, else rawOutput; diffs as {path, old_text, new_text}).
- ``plan`` — ``system`` {event: plan, entries}.
- ``usage_update`` — context use and cost, kept in the run's usage (not a message).
- ``user_message_chunk`` and the session's commands/modes/config/info — not messages.
"""

from __future__ import annotations

from typing import Any

from . import message as m
from .message import AgentMessage
from .stream_state import StreamState

_BUFFERED = {"agent_message_chunk": "text", "agent_thought_chunk": "thinking"}
_QUIET = {"user_message_chunk", "available_commands_update", "current_mode_update", "config_option_update",
          "session_info_update"}


def map_update(update: dict[str, Any], state: StreamState) -> list[AgentMessage]:
    kind = update.get("sessionUpdate")
    if kind in _BUFFERED:
        return _buffer(_BUFFERED[kind], _block_text(update.get("content")), state)
    held = state.scratch.setdefault("held_tools", {})
    if kind in ("tool_call", "tool_call_update") and update.get("toolCallId") in held:
        # The call announced without its input: now with it (Claude Code's adapter sends it twice).
        first = held.pop(update.get("toolCallId"))
        update = {**first, **{k: v for k, v in update.items() if v not in (None, {}, [], "")},
                  "sessionUpdate": "tool_call"}
        kind = "tool_call"
    out = flush(state)
    if kind == "tool_call" and not update.get("rawInput") and update.get("status") in (None, "pending"):
        state.scratch.setdefault("held_tools", {})[update.get("toolCallId")] = update  # until its input, or anything else
        return out
    if kind == "tool_call":
        out += _tool_start(update, state)
    elif kind == "tool_call_update":
        out += _tool_progress(update, state)
    elif kind == "plan":
        out.append(m.system("plan", entries=[
            {k: e.get(k) for k in ("content", "status", "priority")} for e in update.get("entries") or []
            if isinstance(e, dict)]))
    elif kind == "usage_update":
        usage = dict(state.usage or {})
        usage.update({"context_used": update.get("used"), "context_size": update.get("size")})
        cost = update.get("cost")
        if isinstance(cost, dict):
            usage.update({"cost": cost.get("amount"), "currency": cost.get("currency")})
        state.usage = usage
    elif kind not in _QUIET:
        out.append(m.system("acp_update", update=update))
    return out


def flush(state: StreamState) -> list[AgentMessage]:
    """What is held back so far: text or thinking as one message, tool calls still without input."""
    out: list[AgentMessage] = []
    kind, text = state.scratch.pop("buffer_kind", None), state.scratch.pop("buffer", "")
    if kind == "text" and text:
        state.last_text = text
        out.append(m.text(text))
    elif kind and text:
        out.append(m.thinking(text))
    for update in state.scratch.pop("held_tools", {}).values():
        out += _tool_start(update, state)
    return out


def add_prompt_usage(usage: dict[str, Any] | None, state: StreamState) -> None:
    """`session/prompt`'s own usage (tokens of that turn), summed like the other adapters'."""
    if not usage:
        return
    state.add_usage({"input_tokens": usage.get("inputTokens", 0), "output_tokens": usage.get("outputTokens", 0),
                     "reasoning_tokens": usage.get("thoughtTokens") or 0,
                     "cache_read_tokens": usage.get("cachedReadTokens") or 0,
                     "cache_write_tokens": usage.get("cachedWriteTokens") or 0})


def _buffer(kind: str, text: str, state: StreamState) -> list[AgentMessage]:
    out = flush(state) if state.scratch.get("buffer_kind") not in (None, kind) else []
    if text:
        state.scratch["buffer_kind"] = kind
        state.scratch["buffer"] = state.scratch.get("buffer", "") + text
    return out


def _block_text(block: Any) -> str:
    if not isinstance(block, dict):
        return ""
    if block.get("type") == "text":
        return str(block.get("text") or "")
    if block.get("type") == "resource_link":
        return f"[{block.get('name') or block.get('uri')}]({block.get('uri')})"
    return ""


def _tool_start(update: dict[str, Any], state: StreamState) -> list[AgentMessage]:
    call_id = update.get("toolCallId")
    seen = state.scratch.setdefault("tools", {})
    seen[call_id] = update.get("title") or update.get("kind") or "tool"
    msg = m.AgentMessage("tool_use", {"id": call_id, "name": seen[call_id], "input": update.get("rawInput"),
                                      "kind": update.get("kind"), "status": update.get("status") or "pending",
                                      **_locations(update)})
    return [msg, *_tool_end(update, state)]


def _tool_progress(update: dict[str, Any], state: StreamState) -> list[AgentMessage]:
    call_id = update.get("toolCallId")
    seen = state.scratch.setdefault("tools", {})
    out: list[AgentMessage] = []
    if call_id not in seen:  # an update for a call we never saw start: say it started
        seen[call_id] = update.get("title") or update.get("kind") or "tool"
        out.append(m.AgentMessage("tool_use", {"id": call_id, "name": seen[call_id], "input": update.get("rawInput"),
                                               "kind": update.get("kind"), "status": update.get("status")}))
    return out + _tool_end(update, state)


def _tool_end(update: dict[str, Any], state: StreamState) -> list[AgentMessage]:
    status = update.get("status")
    if status not in ("completed", "failed"):
        return []
    done = state.scratch.setdefault("tools_done", set())
    call_id = update.get("toolCallId")
    if call_id in done:
        return []
    done.add(call_id)
    texts, diffs, terminals = [], [], []
    for item in update.get("content") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "content":
            texts.append(_block_text(item.get("content")))
        elif item.get("type") == "diff":
            diffs.append({"path": item.get("path"), "old_text": item.get("oldText"), "new_text": item.get("newText")})
        elif item.get("type") == "terminal":
            terminals.append(item.get("terminalId"))
    output: Any = "\n".join(t for t in texts if t)
    if not output and update.get("rawOutput") is not None:
        output = update.get("rawOutput")
    extra: dict[str, Any] = {"status": status}
    if diffs:
        extra["diffs"] = diffs
    if terminals:
        extra["terminals"] = terminals
    return [m.tool_result(call_id, output, status == "failed", **extra)]


def _locations(update: dict[str, Any]) -> dict[str, Any]:
    locations = [loc.get("path") for loc in update.get("locations") or [] if isinstance(loc, dict)]
    return {"locations": locations} if locations else {}
