"""The Anthropic Messages API with SSE, as Claude Code calls it (`POST /v1/messages?beta=true`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import ModelServer, Recorded, Reply, tool_arguments

SHELL_TOOL = "Bash"


class AnthropicServer(ModelServer):
    protocol = "anthropic"
    model = "claude-scripted-1"
    #: When set, turn 1 calls this tool (e.g. an MCP tool, `mcp__predictorx__workflow_complete`)
    #: with these arguments (or what a function of the request gives: e.g. the agents-room session
    #: its prompt names) instead of the shell, provided the request offers it.
    call: tuple[str, dict[str, Any] | Callable[[Recorded], dict[str, Any]]] | None = None

    def reply(self, req: Recorded) -> Reply:
        if req.path.endswith("/count_tokens"):
            req.turn = "aside"
            return Reply(json_body={"input_tokens": 100})
        if not req.path.endswith("/v1/messages"):
            req.turn = "aside"
            return Reply(404, json_body={"type": "error", "error": {"type": "not_found_error", "message": req.path}})
        body = req.body or {}
        shell = next((t for t in body.get("tools") or [] if t.get("name") == SHELL_TOOL), None)
        used = _tool_uses(body.get("messages") or [])
        tools = {t.get("name"): t for t in body.get("tools") or []}
        if shell is None:
            req.turn, blocks = "aside", [{"type": "text", "text": "Scripted work"}]
        elif self.call is not None and self.call[0] not in used and "ToolSearch" not in used \
                and (tools.get(self.call[0]) or {}).get("defer_loading", True) and "ToolSearch" in tools:
            # Claude Code defers MCP tools (their names are listed in the system prompt): the
            # model loads the schema first, as the real one does.
            req.turn = "search"
            blocks = [{"type": "tool_use", "id": self.next_id("toolu_"), "name": "ToolSearch",
                       "input": {"query": f"select:{self.call[0]}", "max_results": 5}}]
        elif _last_user_has_tool_result(body.get("messages") or []) and (self.call is None or self.call[0] in used):
            req.turn, blocks = "answer", [{"type": "text", "text": self.answer}]
        else:
            req.turn = "tool"
            if self.call is not None:
                given = self.call[1]
                use = {"type": "tool_use", "id": self.next_id("toolu_"), "name": self.call[0],
                       "input": given(req) if callable(given) else given}
            else:
                use = {"type": "tool_use", "id": self.next_id("toolu_"), "name": SHELL_TOOL,
                       "input": tool_arguments(shell.get("input_schema"), {"command": self.command_for(req)})}
            blocks = [{"type": "text", "text": "Running the command."}, use]
        stop = "tool_use" if req.turn in ("tool", "search") else "end_turn"
        message = {"id": self.next_id("msg_"), "type": "message", "role": "assistant",
                   "model": body.get("model") or self.model, "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 120, "output_tokens": 1}}
        if not body.get("stream"):
            return Reply(json_body={**message, "content": blocks, "stop_reason": stop,
                                    "usage": {"input_tokens": 120, "output_tokens": 20}})
        events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start",
                                                                   "message": {**message, "content": []}})]
        for index, block in enumerate(blocks):
            events += _block_events(index, block)
        events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": 20}}),
                   ("message_stop", {"type": "message_stop"})]
        return Reply(events=events)


def _tool_uses(messages: list[dict[str, Any]]) -> set[str]:
    """Names of the tools the model has called so far in this conversation."""
    return {b.get("name") for msg in messages if msg.get("role") == "assistant" and isinstance(msg.get("content"), list)
            for b in msg["content"] if isinstance(b, dict) and b.get("type") == "tool_use"}


def _last_user_has_tool_result(messages: list[dict[str, Any]]) -> bool:
    """Turn 2 once the shell's result came back: a tool result after the model's last turn. Hook
    context (`<system-reminder>` text beside it, or a user turn of its own) is not a new prompt."""
    for msg in reversed(messages):
        if msg.get("role") == "assistant":
            return False
        content = msg.get("content")
        if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
            return True
    return False


def _block_events(index: int, block: dict[str, Any]) -> list[tuple[str | None, Any]]:
    import json

    if block["type"] == "text":
        start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
    else:
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    return [("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index})]
