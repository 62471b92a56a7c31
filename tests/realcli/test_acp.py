"""Real agent CLIs through the `acp` adapter (agents/acp.py): Gemini CLI (`gemini
--experimental-acp`), OpenCode (`opencode acp`), and Claude Code and Codex through Zed's adapters
(`claude-code-acp`, `codex-acp`) as ACP agents, through a real server and daemon, sandboxed,
against their scripted model servers.

One scenario per CLI, in the person's folder (in place, so a follow-up runs in the same folder and
can continue the session with `session/load`):
- the task completes: messages in order (session, text, the shell tool's call and result, the
  answer), the result stored, the model shown the Project Context from the CLI's own instruction
  file, the shell's edit in the folder;
- a comment mentioning the agent: the follow-up loads the earlier session (the model is shown the
  earlier turns) and is answered;
- a slow task cancelled mid-tool: `session/cancel`, then every process of it gone within 5 s.
"""

from __future__ import annotations

import json

import pytest

from predictorx.agentconfig import acp_profiles

from .clis import BIN
from .scenario import cancelled_mid_tool, kinds_in_order, snapshot, wait_until

#: ACP profile → the CLI whose config and model server it uses (tests/realcli/clis.py).
PROFILES = {"gemini": "gemini", "opencode": "opencode", "claude-code-acp": "claude", "codex-acp": "codex",
            "qwen": "qwen", "kilo": "kilo", "copilot": "copilot"}
#: Codex reaches for github.com and chatgpt.com whatever its config (docs/agents.md); so does its adapter.
#: Zed's Claude Code adapter runs the person's own Claude Code (the pinned one), not its SDK's copy.
DAEMON_ENV = {"claude-code-acp": {"CLAUDE_CODE_EXECUTABLE": str(BIN / "claude")}}
#: Gemini CLI 0.61.0 in the sandbox sometimes answers session/load with "No previous sessions found
#: for this project" (about one run in two on a loaded machine; not understood yet: docs/agents.md).
LOAD_SOMETIMES_FAILS = {"gemini"}
#: Agents started without their own auto-approve: each shell call comes to us as
#: session/request_permission, answered by the agent's policy (`allow` here) and recorded.
ASKS_PERMISSION = {"qwen", "copilot"}
NO_NETWORK = {"gemini", "opencode", "claude-code-acp", "qwen", "kilo", "copilot"}
#: npm-packaged agents of issue 25's second round (tests/realcli/clis_npm.py): pi through pi-acp,
#: which reports every pi tool, its bash too, with kind "other".
#: Cline asks before its shell runs, as Qwen Code and Copilot do; with its telemetry opted out it
#: still fetches its feature flags from PostHog (data.cline.bot) on every start, unconditionally
#: (refused by the proxy here; the run is unaffected) — docs/agents.md.
PROFILES.update({"pi": "pi", "cline": "cline"})
NO_NETWORK |= {"pi"}
ASKS_PERMISSION |= {"cline"}
ONLY_TRIES = {"cline": {"CONNECT data.cline.bot:443"}}
#: The model the agent was created with, set through the session's `model` option (Cline lists its
#: provider first in that category; Cline's own catalogue would send gpt-4o).
MODEL_SENT = {"cline"}
TOOL_KIND = {"pi": "other"}


