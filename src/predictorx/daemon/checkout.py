"""`predictorx repo checkout <url> [--ref R]`, run by an agent inside its task (R-CTX-4).

The task is found from the environment the daemon gave the agent; the allowed list is the task's
own snapshot (its project's repos plus the workspace's repos when it was claimed), so refreshing
the workspace list never revokes a running task's URL. The daemon's repo cache is only read (in
the sandbox it is read-only, and only the allowed repositories' caches are there at all); the
checkout is a repository of the run's own, and the daemon brings its branch into the cache when
the run ends (`runcheckouts`).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..apiclient import Client, fail
from . import runcheckouts
from .context.types import TaskContext, allowed_repo_urls
from .gitcmd import GitError
from .repocache import RepoCache, RepoCacheError, URLNotAllowed, check_allowed, repo_name, task_branch


def checkout_for_task(url: str, ref: str | None) -> Path:
    task_id = os.environ.get("PREDICTORX_TASK_ID")
    workdir = os.environ.get("PREDICTORX_WORKDIR")
    if not task_id or not workdir:
        fail("`predictorx repo checkout` runs inside a task (PREDICTORX_TASK_ID and PREDICTORX_WORKDIR are "
             "not set); people clone with git directly")
    task = Client().get(f"/api/tasks/{task_id}")
    ctx = TaskContext.from_dict(task.get("context") or {})
    try:
        check_allowed(url, allowed_repo_urls(ctx))
    except URLNotAllowed as e:
        fail(str(e))
    dest = Path(workdir) / repo_name(url)
    n = 2
    while dest.exists() and any(dest.iterdir()):
        dest = Path(workdir) / f"{repo_name(url)}-{n}"
        n += 1
    root = os.environ.get("PREDICTORX_WORKSPACES_ROOT")
    try:
        workspace = os.environ.get("PREDICTORX_WORKSPACE") or str(task.get("workspace_id") or "")
        co = RepoCache(Path(root) if root else None).for_workspace(workspace).checkout_in_run(
            url, ref, dest, task_branch(task["agent_name"] or "agent", task_id))
    except (RepoCacheError, GitError) as e:
        fail(f"could not check out {url}: {e}")
    env_root = os.environ.get("PREDICTORX_ENV_ROOT")
    if env_root:
        try:
            runcheckouts.record(Path(env_root), url, co.path, co.branch, co.commit)
        except OSError:
            pass
    return co.path
