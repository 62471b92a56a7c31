"""The `acp` adapter against a real ACP peer (tests/agents/acp_peer.py, the official SDK's agent
side) over stdio, through the shared process runner: messages, permissions, files, load, cancel."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import psutil
import pytest

from predictorx.agentconfig import acp_profiles
from predictorx.agents import AgentMessage, get
from predictorx.agents.acp_link import split_overrides
from predictorx.agents.process import STOP_BUDGET_S

from .conftest import Task, run_agent

PEER = [sys.executable, str(Path(__file__).with_name("acp_peer.py"))]
HARNESS_ARGS = ["--dangerously-bypass-hook-trust", "-c", 'mcp_servers.predictorx.command="/usr/bin/python3"',
                "-c", 'mcp_servers.predictorx.args=["mcp.py", "--env-file", "/x/env.json"]',
                "-c", 'mcp_servers.agents-room.command="/usr/bin/python3"',
                "-c", 'mcp_servers.agents-room.env={AGENTS_ROOM_HARNESS = "codex"}',
                "-c", "features.hooks=true"]


def by_kind(messages: list[AgentMessage], kind: str) -> list[AgentMessage]:
    return [msg for msg in messages if msg.kind == kind]


async def test_a_task_runs_over_acp(task: Task):
    messages, result = await run_agent("acp", task.spec(argv_override=PEER, extra_args=HARNESS_ARGS))

    assert result.status == "completed", result.failure_reason
    assert result.session_id == "peer-1"
    assert result.result == " Done."
    # In the order the agent sent them; text chunks joined per stretch.
    kinds = [(m.kind, m.content.get("event")) for m in messages]
    assert kinds == [("system", "session"), ("thinking", None), ("text", None), ("system", "plan"),
                     ("tool_use", None), ("system", "permission"), ("tool_result", None), ("text", None)]
    assert by_kind(messages, "thinking")[0].content == {"text": "thinking it over"}
    assert by_kind(messages, "text")[0].content == {"text": "Hello, world."}
    assert messages[3].content["entries"] == [{"content": "write the note", "status": "in_progress",
                                               "priority": "medium"}]
    use, result_msg = by_kind(messages, "tool_use")[0], by_kind(messages, "tool_result")[0]
    assert use.content["id"] == "call-1" and use.content["name"] == "Write note.txt"
    assert use.content["input"] == {"path": str(task.workdir / "note.txt")}
    assert result_msg.content["tool_use_id"] == "call-1" and result_msg.content["is_error"] is False
    assert result_msg.content["output"] == "wrote it"
    assert result_msg.content["diffs"] == [{"path": str(task.workdir / "note.txt"), "old_text": None,
                                            "new_text": "written by the peer\n"}]
    permission = by_kind(messages, "system")[2].content
    assert permission["policy"] == "allow" and permission["choice"] == "yes"
    assert [o["kind"] for o in permission["options"]] == ["allow_once", "allow_always", "reject_once"]
    # The client's fs/write_text_file wrote it; the MCP servers reached session/new, the hooks did not.
    assert (task.workdir / "note.txt").read_text() == "written by the peer\n"
    assert (task.workdir / "mcp.txt").read_text() == "predictorx,agents-room"
    # The raw JSON-RPC both ways is the agent's stdout, kept verbatim; its stderr apart.
    raw = [json.loads(line) for line in (task.logs / "acp.stream.jsonl").read_text().splitlines()]
    assert any(r.get("method") == "session/update" for r in raw)
    assert "the peer starts" in (task.logs / "acp.stderr.log").read_text()


async def test_deny_policy_rejects_and_is_recorded(task: Task):
    messages, result = await run_agent("acp", task.spec(argv_override=PEER, permission_policy="deny"))

    assert result.status == "completed", result.failure_reason
    permission = [m.content for m in messages if m.content.get("event") == "permission"][0]
    assert permission["choice"] == "no"
    failed = by_kind(messages, "tool_result")[0].content
    assert failed["is_error"] is True and failed["output"] == "not allowed (no)"
    assert not (task.workdir / "note.txt").exists()


async def test_files_outside_the_workdir_are_refused(task: Task):
    messages, result = await run_agent("acp", task.spec("go PEER_OUTSIDE", argv_override=PEER))

    assert result.status == "completed", result.failure_reason
    said = "".join(m.content["text"] for m in by_kind(messages, "text"))
    assert "refused" in said and "outside the task's folder" in said
    assert "read outside" not in said


async def test_a_follow_up_loads_the_session_without_recording_its_history(task: Task):
    messages, result = await run_agent("acp", task.spec(argv_override=PEER, resume_session_id="peer-7"))

    assert result.status == "completed", result.failure_reason
    assert result.session_id == "peer-7"
    texts = [m.content["text"] for m in by_kind(messages, "text")]
    assert "earlier answer" not in texts and texts[0] == "Hello, world."


async def test_an_unknown_session_fails_then_starts_afresh(task: Task):
    messages: list[AgentMessage] = []

    async def collect(msg: AgentMessage) -> None:
        messages.append(msg)

    result = await get("acp").run_resuming(task.spec(argv_override=PEER, resume_session_id="gone-1"), collect,
                                           asyncio.Event(), "Fix the bug")
    assert result.status == "completed", result.failure_reason
    assert result.session_id == "peer-1"
    assert any(m.content.get("event") == "resume_failed" for m in messages)


async def test_cancel_sends_session_cancel_and_stops_the_group(task: Task):
    cancel = asyncio.Event()
    run = asyncio.create_task(run_agent("acp", task.spec("PEER_SPAWN then PEER_HANG", argv_override=PEER), cancel))
    pid_file = task.workdir / "child.pid"
    deadline = time.monotonic() + 20
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    child = int(pid_file.read_text())
    # Wait for the tool call to finish: the peer is then waiting for session/cancel.
    while not (task.workdir / "note.txt").exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    started = time.monotonic()
    cancel.set()
    messages, result = await run
    assert time.monotonic() - started < STOP_BUDGET_S
    assert result.status == "cancelled"
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE


async def test_a_missing_command_is_a_sentence(task: Task):
    _, result = await run_agent("acp", task.spec())
    assert result.status == "failed" and "--acp-command" in (result.failure_reason or "")


async def test_an_agent_that_is_not_acp_fails_with_its_output(task: Task):
    _, result = await run_agent("acp", task.spec(argv_override=["sh", "-c", "echo not an acp agent; exit 3"]))
    assert result.status == "failed"
    assert "ACP" in (result.failure_reason or "")


def test_overrides_become_mcp_servers_and_leave_the_argv():
    servers, rest = split_overrides(["--keep", *HARNESS_ARGS])
    assert rest == ["--keep"]
    assert servers == [
        {"name": "predictorx", "command": "/usr/bin/python3", "args": ["mcp.py", "--env-file", "/x/env.json"],
         "env": []},
        {"name": "agents-room", "command": "/usr/bin/python3", "args": [],
         "env": [{"name": "AGENTS_ROOM_HARNESS", "value": "codex"}]},
    ]


def test_profiles_are_found_by_their_executable():
    assert acp_profiles.for_command(["/opt/bin/gemini", "--experimental-acp"]).name == "gemini"
    assert acp_profiles.for_command(["opencode", "acp"]).name == "opencode"
    assert acp_profiles.for_command(["my-agent", "--acp"]) is None
    adapter = get("acp")
    argv = adapter.build_argv(adapter_spec := _spec(["gemini", "--experimental-acp"], model="gemini-x"))
    assert argv == ["gemini", "--experimental-acp", "--model", "gemini-x"]
    assert adapter.build_env(adapter_spec)["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    with pytest.raises(acp_profiles.UnknownProfile, match="shipped profiles: gemini"):
        acp_profiles.get("nope")


def _spec(argv: list[str], **kwargs):
    from predictorx.agents import RunSpec

    return RunSpec(prompt="p", cwd=Path("/tmp"), env={}, logs_dir=Path("/tmp"), argv_override=argv, **kwargs)


def test_a_call_announced_twice_is_one_tool_use_with_its_input():
    from predictorx.agents.acp_updates import flush, map_update
    from predictorx.agents.stream_state import StreamState

    state = StreamState()
    out = map_update({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Terminal", "kind": "execute",
                      "status": "pending", "rawInput": {}}, state)
    out += map_update({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "`ls`", "kind": "execute",
                       "status": "pending", "rawInput": {"command": "ls"}}, state)
    out += map_update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
                       "content": [{"type": "content", "content": {"type": "text", "text": "a b"}}]}, state)
    out += map_update({"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "Read", "status": "pending"}, state)
    out += flush(state)
    assert [(o.kind, o.content.get("name"), o.content.get("input")) for o in out] == [
        ("tool_use", "`ls`", {"command": "ls"}), ("tool_result", None, None), ("tool_use", "Read", None)]
    assert out[1].content["output"] == "a b"


async def test_ask_waits_for_a_person_and_records_the_pick(task: Task):
    asked: list[str] = []

    async def person(request_id: str) -> str | None:
        asked.append(request_id)
        return "always"

    messages, result = await run_agent("acp", task.spec(argv_override=PEER, permission_policy="ask",
                                                        ask_person=person))
    assert result.status == "completed", result.failure_reason
    events = [m.content for m in messages if m.kind == "system" and m.content["event"].startswith("permission")]
    assert [e["event"] for e in events] == ["permission", "permission_answer"]
    assert events[0]["waiting"] is True and events[0]["request_id"] == asked[0] == events[1]["request_id"]
    assert events[1]["choice"] == "always" and (task.workdir / "note.txt").exists()


async def test_ask_without_an_answer_in_time_denies(task: Task):
    async def nobody(request_id: str) -> str | None:
        await asyncio.Event().wait()
        return None

    messages, result = await run_agent("acp", task.spec(argv_override=PEER, permission_policy="ask",
                                                        ask_person=nobody, ask_timeout_s=0.3))
    assert result.status == "completed", result.failure_reason
    timeout = next(m.content for m in messages if m.content.get("event") == "permission_timeout")
    assert timeout["choice"] == "no" and "answered deny" in timeout["message"]
    assert not (task.workdir / "note.txt").exists()


async def test_the_agents_model_goes_to_the_option_named_model(task: Task):
    """Cline offers its provider and its model both in the `model` category, the provider first:
    the agent's model is set on the option named `model`, never on the provider."""
    _messages, result = await run_agent("acp", task.spec(argv_override=PEER, model="m-2"))
    assert result.status == "completed", result
    assert (task.workdir / "config.txt").read_text() == "model=m-2\n"
