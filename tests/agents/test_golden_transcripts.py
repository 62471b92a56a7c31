"""Parser regression data (R-EX-3): raw streams recorded from the pinned real CLIs (tests/realcli,
`make record-transcripts`), each a worktree task whose model called the CLI's shell tool once
(printing the instruction file and resources.json) and then answered. Every adapter must read its
CLI's stream into the same story: text, tool use, tool result, final text, session id, usage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from predictorx.agents import get

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
SHELL_TOOL = {"claude": "Bash", "codex": "shell", "gemini": "run_shell_command", "opencode": "bash"}
ANSWER = "All done: README.md has its new line."


@pytest.mark.parametrize("provider", sorted(SHELL_TOOL))
def test_a_recorded_real_stream_reads_as_the_run_it_was(provider: str):
    lines = (TRANSCRIPTS / f"{provider}.stream.jsonl").read_text().splitlines()
    messages, state = get(provider).parse_stream(lines)
    kinds = [m.kind for m in messages]
    assert not [m for m in messages if m.kind == "system" and m.content.get("event") in ("unparsed", "output")], kinds
    assert "error" not in kinds, [m.content for m in messages if m.kind == "error"]
    story = [k for k in kinds if k in ("text", "tool_use", "tool_result")]
    assert story == ["text", "tool_use", "tool_result", "text"], kinds
    use = next(m for m in messages if m.kind == "tool_use")
    result = next(m for m in messages if m.kind == "tool_result")
    assert use.content["name"] == SHELL_TOOL[provider]
    assert use.content["id"] == result.content["tool_use_id"]
    assert "cat " in json.dumps(use.content["input"]) and "resources.json" in json.dumps(use.content["input"])
    output = json.dumps(result.content)
    assert "## Project Context" in output and "project_id" in output and "cwd=" in output
    assert result.content["is_error"] is False
    assert state.result == ANSWER and messages[-1].content == {"text": ANSWER}
    assert state.session_id and state.usage
