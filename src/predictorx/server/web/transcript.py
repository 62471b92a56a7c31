"""Agent messages as a person reads them (issue 13 §3): text as sanitised Markdown, a tool call as
its shell command or formatted JSON, long outputs folded, the CLI's init as one short line.

Markdown is rendered by markdown-it-py with raw HTML off, then cleaned by nh3 (ammonia), so an
agent — or a prompt-injected one — cannot put script, styles or event handlers on the page
(predictorx/richtext.py). A page renders at most a fold's head of each message (FOLD_CHARS); the
whole of one message is rendered only when asked for, and above richtext.RENDER_MAX_CHARS it is
shown as plain text.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from markupsafe import Markup, escape

from ... import richtext

#: Bigger texts are shown as plain text: rendering them costs more than it gives (issue 29 §5).
MARKDOWN_MAX = richtext.RENDER_MAX_CHARS
#: Outputs with more lines or characters than this start folded, with their first lines shown.
FOLD_LINES = 12
FOLD_CHARS = 1500
#: Tool inputs whose command is one of these keys read best as a shell line.
_COMMAND_KEYS = ("command", "cmd")


def markdown(text: Any) -> Markup:
    value = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    if len(value) > MARKDOWN_MAX:
        return Markup(f'<pre class="mono">{escape(value)}</pre>')
    return Markup(_cached(value) if len(value) <= CACHE_MAX else _render(value))


#: Texts up to this size are cached (at most 4,096 of them: about 16 MB at worst).
CACHE_MAX = 4000


def _render(value: str) -> str:
    return richtext.render(value)


@functools.lru_cache(maxsize=4096)
def _cached(value: str) -> str:
    """Messages never change once stored, and live pages re-render the same ones."""
    return _render(value)


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def shell_command(tool_input: Any) -> str | None:
    """`ls -la` for a Bash-like call ({"command": "ls -la"} or ["bash", "-lc", "ls -la"]), else None."""
    if not isinstance(tool_input, dict):
        return None
    for key in _COMMAND_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            if len(value) == 3 and value[1] in ("-c", "-lc"):
                return value[2]
            return " ".join(value)
    return None


def tool_summary(name: str, tool_input: Any) -> str:
    """One line for the folded tool call: its command, its file, or its first argument."""
    command = shell_command(tool_input)
    if command:
        return command.splitlines()[0][:160]
    if isinstance(tool_input, dict):
        for key in ("file_path", "path", "pattern", "url", "query", "description"):
            if isinstance(tool_input.get(key), str):
                return tool_input[key][:160]
    return ""


def fold(text: str) -> dict[str, Any]:
    """{'text', 'long', 'head', 'rest', 'lines'}: whether to fold, what to show while folded, and
    what follows the head (the whole text when the head is not a plain prefix of it)."""
    lines = text.count("\n") + 1 if text else 0
    long = lines > FOLD_LINES or len(text) > FOLD_CHARS
    head = "\n".join(text.splitlines()[:FOLD_LINES])[:FOLD_CHARS] if long else text
    rest = text[len(head):] if text.startswith(head) else text
    return {"text": text, "long": long, "head": head, "rest": rest, "lines": lines}


_SYSTEM_SKIP = {"event", "session_id", "tools", "mcp_servers", "slash_commands", "apiKeySource",
                "permissionMode", "uuid", "output_style", "agents", "plugins", "skills"}


def system_line(content: dict[str, Any]) -> str:
    """`init` → 'Session started · model sonnet · in /repo'; nulls and long lists left out."""
    event = str(content.get("event") or "system")
    if event in ("init", "session"):
        parts = ["Session started"]
        if content.get("model"):
            parts.append(f"model {content['model']}")
        if content.get("cwd"):
            parts.append(f"in {content['cwd']}")
        return " · ".join(parts)
    if isinstance(content.get("message"), str):
        return content["message"]
    if event == "output" and isinstance(content.get("text"), str):
        return content["text"]
    extras = []
    for key, value in content.items():
        if key in _SYSTEM_SKIP or value is None or value == "" or value == [] or value == {}:
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        extras.append(f"{key.replace('_', ' ')}: {text[:200]}")
    return " · ".join([event.replace("_", " "), *extras])
