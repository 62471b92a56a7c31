"""The harness end to end (issue 12): real server, real daemon, the `command` agent stand-in
driving the workflow through the CLI with its task token; people act through the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .harness import git, make_repo, wait_until

AGENT = Path(__file__).with_name("harness_agent.py")


def _messages(server, task_id: str) -> str:
    return "\n".join(str(m["content"].get("text", "")) for m in server.api("GET", f"/api/tasks/{task_id}/messages"))


@pytest.mark.timeout(900)  # four agent runs and ~20 CLI processes; minutes at load 30+
def test_feature_request_through_server_daemon_and_agent(server, start_daemon, tmp_path):
    start_daemon()
    src = make_repo(tmp_path / "src", {"cli.py": "print('export')\n"})
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(bare))
    project = server.api("POST", "/api/projects", {"title": "Exports", "resources": [
        {"resource_type": "github_repo", "resource_ref": {"url": f"file://{bare}"}}]})
    server.cli("agent", "create", "--name", "bot", "--provider", "command", "--command", f"{sys.executable} {AGENT}")
    # the project binds the stakeholder role to the agent as well as the owner: the agent then holds
    # the sign-off's role, and the strict team policy is what still stops it
    server.cli("workflow", "bind", project["id"], "stakeholder", "bot")
    server.cli("workflow", "bind", project["id"], "stakeholder", "owner", "--kind", "member")
    out = server.cli("issue", "create", "--title", "Add a CSV export command to the CLI", "--project", project["id"],
                     "--assignee", "bot", "--output", "json")
    n = json.loads(out.stdout)["number"]
    c = json.loads(server.cli("classify", "Add a CSV export command to the CLI", "-o", "json").stdout)
    assert c["category"] == "feature_request" and c["workflow"] == "feature-request"
    [first] = wait_until(lambda: (r := server.runs(n)) and r, 60, what="the first task")
    first = server.wait_task(first["id"], timeout=180)
    said = _messages(server, first["id"])
    assert first["status"] == "completed", said
    # the issue was classified and its workflow started before the agent ran: the sweep names the step
    assert "SAW - enabled step `capture` “Restate the need in the issue” for role agent [advisory]" in said
    assert "OK workflow complete " + str(n) + " feature-request requirements" in said
    assert "under strict policy and denied by https://predictorx.dev/policies/team prohibition 1" in said
    assert said.count("OK bean create") == 2
    beans = json.loads(server.cli("bean", "list", str(n), "-o", "json").stdout)
    assert [b["title"] for b in beans] == ["CSV writer"]
    # the sign-off refused the agent and accepts a person; a judgement needs a reason
    server.cli("workflow", "complete", str(n), "feature-request", "signoff")
    p = server.cli("workflow", "complete", str(n), "feature-request", "approved", "--outcome", "approved", check=False)
    assert p.returncode == 1 and "needs a reason" in p.stderr and "Traceback" not in p.stderr
    server.cli("workflow", "complete", str(n), "feature-request", "approved", "--outcome", "approved",
               "--reason", "scope agreed; comma as delimiter")
    # plan-beans is the agent's: a second task on the issue, which starts from the first one's handoff
    second = wait_until(lambda: [r for r in server.runs(n) if r["id"] != first["id"]], 120, what="the second task")[0]
    second = server.wait_task(second["id"], timeout=180)
    said = _messages(server, second["id"])
    assert second["status"] == "completed", said
    assert "SAW - next step: split into beans once signed off" in said
    assert "SAW - enabled step `plan-beans`" in said and "OK workflow complete " + str(n) + " feature-request plan-beans" in said
    # implement is a commit boundary: the run's commit is not delivered while it runs — refused, saying so
    assert "REFUSED workflow complete " + str(n) + " feature-request implement" in said
    assert "is at the commit boundary" in said and "end this run" in said
    review = server.api("GET", f"/api/tasks/{second['id']}/review")
    assert len(review["commits"]) == 1 and review["commits"][0] == review["tip"]  # the daemon's report
    ours = review["commits"][0]
    # the delivery dispatched the step again: the third task names the delivered commit and goes on
    done = {first["id"], second["id"]}
    third = wait_until(lambda: [r for r in server.runs(n) if r["id"] not in done], 120, what="the third task")[0]
    third = server.wait_task(third["id"], timeout=180)
    said = _messages(server, third["id"])
    assert third["status"] == "completed", said
    assert f"delivered so far, newest first: {ours[:12]}" in said  # the sweep in its prompt
    assert "OK workflow complete " + str(n) + " feature-request implement" in said
    assert "an outcome passed by hand is refused" in said
    assert "open_beans is a system fact Predictor X computes at the pass" in said  # issue 24: never forged
    assert "Done: more → beans to accept (computed)" in said  # its bean is in progress: not done
    assert "REFUSED workflow complete " + str(n) + " feature-request accept-beans" in said
    assert json.loads(server.cli("bean", "show", str(n), "CSV writer", "-o", "json").stdout)["status"] == "in-progress"
    shown = json.loads(server.cli("workflow", "show", str(n), "feature-request", "-o", "json").stdout)
    [step] = [h for h in shown["history"] if h["node_id"] == "implement" and h["status"] == "done"]
    assert ours.startswith(step["produced"]["commit"])
    # the stakeholder accepts the bean; the gate is the agent's again: a fourth task passes it
    server.cli("bean", "resolve", str(n), "CSV writer")
    server.cli("workflow", "complete", str(n), "feature-request", "accept-beans")
    done.add(third["id"])
    fourth = wait_until(lambda: [r for r in server.runs(n) if r["id"] not in done], 120, what="the fourth task")[0]
    fourth = server.wait_task(fourth["id"], timeout=180)
    said = _messages(server, fourth["id"])
    assert fourth["status"] == "completed", said
    assert "Done: more → all done (computed)" in said
    assert "REFUSED workflow complete " + str(n) + " feature-request review" in said
    server.cli("workflow", "complete", str(n), "feature-request", "review")
    server.cli("workflow", "complete", str(n), "feature-request", "accepted", "--outcome", "accept",
               "--reason", "works on the sample data")
    shown = json.loads(server.cli("workflow", "show", str(n), "feature-request", "-o", "json").stdout)
    assert shown["status"] == "completed"
    assert [h["node_id"] for h in shown["history"] if h["status"] == "refused"] == [
        "signoff", "implement", "accept-beans", "review"]
    # the record, re-checked: identical bytes for identical input, and the refused step is reported
    server.cli("prov", "qaqc", "--issue", str(n), "--out", str(tmp_path / "q1"))
    server.cli("prov", "qaqc", "--issue", str(n), "--out", str(tmp_path / "q2"))
    for name in ("qaqc.md", "qaqc.json"):
        assert (tmp_path / "q1" / name).read_bytes() == (tmp_path / "q2" / name).read_bytes()
    report = json.loads((tmp_path / "q1" / "qaqc.json").read_text())
    assert [(f["node"], f["finding"], f["actor"]) for f in report["findings"]] == [
        ("signoff", "refused", "bot"), ("implement", "refused", "bot"), ("accept-beans", "refused", "bot"),
        ("bean:resolve", "override", "owner"),
        ("review", "refused", "bot")]  # the stakeholder resolved the bean outside the steps: reported
    # the CLI reads the record a page at a time: two steps a page gives the same record
    whole = json.loads(server.cli("prov", "record", "--issue", str(n)).stdout)
    paged = json.loads(server.cli("prov", "record", "--issue", str(n), "--page-size", "2").stdout)
    assert paged == whole and len(whole["records"][0]["steps"]) == len(shown["history"]) > 2
    handoffs = json.loads(server.cli("workflow", "handoffs", str(n), "-o", "json").stdout)
    assert handoffs[-1]["next_step"] == "split into beans once signed off"
    assert handoffs[-1]["open_questions"] == ["which delimiter?"]
    state = json.loads(server.cli("workflow", "state", str(n), "-o", "json").stdout)
    assert state["state"] == "idle" and state["stack"] == []
