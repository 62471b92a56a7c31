"""Each real agent CLI through a real server and daemon, against its scripted model server
(R-EX-3, R-EX-5, R-EX-9, R-CTX-1, R-CTX-2, R-LD-6, R-WT-*).

Three runs per CLI, everything asserted on them:
- worktree mode, completed: messages in order with real shapes; the model was shown the Project
  Context through the CLI's own instruction-file loading (in the recorded request); the shell ran
  in the task's worktree and the edit is on the task's branch; the person's folder untouched; the
  CLI's session id recorded;
- a comment mentioning the agent queues a follow-up that resumes the CLI's session: the model is
  shown the earlier turns and the comment (R-EX-10);
- in place, cancelled mid-tool: the edit happened in the person's folder, the real CLI and its
  children are gone within 5 s, and the folder is byte-identical but for that edit.
Nothing ever lands in the folder the daemon was started from (OpenCode follows PWD).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from .scenario import git, kinds_in_order, processes_with, snapshot, wait_until, work_command

SHELL_TOOL = {"claude": "Bash", "codex": "shell", "gemini": "run_shell_command", "opencode": "bash"}
# Gemini CLI and OpenCode run their shell in a session of its own (setsid): killing the agent's
# process group alone would leave the shell and what it started running; the daemon's descendant
# sweep (agents/descendants.py) ends them, and the cancel below proves it for every CLI.
#: Raw streams of the worktree runs, kept as parser regression data (tests/agents/test_golden_transcripts.py).
TRANSCRIPTS = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
#: CLIs whose sessions can be resumed only from the folder they ran in (Gemini CLI keys them by
#: path and fails elsewhere; OpenCode never returns): the daemon starts those afresh in a new worktree.
SESSIONS_PER_FOLDER = {"gemini", "opencode"}
PROVIDERS = ["claude", "codex", "gemini", "opencode"]
#: CLIs proven to reach nothing but their model server in these runs (the tripwire proxy saw nothing).
#: Codex 0.169 is not: with this config it still CONNECTs to github.com, api.github.com and
#: chatgpt.com (refused by the proxy; the run completes regardless) — see docs/agents.md.
NO_NETWORK = {"claude", "gemini", "opencode"}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_real_cli_runs_a_worktree_task_and_is_cancelled_in_place(scenario, provider):
    s = scenario(provider)
    cli = s.cli
    person_config = snapshot(s.root / "cli-home")  # the person's CLI config: no run may change it

    # -- worktree mode: the task completes and delivers its edit on the branch ----------------
    repo = s.person_repo()
    before = snapshot(repo)
    project = s.project(repo, "worktree")
    issue, run = s.assign(project)
    task = s.wait(run["id"])
    assert s.was_sandboxed(task["id"])  # the default, so the tested path (issue 29)
    # the usage its stream reported, stored (issue 27): two model calls of 120 tokens in, 20 out
    used = s.server.api("GET", f"/api/usage/runs/{task['id']}")
    fresh_or_cached = used["input_tokens"] + used["cache_read_tokens"] + used["cache_write_tokens"]
    assert used["reported"] and used["final"] and (fresh_or_cached, used["output_tokens"]) == (240, 40), used
    msgs = s.messages(task["id"])
    assert kinds_in_order(msgs, ["text", "tool_use", "tool_result", "text"]), [m["kind"] for m in msgs]
    use = next(m for m in msgs if m["kind"] == "tool_use")
    assert use["content"]["name"] == SHELL_TOOL[provider]
    result = next(m for m in msgs if m["kind"] == "tool_result")
    output = json.dumps(result["content"])
    workdir = f"{task['id']}/workdir"
    # The shell ran in the task's worktree, saw the instruction block and resources.json.
    assert "## Project Context" in output and project["id"] in output and "cwd=" in output
    cwd = re.search(r"cwd=([^\s\"\\]+)", output).group(1)
    assert cwd.endswith(workdir), cwd
    assert task["result"] and "All done" in task["result"]
    assert msgs[-1]["kind"] in ("text", "system") and any(m["kind"] == "text" and "All done" in m["content"]["text"]
                                                          for m in msgs)
    # The model was shown the Project Context by the CLI itself, before any tool ran.
    first = s.model.conversation()[0]
    assert first.turn == "tool" and "## Project Context" in first.text and "Real " + provider in first.text
    # The edit is on the task's branch; the person's folder is as it was.
    branch = task["branch_name"]
    assert branch and f"edited by {provider} in " in git(repo, "show", f"{branch}:README.md")
    assert "## Project Context" not in git(repo, "show", f"{branch}:{cli.instruction_file}")
    assert snapshot(repo) == {**before, **{k: v for k, v in snapshot(repo).items() if k.startswith(".git/")}}
    # The CLI's own session id is recorded.
    assert task["session_id"] and task["session_id"] in json.dumps(msgs) or task["session_id"] in s.stream_log(task["id"]).read_text()

    if os.environ.get("PREDICTORX_RECORD_TRANSCRIPTS"):  # `make record-transcripts`
        TRANSCRIPTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(s.stream_log(task["id"]), TRANSCRIPTS / f"{provider}.stream.jsonl")

    # -- a comment mentioning the agent: a follow-up that resumes its CLI session (R-EX-10) --------
    asked = len(s.model.conversation())
    s.model.answer = "Second line added too."
    s.server.api("POST", f"/api/issues/{issue['number']}/comments",
                 {"body": f"@{s.agent_name} please also add a second line."})
    follow = s.server.runs(issue["number"])[-1]
    assert follow["id"] != task["id"] and follow["prompt"] == f"@{s.agent_name} please also add a second line."
    follow = s.wait(follow["id"])
    shown = s.model.conversation()[asked]
    assert "please also add a second line" in shown.text
    if provider in SESSIONS_PER_FOLDER:
        # Its sessions live under the folder they ran in, and each worktree task has its own: the
        # daemon starts a new session with the whole issue and says why.
        notice = next(m for m in s.messages(follow["id"]) if m["content"].get("event") == "resume_skipped")
        assert notice["content"]["session_id"] == task["session_id"]
        assert "Add a line to the README" in shown.text
    else:
        # The model sees the earlier turns (its first answer, the first tool's output) and the request.
        assert "All done: README.md" in shown.text and f"edited by {provider} in " in shown.text
    assert follow["result"] == "Second line added too." and follow["session_id"]
    # Sandboxed runs worked on their own copy of it, and resumed from the agent's own sessions.
    assert snapshot(s.root / "cli-home") == person_config

    # -- in place: cancelled while its shell runs; the CLI is gone within 5 s ------------------
    folder = s.person_repo("inplace")
    files_before = {k: v for k, v in snapshot(folder).items() if not k.startswith(".git/")}
    s.model.command = work_command(cli, "; sleep 45")
    _issue, run = s.assign(s.project(folder, "in_place"), "Slow job")
    wait_until(lambda: b"edited by" in (folder / "README.md").read_bytes(), 120, what="the in-place edit")
    assert processes_with(f"PREDICTORX_TASK_ID={run['id']}"), "the CLI should be running"
    started = time.monotonic()
    s.server.api("POST", f"/api/tasks/{run['id']}/cancel")
    s.server.wait_task(run["id"], ("cancelled",), timeout=5)
    wait_until(lambda: not processes_with(f"PREDICTORX_TASK_ID={run['id']}"), 5 - (time.monotonic() - started),
               what="every process of the cancelled agent to end")
    # The daemon takes its context away once the agent is gone (the server said "cancelled" at once).
    edited = files_before["README.md"] + f"edited by {provider} in {folder}\n".encode()
    expected = {**files_before, "README.md": edited}
    wait_until(lambda: {k: v for k, v in snapshot(folder).items() if not k.startswith(".git/")} == expected, 10,
               what="the in-place folder to be as it was but for the agent's edit")
    assert git(folder, "status", "--porcelain").split() == ["M", "README.md"]

    # Nothing ever landed where the daemon was started.
    assert list(s.decoy.iterdir()) == []
    # Nothing beyond the model server was tried: no plugin install from the npm registry, no
    # update check, no catalogue download (for OpenCode the daemon turns those off itself).
    if provider in NO_NETWORK:
        assert s.tripwire.requests == [], s.tripwire.requests
