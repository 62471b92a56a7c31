"""OpenAI-compatible chat completions, streaming (`POST /v1/chat/completions`, `data: [DONE]`),
as OpenCode calls a provider configured with `@ai-sdk/openai-compatible`, and Qwen Code its
`openai` auth type."""

from __future__ import annotations

import json
import time
from typing import Any

from .base import ModelServer, Recorded, Reply, tool_arguments

#: The shell tool's name: OpenCode's `bash`, Qwen Code's `run_shell_command` (Gemini CLI's).
SHELL_TOOLS = ("bash", "run_shell_command")
#: Cline's shell tool takes a list of commands (`{"commands": [...]}`).
SHELL_TOOLS += ("run_commands",)


class ChatCompletionsServer(ModelServer):
    protocol = "chat"
    model = "chat-scripted-1"

    def reply(self, req: Recorded) -> Reply:
        if req.method == "GET" and req.path.endswith("/models"):
            req.turn = "aside"
            return Reply(json_body={"object": "list", "data": [{"id": self.model, "object": "model"}]})
        if not req.path.endswith("/chat/completions"):
            req.turn = "aside"
            return Reply(404, json_body={"error": {"message": f"no route {req.path}"}})
        body = req.body or {}
        shell = next((t["function"] for t in body.get("tools") or []
                      if (t.get("function") or {}).get("name") in SHELL_TOOLS), None)
        messages = body.get("messages") or []
        if shell is None:
            req.turn, delta, finish = "aside", {"role": "assistant", "content": "Scripted work"}, "stop"
        elif _tool_after_last_turn(messages):
            req.turn, delta, finish = "answer", {"role": "assistant", "content": self.answer}, "stop"
        else:
            req.turn, finish = "tool", "tool_calls"
            command = self.command_for(req)
            given = {"commands": [command]} if shell["name"] == "run_commands" else {"command": command}
            args = tool_arguments(shell.get("parameters"), given)
            delta = {"role": "assistant", "content": "Running the command.",
                     "tool_calls": [{"index": 0, "id": self.next_id("call_"), "type": "function",
                                     "function": {"name": shell["name"], "arguments": json.dumps(args)}}]}
        base = {"id": self.next_id("chatcmpl-"), "object": "chat.completion.chunk", "created": int(time.time()),
                "model": body.get("model") or self.model}
        usage = {"prompt_tokens": 120, "completion_tokens": 20, "total_tokens": 140}
        if not body.get("stream"):
            message = {k: v for k, v in delta.items() if k != "tool_calls"}
            if "tool_calls" in delta:
                message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in delta["tool_calls"]]
            return Reply(json_body={**base, "object": "chat.completion", "usage": usage,
                                    "choices": [{"index": 0, "message": message, "finish_reason": finish}]})
        events: list[tuple[str | None, Any]] = [
            (None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
            (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage}),
            (None, "[DONE]"),
        ]
        return Reply(events=events)


def _tool_after_last_turn(messages: list[dict[str, Any]]) -> bool:
    """Turn 2 once the shell's result came back after the model's last turn."""
    for msg in reversed(messages):
        if msg.get("role") == "tool":
            return True
        if msg.get("role") == "assistant":
            return False
    return False
