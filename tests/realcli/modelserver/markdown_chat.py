"""OpenAI-compatible chat completions for an agent whose tools are markdown code blocks in the
model's text, not function calls: gptme (its ACP server uses its `markdown` tool format). Turn 1
answers with a ```shell block holding the test's command; gptme runs it and sends its output back
as a message of its own, and turn 2 (the model's last message is after the last user message) gives
the answer. The wire is the chat server's (streamed chunks, `data: [DONE]`)."""

from __future__ import annotations

import time
from typing import Any

from .base import Recorded, Reply
from .chat import ChatCompletionsServer


class MarkdownToolChatServer(ChatCompletionsServer):
    protocol = "chat-markdown"

    def reply(self, req: Recorded) -> Reply:
        if req.method == "GET" or not req.path.endswith("/chat/completions"):
            return super().reply(req)
        body = req.body or {}
        messages = body.get("messages") or []
        if not any(m.get("role") == "user" for m in messages):
            req.turn, text = "aside", "Scripted work"
        elif _answered_after_last_prompt(messages):
            req.turn, text = "answer", self.answer
        else:
            req.turn = "tool"
            text = f"Running the command.\n```shell\n{self.command_for(req)}\n```\n"
        base = {"id": self.next_id("chatcmpl-"), "object": "chat.completion.chunk", "created": int(time.time()),
                "model": body.get("model") or self.model}
        usage = {"prompt_tokens": 120, "completion_tokens": 20, "total_tokens": 140}
        if not body.get("stream"):
            return Reply(json_body={**base, "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})
        events: list[tuple[str | None, Any]] = [
            (None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                         "finish_reason": None}]}),
            (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage}),
            (None, "[DONE]"),
        ]
        return Reply(events=events)


def _answered_after_last_prompt(messages: list[dict[str, Any]]) -> bool:
    """The model already spoke (its shell block) since the last user message: this is turn 2."""
    for msg in reversed(messages):
        if msg.get("role") == "user":
            return False
        if msg.get("role") == "assistant":
            return True
    return False
