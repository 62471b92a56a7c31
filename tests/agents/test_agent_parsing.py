"""Each CLI's stream format → ordered messages, session id, result, usage, failure (pure parsing)."""

from __future__ import annotations

import json

import pytest

from predictorx.agents import AgentMessage, get


def lines(*events) -> list[str]:
    return [e if isinstance(e, str) else json.dumps(e) for e in events]


def kinds(messages: list[AgentMessage]) -> list[str]:
    return [m.kind for m in messages]


# -- Claude Code -----------------------------------------------------------------------------------

CLAUDE_OK = lines(
    {"type": "system", "subtype": "init", "session_id": "s-1", "model": "claude-sonnet-4-5", "cwd": "/w", "tools": ["Bash"]},
    {"type": "assistant", "session_id": "s-1", "message": {"content": [{"type": "thinking", "thinking": "hmm"}]}},
    {"type": "assistant", "session_id": "s-1", "message": {"content": [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
    ]}},
    {"type": "user", "session_id": "s-1", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    ]}},
    {"type": "stream_event", "event": {"type": "content_block_delta"}},
    {"type": "assistant", "session_id": "s-1", "message": {"content": [{"type": "text", "text": "All done."}]}},
    {"type": "result", "subtype": "success", "is_error": False, "result": "All done.", "session_id": "s-1",
     "num_turns": 2, "total_cost_usd": 0.01, "usage": {"input_tokens": 3, "output_tokens": 4}},
)