@pytest.mark.parametrize("profile", PROFILES)
def test_a_real_cli_over_acp_runs_follows_up_and_is_cancelled(scenario, profile):
    provider = PROFILES[profile]
    if not (BIN / acp_profiles.get(profile).executable).exists():
        pytest.skip(f"no real CLI {profile} in tests/realcli/node_modules (`make test` installs it with npm ci)")
    s = scenario(provider, acp_command=acp_profiles.get(profile).command(), daemon_env=DAEMON_ENV.get(profile))
    person_config = snapshot(s.root / "cli-home")
    folder = s.person_repo()
    project = s.project(folder, "in_place")
    issue, run = s.assign(project)
    task = s.wait(run["id"])
    assert s.was_sandboxed(task["id"])
    msgs = s.messages(task["id"])
    kinds = [m["kind"] for m in msgs]
    assert kinds_in_order(msgs, ["system", "tool_use", "tool_result", "text"]), kinds
    session = next(m for m in msgs if m["content"].get("event") == "session")["content"]
    assert session["load_session"] is True and session["session_id"] == task["session_id"]
    use = next(m for m in msgs if m["kind"] == "tool_use")["content"]
    assert use["kind"] == TOOL_KIND.get(profile, "execute")
    assert next(m for m in msgs if m["kind"] == "tool_result")["content"]["is_error"] is False
    if profile in ASKS_PERMISSION:
        asked = [m["content"] for m in msgs if m["content"].get("event") == "permission"]
        assert asked and asked[0]["policy"] == "allow" and asked[0]["choice"], msgs
    assert task["result"] == "All done: README.md has its new line."
    # The edit is the shell's, in the person's folder; the CLI loaded the Project Context itself.
    assert f"edited by {provider} in {folder}" in (folder / "README.md").read_text()
    first = s.model.conversation()[0]
    assert "## Project Context" in first.text and f"Real {provider}" in first.text
    if profile in MODEL_SENT:
        assert first.body["model"] == s.cli.model, first.body["model"]
    # What the shell printed reached the model (Gemini's ACP updates carry no tool output).
    assert "cwd=" + str(folder) in s.model.conversation()[1].text
    raw = s.stream_log(task["id"]).read_text().splitlines()
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in raw if line.startswith("{"))

    # -- a follow-up in the same folder continues the session (session/load) --------------------
    asked = len(s.model.conversation())
    s.model.answer = "Second line added too."
    s.server.api("POST", f"/api/issues/{issue['number']}/comments",
                 {"body": f"@{s.agent_name} please also add a second line."})
    follow = s.wait(s.server.runs(issue["number"])[-1]["id"])
    assert follow["id"] != task["id"] and follow["result"] == "Second line added too."
    shown = s.model.conversation()[asked]
    assert "please also add a second line" in shown.text
    failed = [m["content"] for m in s.messages(follow["id"]) if m["content"].get("event") == "resume_failed"]
    if profile in LOAD_SOMETIMES_FAILS and failed:
        # The fallback, as designed: a new session with the whole issue, and the task says why.
        assert "No previous sessions found" in failed[0]["reason"] and "Add a line to the README" in shown.text
    else:
        assert not failed and follow["session_id"] == task["session_id"]
        assert "All done: README.md" in shown.text  # the earlier turns, loaded
    assert not [m for m in s.messages(follow["id"]) if m["content"].get("event") == "resume_skipped"]
    assert snapshot(s.root / "cli-home") == person_config

    cancelled_mid_tool(s)
    if profile in NO_NETWORK:
        assert s.tripwire.requests == [], s.tripwire.requests
    if profile in ONLY_TRIES:
        assert set(s.tripwire.requests) <= ONLY_TRIES[profile], s.tripwire.requests


def test_a_person_answers_a_real_agents_question_from_the_cli(scenario):
    """`ask` with a real CLI (Copilot's ACP server asks before its shell runs): the run waits on the
    question, `predictorx task answer` picks the allow option, the shell runs and the run completes."""
    if not (BIN / "copilot").exists():
        pytest.skip("no real CLI copilot in tests/realcli/node_modules (`make test` installs it with npm ci)")
    s = scenario("copilot", acp_command=acp_profiles.get("copilot").command())
    s.server.api("PATCH", f"/api/agents/{s.agent_name}", {"permissions": "ask"})
    folder = s.person_repo()
    _issue, run = s.assign(s.project(folder, "in_place"))

    def waiting() -> dict | None:
        return next((m["content"] for m in s.messages(run["id"])
                     if m["content"].get("event") == "permission" and m["content"].get("waiting")), None)
    wait_until(waiting, 120, what="the agent's question")
    question = waiting()
    assert b"edited by" not in (folder / "README.md").read_bytes()  # nothing ran before the answer
    allow = next(o["optionId"] for o in question["options"] if str(o.get("kind", "")).startswith("allow"))
    assert "its agent goes on" in s.server.cli("task", "answer", run["id"], allow).stdout
    task = s.wait(run["id"])
    answered = [m["content"] for m in s.messages(task["id"]) if m["content"].get("event") == "permission_answer"]
    assert answered and answered[0]["choice"] == allow
    assert f"edited by copilot in {folder}" in (folder / "README.md").read_text()
