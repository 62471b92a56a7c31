"""`command`: any executable as an agent (R-EX-8).

The command line comes whole from the agent's configuration (`RunSpec.argv_override`), with
`extra_args` appended. The prompt is written to stdin (then closed) and also put in the
environment as `PREDICTORX_PROMPT`; `PREDICTORX_PROMPT_FILE` names a file holding it, for
prompts too long for one environment variable (Linux caps one at 128 KiB; past
`MAX_PROMPT_ENV_BYTES` only the file is given).

Output: a stdout line that is a JSON object whose `type` is one of text, thinking, tool_use,
tool_result, error becomes that message, its other keys the content
(`{"type":"text","text":"hi"}` → text `{"text":"hi"}`). Any other line becomes a text message.
An error message fails the run; so does a non-zero exit. The answer is the last text message.
"""

from __future__ import annotations

from . import message as m
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
        if event is None or event.get("type") not in STRUCTURED_KINDS:
            state.last_text = line
            return [m.text(line)]
        kind = event["type"]
        content = {k: v for k, v in event.items() if k != "type"}
        if kind == "text" and isinstance(content.get("text"), str):
            state.last_text = content["text"]
        if kind == "error":
            message = content.get("message")
            state.error = message if isinstance(message, str) and message else line
        return [AgentMessage(kind, content)]


register(CommandAdapter)
