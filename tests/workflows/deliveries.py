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
