"""The OpenAI Responses API with SSE, as Codex calls it through a model provider (`POST /v1/responses`)."""

from __future__ import annotations

import json
from typing import Any

from .base import ModelServer, Recorded, Reply, tool_arguments


class ResponsesServer(ModelServer):
    protocol = "responses"
    model = "gpt-scripted-1"
    #: When set and Codex offers its `tool_search` tool (a catalogued model such as gpt-5.5 gets
    #: MCP tools deferred behind it), the first turn searches for this query, as the real model
    #: does to reach MCP tools; Codex answers with a `tool_search_output` in the next request.
    search: str | None = None

    def reply(self, req: Recorded) -> Reply:
        if req.method == "GET" and req.path.endswith("/models"):
            req.turn = "aside"
            return Reply(json_body={"object": "list", "data": [{"id": self.model, "object": "model"}], "models": []})
        if not req.path.endswith("/responses"):
            req.turn = "aside"
            return Reply(404, json_body={"error": {"message": f"no route {req.path}"}})
        body = req.body or {}
        shell = _shell_tool(body.get("tools") or [])
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]
        searchable = any(t.get("type") == "tool_search" for t in body.get("tools") or [])
        if shell is None:
            req.turn, output = "aside", [self._message("Scripted work")]
        elif self.search and searchable and not any(i.get("type") == "tool_search_output" for i in items):
            req.turn = "search"
            output = [{"type": "tool_search_call", "id": self.next_id("ts_"), "call_id": self.next_id("search_"),
                       "execution": "client", "status": "completed", "arguments": {"query": self.search, "limit": 20}}]
        elif _output_after_last_turn(items):
            req.turn, output = "answer", [self._message(self.answer)]
        else:
            req.turn = "tool"
            name, params = shell
            key = "cmd" if name == "exec_command" else "command"
            command: Any = self.command_for(req) if key == "cmd" else ["bash", "-lc", self.command_for(req)]
            call_id = self.next_id("call_")
            output = [self._message("Running the command."),
                      {"type": "function_call", "id": self.next_id("fc_"), "call_id": call_id, "name": name,
                       "arguments": json.dumps(tool_arguments(params, {key: command})), "status": "completed"}]
        response = {"id": self.next_id("resp_"), "object": "response", "model": body.get("model") or self.model,
                    "status": "completed", "output": output,
                    "usage": {"input_tokens": 120, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20,
                              "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 140}}
        events: list[tuple[str | None, Any]] = [("response.created", {"type": "response.created",
                                                                     "response": {**response, "status": "in_progress", "output": []}})]
        for index, item in enumerate(output):
            events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": index, "item": item}))
            if item["type"] == "message":
                events.append(("response.output_text.delta", {"type": "response.output_text.delta", "item_id": item["id"],
                                                              "output_index": index, "content_index": 0,
                                                              "delta": item["content"][0]["text"]}))
            events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": index, "item": item}))
        events.append(("response.completed", {"type": "response.completed", "response": response}))
        return Reply(events=events)

    def _message(self, text: str) -> dict[str, Any]:
        return {"type": "message", "id": self.next_id("msg_"), "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}


def _shell_tool(tools: list[dict[str, Any]]) -> tuple[str, dict[str, Any] | None] | None:
    by_name = {t.get("name"): t for t in tools if t.get("type") == "function"}
    for name in ("exec_command", "shell", "local_shell"):
        if name in by_name:
            return name, by_name[name].get("parameters")
    return None


def _output_after_last_turn(items: list[dict[str, Any]]) -> bool:
    """Turn 2 once the shell's output came back after the model's last turn; hook context (a user
    or developer message beside it) is not a new prompt."""
    for item in reversed(items):
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            return True
        if item.get("role") == "assistant" or item.get("type") in ("function_call", "reasoning", "tool_search_call"):
            return False
    return False