def test_claude_stream_becomes_ordered_messages():
    messages, state = get("claude").parse_stream(CLAUDE_OK)
    assert kinds(messages) == ["system", "thinking", "text", "tool_use", "tool_result", "text"]
    assert messages[0].content == {"event": "init", "session_id": "s-1", "model": "claude-sonnet-4-5", "cwd": "/w"}
    assert messages[1].content == {"text": "hmm"}
    assert messages[3].content == {"id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    assert messages[4].content == {"tool_use_id": "toolu_1", "output": "a\nb", "is_error": False}
    assert state.session_id == "s-1"
    assert state.result == "All done."
    assert state.error is None
    assert state.usage == {"input_tokens": 3, "output_tokens": 4, "num_turns": 2, "total_cost_usd": 0.01}


def test_claude_error_result_fails_the_run():
    messages, state = get("claude").parse_stream(lines(
        {"type": "system", "subtype": "init", "session_id": "s-2"},
        {"type": "result", "subtype": "success", "is_error": True, "result": "API Error: 401", "session_id": "s-2"},
    ))
    assert kinds(messages) == ["system", "error"]
    assert state.error == "API Error: 401"
    assert state.session_id == "s-2"


def test_claude_max_turns_is_a_failure_with_its_subtype():
    _, state = get("claude").parse_stream(lines({"type": "result", "subtype": "error_max_turns", "is_error": False}))
    assert state.error == "error_max_turns"


def test_claude_plain_text_line_is_kept_not_lost():
    messages, _ = get("claude").parse_stream(["Error: something odd", ""])
    assert messages == [AgentMessage("system", {"event": "output", "text": "Error: something odd"})]


# -- Codex -------------------------------------------------------------------------------------------

CODEX_OK = lines(
    {"type": "thread.started", "thread_id": "th-1"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "**Plan**"}},
    {"type": "item.started", "item": {"id": "item_1", "type": "command_execution", "command": "ls", "status": "in_progress"}},
    {"type": "item.completed", "item": {"id": "item_1", "type": "command_execution", "command": "ls",
                                        "aggregated_output": "x\n", "exit_code": 0, "status": "completed"}},
    {"type": "item.started", "item": {"id": "item_2", "type": "todo_list", "items": [{"text": "a", "completed": False}]}},
    {"type": "item.completed", "item": {"id": "item_3", "type": "mcp_tool_call", "server": "fs", "tool": "read",
                                        "arguments": {"p": 1}, "result": {"content": [{"type": "text", "text": "hi"}]},
                                        "status": "completed"}},
    {"type": "item.completed", "item": {"id": "item_4", "type": "file_change", "changes": [{"path": "a.py", "kind": "update"}],
                                        "status": "completed"}},
    {"type": "error", "message": "Reconnecting... 1/5"},
    {"type": "item.completed", "item": {"id": "item_5", "type": "agent_message", "text": "Finished."}},
    {"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 2, "output_tokens": 5}},
)


def test_codex_stream_becomes_ordered_messages():
    messages, state = get("codex").parse_stream(CODEX_OK)
    assert kinds(messages) == [
        "system", "thinking", "tool_use", "tool_result", "system", "tool_use", "tool_result",
        "tool_use", "tool_result", "error", "text",
    ]
    assert messages[2].content == {"id": "item_1", "name": "shell", "input": {"command": "ls"}}
    assert messages[3].content == {"tool_use_id": "item_1", "output": "x\n", "is_error": False, "exit_code": 0}
    assert messages[4].content == {"event": "plan", "items": [{"text": "a", "completed": False}]}
    assert messages[5].content["name"] == "fs.read" and messages[6].content["output"] == "hi"
    assert messages[7].content["input"] == {"changes": [{"path": "a.py", "kind": "update"}]}
    assert state.session_id == "th-1"
    assert state.result == "Finished."
    assert state.error is None  # a stream-level error the turn recovered from is not a failure
    assert state.usage == {"input_tokens": 10, "cached_input_tokens": 2, "output_tokens": 5}


def test_codex_failed_command_is_an_error_result():
    messages, _ = get("codex").parse_stream(lines(
        {"type": "item.completed", "item": {"id": "i", "type": "command_execution", "command": "false",
                                            "aggregated_output": "", "exit_code": 1, "status": "failed"}},
    ))
    assert kinds(messages) == ["tool_use", "tool_result"]
    assert messages[1].content["is_error"] is True


def test_codex_turn_failed_fails_the_run():
    messages, state = get("codex").parse_stream(lines(
        {"type": "thread.started", "thread_id": "th-2"},
        {"type": "turn.failed", "error": {"message": "401 Unauthorized"}},
    ))
    assert kinds(messages) == ["system", "error"]
    assert state.error == "401 Unauthorized"
    assert state.session_id == "th-2"


# -- Gemini CLI --------------------------------------------------------------------------------------

GEMINI_OK = lines(
    {"type": "init", "timestamp": "t", "session_id": "g-1", "model": "gemini-2.5-pro"},
    {"type": "message", "role": "user", "content": "the prompt"},
    {"type": "message", "role": "assistant", "content": "I'll ", "delta": True},
    {"type": "message", "role": "assistant", "content": "look.", "delta": True},
    {"type": "tool_use", "tool_name": "read_file", "tool_id": "t1", "parameters": {"path": "a"}},
    {"type": "tool_result", "tool_id": "t1", "status": "error", "error": {"type": "io", "message": "no such file"}},
    {"type": "error", "severity": "warning", "message": "loop detected"},
    {"type": "message", "role": "assistant", "content": "Done ", "delta": True},
    {"type": "message", "role": "assistant", "content": "now.", "delta": True},
    {"type": "result", "status": "success", "stats": {"total_tokens": 9, "input_tokens": 5, "output_tokens": 4}},
)


def test_gemini_deltas_are_joined_and_ordered():
    messages, state = get("gemini").parse_stream(GEMINI_OK)
    assert kinds(messages) == ["system", "text", "tool_use", "tool_result", "error", "text"]
    assert messages[1].content == {"text": "I'll look."}
    assert messages[2].content == {"id": "t1", "name": "read_file", "input": {"path": "a"}}
    assert messages[3].content == {"tool_use_id": "t1", "output": "no such file", "is_error": True}
    assert messages[5].content == {"text": "Done now."}
    assert state.session_id == "g-1"
    assert state.result == "Done now."
    assert state.error is None
    assert state.usage["total_tokens"] == 9


def test_gemini_trailing_deltas_are_flushed_at_the_end():
    messages, state = get("gemini").parse_stream(lines(
        {"type": "message", "role": "assistant", "content": "cut ", "delta": True},
        {"type": "message", "role": "assistant", "content": "short", "delta": True},
    ))
    assert messages == [AgentMessage("text", {"text": "cut short"})]
    assert state.last_text == "cut short"


def test_gemini_error_result_fails_the_run():
    _, state = get("gemini").parse_stream(lines(
        {"type": "result", "status": "error", "error": {"type": "QuotaError", "message": "Quota exceeded"}},
    ))
    assert state.error == "Quota exceeded"


# -- OpenCode ----------------------------------------------------------------------------------------

OPENCODE_OK = lines(
    {"type": "step_start", "sessionID": "ses_1", "part": {"type": "step-start"}},
    {"type": "text", "sessionID": "ses_1", "part": {"type": "text", "text": "Looking."}},
    {"type": "reasoning", "sessionID": "ses_1", "part": {"type": "reasoning", "text": "think"}},
    {"type": "tool_use", "sessionID": "ses_1", "part": {"type": "tool", "callID": "c1", "tool": "bash", "state": {
        "status": "completed", "input": {"command": "ls"}, "output": "x\n", "title": "List"}}},
    {"type": "tool_use", "sessionID": "ses_1", "part": {"type": "tool", "callID": "c2", "tool": "read", "state": {
        "status": "error", "input": {"filePath": "nope"}, "error": "File not found"}}},
    {"type": "step_finish", "sessionID": "ses_1", "part": {"reason": "tool-calls", "cost": 0.5,
                                                           "tokens": {"input": 10, "output": 1, "reasoning": 0, "cache": {"read": 3, "write": 0}}}},
    {"type": "text", "sessionID": "ses_1", "part": {"type": "text", "text": "Finished."}},
    {"type": "step_finish", "sessionID": "ses_1", "part": {"reason": "stop", "cost": 0.25,
                                                           "tokens": {"input": 20, "output": 2, "reasoning": 1, "cache": {"read": 3, "write": 1}}}},
)


def test_opencode_stream_becomes_ordered_messages():
    messages, state = get("opencode").parse_stream(OPENCODE_OK)
    assert kinds(messages) == ["system", "text", "thinking", "tool_use", "tool_result", "tool_use", "tool_result", "text"]
    assert messages[0].content == {"event": "session", "session_id": "ses_1"}
    assert messages[3].content == {"id": "c1", "name": "bash", "input": {"command": "ls"}}
    assert messages[4].content == {"tool_use_id": "c1", "output": "x\n", "is_error": False, "title": "List"}
    assert messages[6].content == {"tool_use_id": "c2", "output": "File not found", "is_error": True}
    assert state.session_id == "ses_1"
    assert state.result == "Finished."
    assert state.usage == {"input_tokens": 30, "output_tokens": 3, "reasoning_tokens": 1,
                           "cache_read_tokens": 6, "cache_write_tokens": 1, "cost": 0.75}


def test_opencode_error_event_fails_the_run():
    messages, state = get("opencode").parse_stream(lines(
        {"type": "error", "sessionID": "ses_2", "error": {"name": "APIError", "data": {"message": "Rate limit exceeded"}}},
    ))
    assert kinds(messages) == ["system", "error"]
    assert state.error == "Rate limit exceeded"


# -- command -----------------------------------------------------------------------------------------

def test_command_typed_json_lines_become_those_messages_and_the_rest_text():
    messages, state = get("command").parse_stream(lines(
        "starting",
        {"type": "thinking", "text": "plan"},
        {"type": "tool_use", "id": "1", "name": "sed", "input": {"file": "a"}},
        {"type": "tool_result", "tool_use_id": "1", "output": "ok", "is_error": False},
        {"type": "system", "text": "not a command kind"},
        "[1, 2]",
        "",
        {"type": "text", "text": "Changed a."},
    ))
    assert kinds(messages) == ["text", "thinking", "tool_use", "tool_result", "text", "text", "text"]
    assert messages[0].content == {"text": "starting", "stream": "stdout"}  # raw output: shown as a console
    assert messages[6].content == {"text": "Changed a."}
    assert messages[2].content == {"id": "1", "name": "sed", "input": {"file": "a"}}
    assert messages[4].content == {"text": '{"type": "system", "text": "not a command kind"}', "stream": "stdout"}
    assert state.result is None and state.last_text == "Changed a."
    assert state.error is None


def test_command_error_line_fails_the_run():
    messages, state = get("command").parse_stream(lines({"type": "error", "message": "cannot push"}))
    assert messages == [AgentMessage("error", {"message": "cannot push"})]
    assert state.error == "cannot push"


# -- shared ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("provider", ["claude", "codex", "gemini", "opencode", "command"])
def test_a_line_the_parser_chokes_on_is_kept_as_system_message(provider, monkeypatch):
    adapter = get(provider)

    def boom(line, state):
        raise KeyError("surprise")

    monkeypatch.setattr(adapter, "parse_line", boom)
    messages, _ = adapter.parse_stream(['{"type": "new-thing"}'])
    assert messages == [AgentMessage("system", {"event": "unparsed", "line": '{"type": "new-thing"}'})]


def test_message_kinds_are_checked():
    with pytest.raises(ValueError, match="unknown message kind"):
        AgentMessage("chatter", {})
