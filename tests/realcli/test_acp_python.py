"""The Python-packaged real CLIs through the `acp` adapter: gptme (`gptme-acp`), Mistral Vibe
(`vibe-acp`) and fast-agent (`fast-agent-acp --shell`), pinned in tests/realcli/pyagents/ and installed by `make test` into a venv each, through
a real server and daemon, sandboxed, against their scripted model servers — test_acp.py's scenario:

- the task completes in the person's folder: the shell tool's call (asked of us as a permission
  request, which the agent's `allow` policy answers) and result, the answer stored, the model shown
  the Project Context from AGENTS.md, the shell's edit in the folder;
- a comment mentioning the agent: the follow-up continues the earlier conversation (the model is
  shown the earlier turns) — Vibe and fast-agent through `session/load`; gptme, which does not offer it, through
  its `session/new`, which continues the conversation it keeps for that folder;
- a slow task cancelled mid-tool: `session/cancel`, then every process of it gone within 5 s;
- nothing is asked of any host but the model server.
"""

from __future__ import annotations

import json

import pytest

from predictorx.agentconfig import acp_profiles

from .pyclis import PY_ACP
from .scenario import cancelled_mid_tool, kinds_in_order, snapshot

#: Agents without session/load whose session/new continues the folder's conversation.
RESUMES_BY_FOLDER = {"gptme"}
#: gptme 0.35.1's ACP server runs its tools itself (its confirm hook for ACP is written but never
#: passed to its chat step): no tool_call update, no permission request; the command and its
#: output come as message text after the turn's answer.
REPORTS_NO_TOOL_CALLS = {"gptme"}
#: fast-agent runs its own shell without asking (its permission requests are for MCP tools), and
#: 0.10.48 reports its local shell's call only as it starts (`pending`), never its end: the model
#: still gets the output (asserted below), the task has no tool_result for it.
RUNS_SHELL_UNASKED = {"fast-agent"}
NO_TOOL_RESULT = {"fast-agent"}
#: fast-agent keeps its home (sessions) in `.fast-agent/` of the task's folder.
HOME_IN_FOLDER = {"fast-agent"}


def sandboxed(s, task_id: str) -> bool:
    return (s.stream_log(task_id).parents[1] / "seccomp.bpf").is_file()


@pytest.mark.parametrize("profile", sorted(PY_ACP))
def test_a_python_packaged_cli_over_acp_runs_follows_up_and_is_cancelled(scenario, profile):
    cli = PY_ACP[profile]
    if cli.path() is None:
        pytest.skip(f"no real CLI {cli.executable} in .venv-agents/bin (`make test` installs it from "
                    f"tests/realcli/pyagents/{profile}.txt; it needs the Python that file names)")
    s = scenario(profile, acp_command=acp_profiles.get(profile).command())
    person_config = snapshot(s.root / "cli-home")
    folder = s.person_repo()
    issue, run = s.assign(s.project(folder, "in_place"))
    task = s.wait(run["id"])
    # fast-agent has no config dir of the person's to copy in (its home is in the task's folder),
    # so the run's seccomp filter is the sign that it went through bubblewrap.
    assert s.was_sandboxed(task["id"]) or (profile in HOME_IN_FOLDER and sandboxed(s, task["id"]))
    msgs = s.messages(task["id"])
    raw = s.stream_log(task["id"]).read_text().splitlines()
    session = next(m for m in msgs if m["content"].get("event") == "session")["content"]
    assert session["session_id"] == task["session_id"]
    assert session["load_session"] is (profile not in RESUMES_BY_FOLDER)
    if profile in REPORTS_NO_TOOL_CALLS:
        # The shell ran (its edit and output below); gptme tells of it only in its text.
        texts = " ".join(m["content"].get("text", "") for m in msgs if m["kind"] == "text")
        assert "Ran command: `cat AGENTS.md" in texts and "All done: README.md has its new line." in task["result"]
        assert not [m for m in msgs if m["kind"] == "tool_use" or m["content"].get("event") == "permission"]
    else:
        kinds = ["system", "tool_use", "text"] if profile in NO_TOOL_RESULT else ["system", "tool_use", "tool_result", "text"]
        assert kinds_in_order(msgs, kinds), (msgs, raw[-12:])
        assert next(m for m in msgs if m["kind"] == "tool_use")["content"]["kind"] == "execute"
        if profile not in NO_TOOL_RESULT:
            assert next(m for m in msgs if m["kind"] == "tool_result")["content"]["is_error"] is False
        asked = [m["content"] for m in msgs if m["content"].get("event") == "permission"]
        assert profile in RUNS_SHELL_UNASKED or (asked and asked[0]["policy"] == "allow" and asked[0]["choice"]), msgs
        assert task["result"] == "All done: README.md has its new line."
    assert f"edited by {profile} in {folder}" in (folder / "README.md").read_text()
    first = s.model.conversation()[0]
    assert "## Project Context" in first.text and f"Real {profile}" in first.text
    assert "cwd=" + str(folder) in s.model.conversation()[1].text
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in raw if line.startswith("{"))

    # -- a follow-up in the same folder continues the conversation ------------------------------
    asked_before = len(s.model.conversation())
    s.model.answer = "Second line added too."
    s.server.api("POST", f"/api/issues/{issue['number']}/comments",
                 {"body": f"@{s.agent_name} please also add a second line."})
    follow = s.wait(s.server.runs(issue["number"])[-1]["id"])
    assert follow["id"] != task["id"] and "Second line added too." in follow["result"]
    shown = s.model.conversation()[asked_before]
    assert "please also add a second line" in shown.text
    assert "All done: README.md" in shown.text  # the earlier turns
    assert follow["session_id"] == task["session_id"]
    events = [m["content"].get("event") for m in s.messages(follow["id"])]
    assert "resume_failed" not in events
    # gptme offers no session/load, so the adapter says it started a new session — which gptme
    # itself continues from the folder's conversation (asserted above).
    assert ("resume_skipped" in events) is (profile in RESUMES_BY_FOLDER)
    assert snapshot(s.root / "cli-home") == person_config

    cancelled_mid_tool(s)
    assert s.tripwire.requests == [], s.tripwire.requests
