"""A daemon's end of a run, over HTTP as a daemon does it: the task finishes with the review the
daemon sends (daemon/review.py), including the commits its run delivered to the task's branch — what
the commit boundary accepts (service/workflow_boundary.py) — and the next task is claimed."""

from __future__ import annotations


def sha(seed: str) -> str:
    """A 40-hex commit id (a test's stand-in for one git made)."""
    import hashlib

    return hashlib.sha1(seed.encode()).hexdigest()


def deliver(daemon, task_id: str, branch: str, commits: list[str], base: str | None = None) -> dict:
    """Finish `task_id` as its daemon, reporting `commits` (newest first) delivered on `branch`."""
    review = {"mode": "checkout", "branch": branch, "base": base or sha("base"), "tip": commits[0] if commits else None,
              "commits": commits, "changed": bool(commits), "files": [], "patch": ""}
    r = daemon.post(f"/api/daemon/tasks/{task_id}/finish", json={"status": "completed", "review": review})
    assert r.status_code == 200, r.text
    return r.json()


def claim_next(api, daemon):
    """The next task the daemon claims: (the agent's client with its task token, the task id)."""
    tasks = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    assert tasks, "no task was queued for the agent"
    return api.as_(tasks[0]["token"]), tasks[0]["task"]["id"]


def run_delivered(api, daemon, task_id: str, branch: str, seed: str):
    """The agent's run made one commit on `branch` and ended; the next task carries on.
    Returns (the next task's agent client, its task id, the commit)."""
    commit = sha(seed)
    deliver(daemon, task_id, branch, [commit])
    agent, task = claim_next(api, daemon)
    return agent, task, commit


def record_run(s, issue, agent, commits: list[str]) -> None:
    """In the database, as the daemon's finish leaves it: a finished run of `agent` (an engine
    Actor; its agent row made if missing) on `issue` that delivered `commits` — for the service
    tests that take feature-request's `implement` (a commit boundary)."""
    from predictorx.store.schema import Agent, Task

    if s.get(Agent, agent.id) is None:
        s.add(Agent(id=agent.id, workspace_id=issue.workspace_id, name=agent.name, provider="command"))
        s.flush()
    s.add(Task(workspace_id=issue.workspace_id, issue_id=issue.id, agent_id=agent.id, status="completed",
               review={"branch": "feat/x", "base": sha("base"), "tip": commits[0], "commits": commits}))
    s.flush()
