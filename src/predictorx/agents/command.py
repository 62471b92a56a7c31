"""`command`: any executable as an agent (R-EX-8).

The command line comes whole from the agent's configuration (`RunSpec.argv_override`), with
`extra_args` appended. The prompt is written to stdin (then closed) and also put in the
environment as `PREDICTORX_PROMPT`; `PREDICTORX_PROMPT_FILE` names a file holding it, for
prompts too long for one environment variable (Linux caps one at 128 KiB; past
`MAX_PROMPT_ENV_BYTES` only the file is given).

Output: a stdout line that is a JSON object whose `type` is one of text, thinking, tool_use,
tool_result, error becomes that message, its other keys the content
(`{"type":"text","text":"hi"}` → text `{"text":"hi"}`). Any other line becomes a text message
marked `"stream": "stdout"` (raw output, which the run's page shows as a console).
An error message fails the run; so does a non-zero exit. The answer is the last text message.

Usage (issue 27) in Claude Code's stream form: a `{"type":"system","subtype":"init","model":…}`
line names the model, an `assistant` line's `message.usage` counts while the run goes on (its text
blocks become text messages), and a `result` line (`usage`, `total_cost_usd`, `modelUsage`) gives
the run's totals; none of them is a message of its own (agents/usage.py).
"""

from __future__ import annotations

from . import message as m
from . import usage
from .adapter import AgentAdapter, parse_json_object
from .message import AgentMessage
from .registry import register
from .spec import RunSpec
from .stream_state import StreamState

MAX_PROMPT_ENV_BYTES = 100_000
STRUCTURED_KINDS = ("text", "thinking", "tool_use", "tool_result", "error")


class CommandAdapter(AgentAdapter):
    provider = "command"
    executable = None
    instruction_file = "AGENTS.md"
    capabilities = ("prompt-stdin", "prompt-env")

    def probe(self, path: str | None = None) -> str | None:
        """Always available: it runs what it is given. With `path`, that program's version."""
        if path:
            return super().probe(path)
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"predictorx {version('predictorx')}"
        except PackageNotFoundError:
            return "predictorx"

    def build_argv(self, spec: RunSpec) -> list[str]:
        return [*self.command_prefix(spec), *spec.extra_args]

    def build_env(self, spec: RunSpec) -> dict[str, str]:
        env = super().build_env(spec)
        prompt_file = spec.logs_dir / "prompt.txt"
        prompt_file.parent.mkdir(parents=True, exist_ok=True)
        prompt_file.write_text(spec.prompt, encoding="utf-8")
        env["PREDICTORX_PROMPT_FILE"] = str(prompt_file)
        if len(spec.prompt.encode("utf-8")) <= MAX_PROMPT_ENV_BYTES:
            env["PREDICTORX_PROMPT"] = spec.prompt
        else:
            env.pop("PREDICTORX_PROMPT", None)
        return env

    def parse_line(self, line: str, state: StreamState) -> list[AgentMessage]:
        event = parse_json_object(line)
        if event is not None and _claude_usage_line(event):
            return _usage_line(event, state)
        if event is None or event.get("type") not in STRUCTURED_KINDS:
            state.last_text = line
            # marked as raw output: the run's page shows consecutive ones as one console (web/console.py)
            return [AgentMessage("text", {"text": line, "stream": "stdout"})]
        kind = event["type"]
        content = {k: v for k, v in event.items() if k != "type"}
        if kind == "text" and isinstance(content.get("text"), str):
            state.last_text = content["text"]
        if kind == "error":
            message = content.get("message")
            state.error = message if isinstance(message, str) and message else line
        return [AgentMessage(kind, content)]


def _claude_usage_line(event: dict) -> bool:
    """One of Claude Code's events a command's usage is read from (any other line is as before)."""
    kind = event.get("type")
    if kind == "system":
        return event.get("subtype") == "init"
    if kind == "assistant":
        return isinstance(event.get("message"), dict)
    return kind == "result" and ("usage" in event or "total_cost_usd" in event)


def _usage_line(event: dict, state: StreamState) -> list[AgentMessage]:
    kind = event["type"]
    if kind == "system":
        if isinstance(event.get("model"), str):
            state.model = event["model"]
        return []
    if kind == "result":
        usage.set_claude_result(event, state)
        return []
    usage.add_claude_message(event, state)
    content = (event.get("message") or {}).get("content") if isinstance(event.get("message"), dict) else None
    out = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            state.last_text = block["text"]
            out.append(m.text(block["text"]))
    return out


register(CommandAdapter)
