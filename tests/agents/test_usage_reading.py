"""A run's usage in one form whatever CLI reported it (issue 27 §1, agents/usage.py): the golden
transcripts of the four CLIs read into the stored form, Claude Code's usage counted once per
message while it streams, and said live (a `system`/`usage` message) each time it changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from predictorx.agents import get
from predictorx.agents.usage import USAGE_EVENT, normalize

from .conftest import run_agent
from .test_agent_runs import script

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
COUNTS = {"input_tokens": 240, "output_tokens": 40, "cache_read_tokens": 0, "cache_write_tokens": 0,
          "reasoning_tokens": 0}


@pytest.mark.parametrize("provider, model, cost", [
    ("claude", "claude-opus-5-5", 0.00176),  # Claude Code's own total_cost_usd; its model from modelUsage
    ("codex", None, None),                   # Codex says neither: the agent's configured model, priced by the server
    ("gemini", "gemini-scripted-1", None),   # the stats' per-model breakdown
    ("opencode", None, None),                # its cost 0 for a model it cannot price is no figure
])
def test_each_golden_transcript_reads_into_the_stored_form(provider, model, cost):
    _, state = get(provider).parse_stream((TRANSCRIPTS / f"{provider}.stream.jsonl").read_text().splitlines())
    assert normalize(state.usage, state.model) == {**COUNTS, "model": model, "cost_usd": cost}


def test_cached_tokens_are_told_apart_from_fresh_input():
    codex = {"input_tokens": 1000, "cached_input_tokens": 600, "output_tokens": 50, "reasoning_output_tokens": 20}
    assert normalize(codex, "gpt-5-codex") == {"input_tokens": 400, "cache_read_tokens": 600, "cache_write_tokens": 0,
                                                "output_tokens": 50, "reasoning_tokens": 20, "cost_usd": None,
                                                "model": "gpt-5-codex"}
    claude = {"input_tokens": 10, "cache_read_input_tokens": 500, "cache_creation_input_tokens": 70,
              "output_tokens": 5, "total_cost_usd": 0.01}
    got = normalize(claude)
    assert (got["input_tokens"], got["cache_read_tokens"], got["cache_write_tokens"], got["cost_usd"]) == (10, 500, 70, 0.01)
    assert normalize({"input_tokens": 5, "cost": 0.2, "currency": "EUR"})["cost_usd"] is None  # not dollars
    assert normalize({}) is None and normalize({"input_tokens": 0}) is None


async def test_a_command_printing_claude_codes_stream_says_its_usage_live(task):
    argv = script(task, """
        import json
        print(json.dumps({"type": "system", "subtype": "init", "model": "claude-sonnet-4-5"}))
        for n in range(3):
            for block in ("one", "two"):  # two blocks of one message repeat its usage: counted once
                print(json.dumps({"type": "assistant", "message": {"id": f"m{n}", "usage": {"input_tokens": 100,
                                  "output_tokens": 10}, "content": [{"type": "text", "text": f"{block} {n}"}]}}))
        print(json.dumps({"type": "result", "subtype": "success", "total_cost_usd": 0.5,
                          "usage": {"input_tokens": 333, "output_tokens": 33}}))
    """)
    messages, result = await run_agent("command", task.spec(argv_override=argv))
    assert result.status == "completed", result.failure_reason
    said = [m.content for m in messages if m.kind == "system" and m.content.get("event") == USAGE_EVENT]
    assert [s["input_tokens"] for s in said] == [100, 200, 300, 333]
    assert said[-1]["cost_usd"] == 0.5 and said[-1]["model"] == "claude-sonnet-4-5"
    texts = [m.content["text"] for m in messages if m.kind == "text"]
    assert texts == ["one 0", "two 0", "one 1", "two 1", "one 2", "two 2"] and result.result == "two 2"
