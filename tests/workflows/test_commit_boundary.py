"""The commit boundary (issue 24 item 7; seed: "the gate at the commit boundary rejects a write made
by an entity that is not the agent"): feature-request's `implement` (`<commitBoundary/>`) completes
only with a commit the agent's run delivered — as its daemon reported at the run's end — whatever
the agent or a person says; a refusal is recorded and is an invalid attempt in the PROV record."""

from __future__ import annotations

import uuid

import pytest

from predictorx.workflows.library import SHIPPED, load_library
from predictorx.workflows.loader import DiagramError

from .deliveries import claim_next, deliver, sha


def _setup(api):
    did = str(uuid.uuid4())
    d = api.as_(api.post("/api/daemon/register", json={
        "daemon_id": did, "name": "h", "capabilities": [], "runtimes": [{"provider": "command", "version": "1"}]}
    ).json()["token"])
    assert api.post("/api/agents", json={"name": "a1", "provider": "command", "command": ["true"]}).status_code < 300
    n = api.post("/api/issues", json={"title": "Add a CSV export command to the CLI", "assignee": "a1"}).json()["number"]
    agent, task = claim_next(api, d)
    for who, name, body in [(agent, "capture", {}), (agent, "requirements", {}), (api, "signoff", {}),
                            (api, "approved", {"outcome": "approved", "reason": "scope agreed"}),
                            (agent, "plan-beans", {})]:
        assert _step(who, n, name, **body).status_code == 200, name
    assert agent.post(f"/api/issues/{n}/beans", json={"title": "CSV writer"}).status_code < 300
    return d, n, agent, task


def _step(who, n, step, **body):
    return who.post(f"/api/issues/{n}/workflows/feature-request/steps", json={"step": step, **body})


def _work(n, commit):
    return {"bean": "CSV writer", "branch": f"feat/{n}-csv", "commit": commit}


def test_the_agent_runs_own_commit_completes_the_step_and_one_it_did_not_deliver_is_refused(api):
    d, n, agent, task = _setup(api)
    ours = [sha("second"), sha("first")]
    # during the run its commits are not delivered yet: refused, saying to end the run
    r = _step(agent, n, "implement", produced=_work(n, ours[0]))
    assert r.status_code == 403
    assert "is at the commit boundary" in r.json()["detail"] and "end this run" in r.json()["detail"]
    deliver(d, task, "predictorx/a1/csv", ours)  # the daemon's report at the run's end
    agent, task = claim_next(api, d)  # the delivery dispatched the step again: the next task
    sweep = agent.get(f"/api/tasks/{task}/harness/sweep").json()
    [implement] = [e for i in sweep["instances"] for e in i["enabled"] if e["node"] == "implement"]
    assert implement["commit_boundary"] and [c["commit"] for c in implement["delivered"]] == ours
    # a person's commit pushed onto the agent's branch is not the run's: refused, whoever names it
    person = sha("pushed by a person")
    r = _step(agent, n, "implement", produced=_work(n, person))
    assert r.status_code == 403
    detail = r.json()["detail"]
    assert f"commit {person} on feat/{n}-csv is not one an agent's run delivered" in detail
    assert f"the runs of a1 on issue #{n} delivered 2 commit(s), the latest {ours[0][:12]}" in detail
    assert "a person's commit pushed onto the agent's branch" in detail
    assert _step(agent, n, "implement", produced=_work(n, "not-a-sha")).status_code == 403
    # the run's own commit (a short id of it too) passes
    r = _step(agent, n, "implement", produced=_work(n, ours[1][:10]))
    assert r.status_code == 200, r.text
    hist = api.get(f"/api/issues/{n}/workflows/feature-request").json()["history"]
    refused = [h for h in hist if h["status"] == "refused" and h["node_id"] == "implement"]
    # the same refusal by the same agent is recorded once and counted (workflow_instances.record_refusal)
    assert [(h["produced"]["commit"], h["attempts"]) for h in refused] == [(ours[0], 3)]
    assert "is at the commit boundary" in refused[0]["reason"]
    # the PROV record: each refused attempt is an invalid activity that generated nothing
    graph = api.get(f"/api/issues/{n}/workflows/feature-request/prov").json()["@graph"]
    invalid = [g for g in graph if "px:RefusedAttempt" in (g.get("@type") or [])
               and "#implement" in str(g["prov:qualifiedAssociation"])]
    assert [(g["px:valid"], g["px:attempts"], "prov:generated" in g) for g in invalid] == [(False, 3, False)]
    assert "is at the commit boundary" in invalid[0]["px:reason"]


def test_commit_boundary_is_declared_only_where_an_agent_records_a_commit(tmp_path):
    assert load_library([SHIPPED]).process("feature-request").nodes["implement"].commit_boundary
    bad = (tmp_path / "b.bpmn")
    bad.write_text("""<?xml version="1.0"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
  xmlns:h="https://predictorx.dev/ns/harness/processes" id="d">
  <bpmn:process id="b" isExecutable="false">
    <bpmn:laneSet><bpmn:lane id="l" name="Reviewer"><bpmn:flowNodeRef>t</bpmn:flowNodeRef></bpmn:lane></bpmn:laneSet>
    <bpmn:startEvent id="s"/>
    <bpmn:task id="t" name="T"><bpmn:extensionElements><h:log capture="commit"/><h:commitBoundary/>
    </bpmn:extensionElements></bpmn:task>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/><bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>""")
    with pytest.raises(DiagramError, match="commitBoundary on 't' needs a task of the agent lane"):
        load_library([tmp_path])


def test_the_daemon_reports_the_commits_its_run_delivered(tmp_path):
    """daemon/review.py: the review lists the branch's commits since the run's start, newest first —
    not the history before it (what the boundary accepts is the run's own)."""
    import subprocess

    from predictorx.daemon.review import branch_review

    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@x", "-c", "commit.gpgSign=false",
                               *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q", "-b", "main")
    for i in range(2):
        (tmp_path / "a.txt").write_text(f"{i}\n")
        git("add", "a.txt")
        git("commit", "-q", "-m", f"before {i}")
    base = git("rev-parse", "HEAD")
    git("checkout", "-q", "-b", "agent/run")
    made = []
    for i in range(2):
        (tmp_path / "b.txt").write_text(f"{i}\n")
        git("add", "b.txt")
        git("commit", "-q", "-m", f"run {i}")
        made.insert(0, git("rev-parse", "HEAD"))
    review = branch_review(tmp_path, base, "agent/run", mode="worktree", repo_label="r")
    assert review["commits"] == made and review["tip"] == made[0]
    assert branch_review(tmp_path, base, None, mode="worktree", repo_label="r")["commits"] == []
