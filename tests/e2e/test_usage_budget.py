"""Issue 27 §1–2 end to end, real server and daemon processes, on SQLite and PostgreSQL: a `command`
agent prints Claude Code's real stream (the golden transcript's lines, tests/fixtures/transcripts)
and its usage is stored and rolled up (API and `predictorx usage`); a hard budget holds the next
task queued with a reason naming it; a hard budget reached while a run streams cancels the run —
its agent stopped, its messages kept, the reason stored."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .harness import UNCONFINED, wait_until

TRANSCRIPT = Path(__file__).parents[1] / "fixtures" / "transcripts" / "claude.stream.jsonl"

#: Claude Code's stream as it came: init, assistant turns with their usage, the result with the run's totals.
REPLAY = f"""
import sys
sys.stdout.write(open({str(TRANSCRIPT)!r}, encoding="utf-8").read())
sys.stdout.flush()
"""

#: An agent in a loop, in Claude Code's form: a message a tenth of a second, each 300 tokens in.
LOOP = r"""
import json, sys, time
print(json.dumps({"type": "system", "subtype": "init", "model": "claude-sonnet-4-5", "session_id": "s1"}), flush=True)
for n in range(600):
    print(json.dumps({"type": "assistant", "session_id": "s1", "message": {
        "id": f"msg_{n}", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 300, "output_tokens": 10},
        "content": [{"type": "text", "text": f"step {n}"}]}}), flush=True)
    time.sleep(0.1)
"""


def _agent(server, name: str, script: str) -> None:
    server.api("POST", "/api/agents", {"name": name, "provider": "command", "command": [sys.executable, "-c", script],
                                       **UNCONFINED})


def _run(server, agent: str, title: str) -> dict:
    number = server.api("POST", "/api/issues", {"title": title, "assignee": agent})["number"]
    return wait_until(lambda: (r := server.runs(number)) and r[0], what="a task")


def test_usage_in_claude_codes_stream_is_stored_rolled_up_and_then_held_by_a_hard_budget(server, start_daemon):
    start_daemon()
    _agent(server, "replay", REPLAY)
    task = server.wait_task(_run(server, "replay", "Run the command")["id"], timeout=60)
    assert task["status"] == "completed", task
    assert task["result"] == "All done: README.md has its new line."
    usage = server.api("GET", f"/api/usage/runs/{task['id']}")
    assert usage == {**usage, "model": "claude-opus-5-5", "input_tokens": 240, "output_tokens": 40,
                     "total_tokens": 280, "cost_usd": 0.00176, "cost_source": "cli", "final": True}
    # the usage lines are no transcript messages
    assert not any(m["content"].get("event") == "usage" for m in server.api("GET", f"/api/tasks/{task['id']}/messages"))
    for by in ("agent", "project", "day", "issue", "person"):
        out = json.loads(server.cli("usage", "--by", by, "--output", "json").stdout)
        assert out["totals"]["runs"] == 1 and out["totals"]["cost_usd"] == 0.00176 and out["totals"]["total_tokens"] == 280
    table = server.cli("usage", "--by", "agent").stdout
    assert "replay" in table and "$0.0018" in table
    # the workspace's own price of a model (owners and admins): listed, then removed
    server.cli("usage", "price", "set", "my-local-llama", "--input", "0.1", "--output-price", "0.2")
    prices = json.loads(server.cli("usage", "price", "list", "--output", "json").stdout)
    assert prices == [{"model": "my-local-llama", "input": 0.1, "output": 0.2, "cache_read": None, "cache_write": None,
                       "unit": "USD per million tokens"}]
    server.cli("usage", "price", "remove", "my-local-llama")
    bad = server.cli("usage", "--by", "colour", check=False)
    assert bad.returncode == 2 and "--by is one of" in bad.stderr
    # a hard budget of 100 tokens a day on the agent, already spent: its next task waits, saying why
    server.cli("budget", "set", "--agent", "replay", "--limit", "100", "--tokens", "--action", "stop")
    held = _run(server, "replay", "Once more")
    held = wait_until(lambda: (t := server.api("GET", f"/api/tasks/{held['id']}"))["wait_reason"] and t,
                      30, 0.1, "the wait reason")
    assert held["status"] == "queued"
    assert held["wait_reason"].startswith("hard budget reached: agent replay may spend 100 tokens a day")
    budgets = json.loads(server.cli("budget", "list", "--output", "json").stdout)
    assert budgets[0]["state"] == "reached" and budgets[0]["spent"] == 280
    # raised: the task runs
    server.cli("budget", "set", "--agent", "replay", "--limit", "10000", "--tokens", "--action", "stop")
    assert server.wait_task(held["id"], timeout=60)["status"] == "completed"


def test_a_hard_budget_stops_a_streaming_run_and_keeps_its_messages(server, start_daemon):
    start_daemon()
    _agent(server, "looper", LOOP)
    server.cli("budget", "set", "--agent", "looper", "--limit", "3000", "--tokens", "--action", "stop")
    began = time.monotonic()
    task = server.wait_task(_run(server, "looper", "Loop")["id"], timeout=60)
    assert task["status"] == "cancelled", task
    assert task["failure_reason"].startswith("hard budget reached: agent looper may spend 3,000 tokens a day")
    assert time.monotonic() - began < 50  # stopped, not run to its end (60 s)
    msgs = server.api("GET", f"/api/tasks/{task['id']}/messages")
    steps = [m["content"]["text"] for m in msgs if m["kind"] == "text"]
    assert len(steps) >= 10 and steps == [f"step {n}" for n in range(len(steps))]
    assert [m["seq"] for m in msgs] == list(range(len(msgs)))
    usage = server.api("GET", f"/api/usage/runs/{task['id']}")
    assert usage["total_tokens"] >= 3000 and usage["cost_source"] == "table" and usage["cost_usd"] > 0
