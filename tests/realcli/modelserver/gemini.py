"""The Gemini API's streaming generate-content (`POST /v1beta/models/<m>:streamGenerateContent?alt=sse`),
as Gemini CLI calls it with an API key and `GOOGLE_GEMINI_BASE_URL`."""

from __future__ import annotations

from typing import Any

from .base import ModelServer, Recorded, Reply, tool_arguments

SHELL_TOOL = "run_shell_command"


class GeminiServer(ModelServer):
    protocol = "gemini"
    model = "gemini-scripted-1"

    def reply(self, req: Recorded) -> Reply:
        method = req.path.rsplit(":", 1)[-1] if ":" in req.path else ""
        if method == "countTokens":
            req.turn = "aside"
            return Reply(json_body={"totalTokens": 100})
        if method not in ("streamGenerateContent", "generateContent"):
            req.turn = "aside"
            return Reply(404, json_body={"error": {"code": 404, "message": f"no route {req.path}", "status": "NOT_FOUND"}})
        body = req.body or {}
        shell = next((d for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []
                      if d.get("name") == SHELL_TOOL), None)
        contents = body.get("contents") or []
        if shell is None or method == "generateContent":
            # Side calls (next-speaker checks, summaries) ask for JSON or prose; a plain, short answer.
            req.turn, parts = "aside", [{"text": _aside_text(body)}]
        elif _last_has_function_response(contents):
            req.turn, parts = "answer", [{"text": self.answer}]
        else:
            req.turn = "tool"
            params = shell.get("parametersJsonSchema") or shell.get("parameters")
            parts = [{"text": "Running the command."},
                     {"functionCall": {"name": SHELL_TOOL, "args": tool_arguments(params, {"command": self.command_for(req)})}}]
        chunk = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 20, "totalTokenCount": 140},
                 "modelVersion": self.model}
        if method == "generateContent":
            return Reply(json_body=chunk)
        return Reply(events=[(None, chunk)])


def _last_has_function_response(contents: list[dict[str, Any]]) -> bool:
    """Turn 2 once the shell's result came back after the model's last turn."""
    for content in reversed(contents):
        if content.get("role") == "model":
            return False
        if any("functionResponse" in p for p in content.get("parts") or []):
            return True
    return False


def _aside_text(body: dict[str, Any]) -> str:
    config = body.get("generationConfig") or {}
    if config.get("responseMimeType") == "application/json":
        return '{"reasoning": "The model has finished its turn.", "next_speaker": "user"}'
    return "Scripted work"
