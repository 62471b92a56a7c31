"""Real runs: each fake CLI through its adapter, the shared process runner, cancel and timeouts."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
import time

import psutil
import pytest

from predictorx.agents import AgentMessage, get
from predictorx.agents.codex import MAX_PROMPT_ARG_BYTES
from predictorx.agents.process import STOP_BUDGET_S

from .conftest import TASK_ENV, Task, run_agent

CLIS = ["claude", "codex", "gemini", "opencode"]
MIB = 1024 * 1024


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE and psutil.Process(pid).ppid() != psutil.Process().pid
    except psutil.NoSuchProcess:
        return True


@pytest.mark.parametrize("provider", CLIS)
async def test_a_fake_runs_through_its_adapter(provider: str, task: Task):
    messages, result = await run_agent(provider, task.spec(env={"FAKE_AGENT_SESSION_ID": "sess-42"}))

    assert result.status == "completed", result.failure_reason
    assert result.failure_reason is None and result.exit_code == 0
    assert result.result == f"Done: fake {provider} finished the task."
    assert result.session_id == "sess-42"
    assert result.usage
    kinds = [m.kind for m in messages]
    assert kinds[0] == "system"
    assert kinds.index("tool_use") < kinds.index("tool_result")
    # the run's usage is said live, as system/usage messages the daemon sends apart (issue 27)
    said = [m for m in messages if m.kind == "system" and m.content.get("event") == "usage"]
    assert said and said[-1].content["input_tokens"] + said[-1].content["output_tokens"] > 0
    assert [m for m in messages if m not in said][-1] == AgentMessage("text", {"text": result.result})

    # The raw stream is kept verbatim; stderr has its own file.
    raw = (task.logs / f"{provider}.stream.jsonl").read_text().splitlines()
    assert all(json.loads(line)["type"] for line in raw)
    assert len(raw) >= len([m for m in messages if m.kind != "system"])
    assert (task.logs / f"{provider}.stderr.log").exists()

    # What the agent saw: its directory, its instruction file, the project's resources, the task env.
    seen = task.record()
    assert seen["cwd"] == str(task.workdir)
    assert seen["prompt"] == "Fix the bug in README.md"
    assert seen["instruction"] == f"instructions in {seen['instruction_file']}\n"
    assert seen["resources"]["project_title"] == "Demo"
    for key, value in TASK_ENV.items():
        assert seen["env"][key] == value
    assert seen["pgid"] == seen["pid"]  # its own process group


@pytest.mark.parametrize("provider", CLIS)
async def test_model_and_resume_reach_the_cli(provider: str, task: Task):
    _, result = await run_agent(provider, task.spec(model="some-model", resume_session_id="resumed-1"))
    assert result.status == "completed", result.failure_reason
    assert result.session_id == "resumed-1"
    assert "some-model" in task.record()["argv"]


@pytest.mark.parametrize("provider", CLIS)
async def test_a_session_the_cli_cannot_resume_starts_afresh_and_says_so(provider: str, task: Task):
    """R-EX-10: a session kept under another folder (Gemini CLI) fails before any output; the task
    then runs a new session with the whole prompt instead of failing."""
    messages: list[AgentMessage] = []

    async def collect(message: AgentMessage) -> None:
        messages.append(message)

    spec = task.spec(prompt="only the follow-up", resume_session_id="gone-1",
                     env={"FAKE_AGENT_UNKNOWN_SESSIONS": "gone-1", "FAKE_AGENT_SESSION_ID": "new-1"})
    result = await get(provider).run_resuming(spec, collect, asyncio.Event(), "the issue and the follow-up")
    assert result.status == "completed" and result.session_id == "new-1", result.failure_reason
    notice = next(m for m in messages if m.kind == "system" and m.content.get("event") == "resume_failed")
    assert notice.content["session_id"] == "gone-1" and "code 42" in notice.content["reason"]
    assert task.record()["prompt"] == "the issue and the follow-up" and "gone-1" not in task.record()["argv"]
    # A session it can resume is resumed, with the short prompt.
    result = await get(provider).run_resuming(task.spec(prompt="only the follow-up", resume_session_id="kept-1"),
                                              collect, asyncio.Event(), "unused")
    assert result.session_id == "kept-1" and task.record()["prompt"] == "only the follow-up"


@pytest.mark.parametrize("provider", CLIS)
async def test_edit_mode_changes_a_file(provider: str, task: Task):
    env = {"FAKE_AGENT_MODE": "edit", "FAKE_AGENT_EDIT_FILE": "README.md"}
    messages, result = await run_agent(provider, task.spec(env=env))
    assert result.status == "completed", result.failure_reason
    assert (task.workdir / "README.md").read_text() == f"edited by fake {provider}\n"
    assert sum(m.kind == "tool_use" for m in messages) >= 2


@pytest.mark.parametrize("provider", CLIS)
async def test_a_one_mebibyte_line_is_read_whole(provider: str, task: Task):
    messages, result = await run_agent(provider, task.spec(env={"FAKE_AGENT_MODE": "long_line"}))
    assert result.status == "completed", result.failure_reason
    assert result.result == "x" * MIB
    assert [m for m in messages if m.kind != "system"][-1].content["text"] == "x" * MIB
    assert max(len(line) for line in (task.logs / f"{provider}.stream.jsonl").read_text().splitlines()) > MIB


@pytest.mark.parametrize("provider", CLIS)
async def test_a_failing_cli_fails_with_its_stderr(provider: str, task: Task):
    env = {"FAKE_AGENT_MODE": "fail", "FAKE_AGENT_EXIT_CODE": "3", "FAKE_AGENT_STDERR": "auth: token expired"}
    _, result = await run_agent(provider, task.spec(env=env))
    assert result.status == "failed"
    assert result.exit_code == 3
    assert f"{provider} exited with code 3" in result.failure_reason
    assert "auth: token expired" in result.failure_reason
    assert "failing on purpose" in result.failure_reason
    assert "auth: token expired" in (task.logs / f"{provider}.stderr.log").read_text()


@pytest.mark.parametrize(("provider", "reported"), [
    ("claude", "API Error: 401 invalid x-api-key"),
    ("codex", "unexpected status 401 Unauthorized"),
    ("gemini", "Quota exceeded"),
    ("opencode", "Rate limit exceeded"),
])
async def test_an_error_event_fails_the_run_with_what_the_cli_said(provider: str, reported: str, task: Task):
    messages, result = await run_agent(provider, task.spec(env={"FAKE_AGENT_MODE": "error_event"}))
    assert result.status == "failed"
    assert reported in result.failure_reason
    assert any(m.kind == "error" for m in messages)
    assert result.session_id  # kept, so the run can be resumed


@pytest.mark.parametrize(("provider", "ignore_term"), [("claude", False), ("codex", True), ("gemini", False), ("opencode", True)])
async def test_cancel_stops_the_whole_process_group(provider: str, ignore_term: bool, task: Task):
    env = {"FAKE_AGENT_MODE": "hang", "FAKE_AGENT_IGNORE_SIGTERM": "1" if ignore_term else "0"}
    cancel = asyncio.Event()
    running = asyncio.create_task(run_agent(provider, task.spec(env=env), cancel))
    seen = await task.wait_for_record("child_pid")
    leader, grandchild = seen["pid"], seen["child_pid"]
    assert psutil.Process(grandchild).ppid() == leader

    started = time.monotonic()
    cancel.set()
    messages, result = await asyncio.wait_for(running, 10)
    assert time.monotonic() - started <= STOP_BUDGET_S

    assert result.status == "cancelled"
    assert messages and messages[0].kind == "system"
    assert gone(leader)
    deadline = time.monotonic() + 2  # an orphan is reaped by init, not by us
    while not gone(grandchild) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert gone(grandchild)


async def test_a_timeout_stops_the_group_and_fails(task: Task):
    _, result = await run_agent("claude", task.spec(env={"FAKE_AGENT_MODE": "hang"}, timeout_s=3))  # room to start its child under load
    assert result.status == "failed"
    assert "timed out after 3 s" in result.failure_reason
    assert gone(task.record()["child_pid"])


async def test_codex_reads_a_long_prompt_from_stdin(task: Task):
    prompt = "p" * (MAX_PROMPT_ARG_BYTES + 10)
    _, result = await run_agent("codex", task.spec(prompt=prompt))
    assert result.status == "completed", result.failure_reason
    seen = task.record()
    assert seen["stdin_prompt"] is True and seen["prompt"] == prompt


async def test_a_missing_executable_fails_clearly(task: Task):
    _, result = await run_agent("claude", task.spec(argv_override=["/nonexistent/claude"]))
    assert result.status == "failed"
    assert "executable not found" in result.failure_reason and result.exit_code is None


def script(task: Task, body: str) -> list[str]:
    path = task.root / "agent.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


async def test_command_gets_the_prompt_on_stdin_and_in_env(task: Task):
    # R-EX-8: any executable is an agent, the prompt on stdin and in the environment
    argv = script(task, """
        import json, os, sys
        stdin = sys.stdin.read()
        print("reading the task")
        print(json.dumps({"type": "tool_use", "id": "1", "name": "edit", "input": {"file": "README.md"}}))
        with open("README.md", "a") as f:
            f.write("changed\\n")
        print(json.dumps({"type": "tool_result", "tool_use_id": "1", "output": "ok", "is_error": False}))
        print(json.dumps({"type": "text", "text": f"stdin={stdin!r} env={os.environ['PREDICTORX_PROMPT']!r}"}))
    """)
    messages, result = await run_agent("command", task.spec(prompt="make a change", argv_override=argv))
    assert result.status == "completed", result.failure_reason
    assert [m.kind for m in messages] == ["text", "tool_use", "tool_result", "text"]
    assert result.result == "stdin='make a change' env='make a change'"
    assert (task.workdir / "README.md").read_text() == "changed\n"
    assert (task.logs / "command.stream.jsonl").read_text().startswith("reading the task\n")


async def test_command_failure_reports_exit_and_stderr_tail(task: Task):
    argv = script(task, """
        import sys
        print("trying")
        sys.stderr.write("noise\\n" * 2000 + "fatal: could not lock index\\n")
        sys.exit(7)
    """)
    _, result = await run_agent("command", task.spec(argv_override=argv))
    assert result.status == "failed" and result.exit_code == 7
    assert result.failure_reason.startswith("command exited with code 7")
    assert result.failure_reason.endswith("fatal: could not lock index")
    assert len(result.failure_reason) < 2000  # a tail, not the whole log


async def test_command_error_line_fails_even_with_exit_zero(task: Task):
    argv = script(task, """
        import json
        print(json.dumps({"type": "error", "message": "nothing to do"}))
    """)
    _, result = await run_agent("command", task.spec(argv_override=argv))
    assert result.status == "failed" and result.exit_code == 0
    assert "nothing to do" in result.failure_reason


async def test_children_left_behind_after_a_normal_exit_are_stopped(task: Task):
    argv = script(task, """
        import json, subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(json.dumps({"type": "text", "text": str(child.pid)}))
    """)
    _, result = await run_agent("command", task.spec(argv_override=argv))
    assert result.status == "completed", result.failure_reason
    pid = int(result.result)
    deadline = time.monotonic() + 2
    while not gone(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert gone(pid)


async def test_a_failing_message_handler_does_not_stop_the_stream(task: Task):
    from predictorx.agents import get

    seen: list[AgentMessage] = []

    async def flaky(message: AgentMessage) -> None:
        seen.append(message)
        if len(seen) == 2:
            raise RuntimeError("server unreachable")

    result = await get("claude").run(task.spec(), flaky, asyncio.Event())
    assert result.status == "completed"
    assert len(seen) > 3


async def test_cancel_mid_stream_keeps_what_was_said(task: Task):
    cancel = asyncio.Event()
    received: list[AgentMessage] = []

    async def collect(message: AgentMessage) -> None:
        received.append(message)
        if message.kind == "tool_use":
            cancel.set()

    from predictorx.agents import get

    result = await get("opencode").run(task.spec(env={"FAKE_AGENT_DELAY": "0.3"}), collect, cancel)
    assert result.status == "cancelled"
    assert [m.kind for m in received][:2] == ["system", "text"]
    assert not any(m.content.get("text", "").startswith("Done") for m in received)
    assert gone(task.record()["pid"])


async def test_cancelled_before_start_never_starts(task: Task):
    cancel = asyncio.Event()
    cancel.set()
    _, result = await run_agent("claude", task.spec(), cancel)
    assert result.status == "cancelled"
    assert not task.record_path.exists()


async def test_concurrent_runs_record_apart_and_are_counted(task: Task):
    from fakes import with_fakes_on_path

    records = task.root / "records"
    records.mkdir()
    runs_log = task.root / "runs.jsonl"
    env = with_fakes_on_path({"PATH": task.env["PATH"], "FAKE_AGENT_RECORD": str(records), "FAKE_AGENT_RUNS_LOG": str(runs_log)})
    specs = [task.spec(env={**env, "PREDICTORX_TASK_ID": f"t{i}"}) for i in range(4)]
    results = await asyncio.gather(*(run_agent("codex", s) for s in specs))
    assert all(r.status == "completed" for _, r in results)
    assert sorted(p.name for p in records.iterdir()) == ["t0.json", "t1.json", "t2.json", "t3.json"]
    runs = [json.loads(line) for line in runs_log.read_text().splitlines()]
    assert sorted(r["task_id"] for r in runs) == ["t0", "t1", "t2", "t3"]


async def test_a_slow_handler_still_gets_every_line_in_order(task: Task):
    argv = script(task, """
        for i in range(2500):
            print(f"line {i}")
    """)
    received: list[str] = []

    async def slow(message: AgentMessage) -> None:
        received.append(message.content["text"])
        if len(received) % 500 == 0:
            await asyncio.sleep(0.2)

    from predictorx.agents import get

    result = await get("command").run(task.spec(argv_override=argv), slow, asyncio.Event())
    assert result.status == "completed"
    assert received == [f"line {i}" for i in range(2500)]


async def test_a_process_that_escaped_the_group_cannot_hold_the_run_open(task: Task):
    argv = script(task, """
        import os, subprocess, sys
        # A daemonised helper: its own session, but our stdout — the pipe never reaches EOF.
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
        print(child.pid, flush=True)
    """)
    started = time.monotonic()
    _, result = await run_agent("command", task.spec(argv_override=argv))
    try:
        assert result.status == "completed"
        assert time.monotonic() - started < STOP_BUDGET_S
    finally:
        psutil.Process(int(result.result)).kill()
