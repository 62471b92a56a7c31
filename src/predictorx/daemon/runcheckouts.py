"""The repositories checked out for a run in its own workdir — the task's checkout of its
project's repository, and those the agent checked out itself (`predictorx repo checkout`) — and
how their work reaches the daemon's repo cache when the run ends, or at the next daemon start if
it never ended (a record in the env root, `PENDING`, which also keeps GC away until then).

The agent's command writes one small JSON record per checkout into its env root's `checkouts/`
(writable in the sandbox). The record is the agent's word, so the daemon trusts none of it: the
folder must be a direct child of the run's workdir (no symlink), the URL one the task allows, the
branch the task's own name; the work is then brought in by `delivery` — the checkout's git dir
read as data — onto a branch the daemon names in the cache.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from . import delivery
from .branches import ref_component
from .gitcmd import GitError
from .repocache import RepoCache, RepoCacheError, URLNotAllowed, check_allowed

log = logging.getLogger("predictorx.daemon")

CHECKOUTS_DIR = "checkouts"
#: The daemon's record (in the env root, not writable by the run) of deliveries still to make.
PENDING = ".predictorx-delivery.json"
MAX_RECORDS = 50
_SHA = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class RunCheckout:
    url: str
    path: Path
    branch: str
    start: str | None


def record(env_root: Path, url: str, path: Path, branch: str, start: str) -> None:
    """Note a checkout the agent made (called by its `predictorx repo checkout`)."""
    folder = Path(env_root) / CHECKOUTS_DIR
    folder.mkdir(exist_ok=True)
    name = ref_component(path.name, "checkout", ascii_only=True)
    (folder / f"{name}.json").write_text(json.dumps({"url": url, "path": str(path), "branch": branch,
                                                    "start": start}))


def recorded(env_root: Path, workdir: Path, allowed: Iterable[str], branch_prefix: str) -> list[RunCheckout]:
    """The records that pass the checks, at most MAX_RECORDS; anything odd is skipped and logged."""
    folder = Path(env_root) / CHECKOUTS_DIR
    if folder.is_symlink() or not folder.is_dir():
        return []
    allowed = list(allowed)
    found: list[RunCheckout] = []
    for entry in sorted(folder.iterdir())[:MAX_RECORDS]:
        try:
            data = json.loads(entry.read_text()) if entry.is_file() and not entry.is_symlink() else None
            url, path, branch = str(data["url"]), Path(str(data["path"])), str(data["branch"])
            check_allowed(url, allowed)
        except (OSError, ValueError, TypeError, KeyError, URLNotAllowed) as e:
            log.warning("ignored the checkout record %s: %s", entry, e)
            continue
        if path.parent != workdir or path.is_symlink() or not path.is_dir():
            log.warning("ignored the checkout record %s: %s is not a folder of the run's workdir", entry, path)
            continue
        if branch != branch_prefix and not re.fullmatch(re.escape(branch_prefix) + r"-\d+", branch):
            branch = branch_prefix
        start = data.get("start")
        found.append(RunCheckout(url, path, branch, start if isinstance(start, str) and _SHA.match(start) else None))
    return found


def deliver(cache: RepoCache, co: RunCheckout, scratch: Path, *, agent_name: str, task_id: str) -> tuple[str, bool]:
    """Bring one checkout's work into the cache onto a free branch: a sentence saying where it is,
    and whether all of it got there."""
    try:
        git_dir = cache.ensure(co.url, refresh=False)
        incoming = f"refs/predictorx/incoming/{ref_component(task_id, 'task', ascii_only=True)}"
        with cache.lock(co.url):
            done = delivery.deliver(co.path, git_dir, co.branch, co.start, agent_name=agent_name, task_id=task_id,
                                    scratch=scratch, ref=incoming,
                                    keep_ref=f"refs/predictorx/kept/{ref_component(task_id, 'task', ascii_only=True)}")
            try:
                if co.start and done.tip == co.start:
                    return f"{co.path} ({co.url}): no changes", True
                name = cache.create_branch(git_dir, co.branch, done.tip)
            finally:
                cache.delete_ref(git_dir, incoming)
    except (delivery.DeliveryError, RepoCacheError, GitError, OSError) as e:
        return f"{co.path} ({co.url}): its work stays in that folder only ({e})", False
    extra = f"; {done.problem}" if done.problem else ""
    return f"{co.path} ({co.url}): on branch {name} in this daemon's cache ({git_dir}){extra}", not done.problem


# -- the pending record ------------------------------------------------------------------------------

def mark_pending(env_root: Path, *, task_id: str, agent_name: str, allowed: list[str],
                 placement: dict | None = None, state: str = "pending", why: str | None = None,
                 workspace_id: str | None = None) -> None:
    """Write (or rewrite) the record: until it goes, GC keeps the env root and a daemon start
    delivers what it names. `placement`: the task's own checkout (url, path, branch, start, cache)."""
    import psutil

    me = psutil.Process()
    data = {"version": 1, "state": state, "task_id": task_id, "agent_name": agent_name, "allowed": allowed,
            "workspace_id": workspace_id,
            "placement": placement, "why": why, "pid": me.pid, "pid_started": me.create_time(),
            "written_at": time.time()}
    target = Path(env_root) / PENDING
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, target)


def read_pending(env_root: Path) -> dict | None:
    try:
        data = json.loads((Path(env_root) / PENDING).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def clear_pending(env_root: Path) -> None:
    (Path(env_root) / PENDING).unlink(missing_ok=True)


def _owner_alive(data: dict) -> bool:
    import psutil

    pid = data.get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return False
    try:
        return abs(psutil.Process(pid).create_time() - float(data.get("pid_started", 0))) < 1.0
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError, TypeError):
        return False


def deliver_placement(cache: RepoCache, placement: dict, scratch: Path, *, agent_name: str,
                      task_id: str) -> delivery.Delivered:
    """The task's own checkout: its branch was made in the cache at `start` when it was checked out."""
    git_dir, url = Path(placement["cache"]), placement["url"]
    with cache.lock(url):
        return delivery.deliver(Path(placement["path"]), git_dir, placement["branch"], placement["start"],
                                agent_name=agent_name, task_id=task_id, scratch=scratch,
                                keep_ref=f"refs/predictorx/kept/{ref_component(task_id, 'task', ascii_only=True)}")


def recover(roots: Iterable[Path], cache: RepoCache) -> list[str]:
    """At daemon start: deliver what runs that never ended left in their checkouts. Sentences for the log."""
    said = []
    for root in roots:
        for marker in sorted(Path(root).glob(f"*/*/{PENDING}")):
            env_root = marker.parent
            data = read_pending(env_root)
            if data is None or data.get("state") != "pending" or _owner_alive(data):
                continue
            workspace = data.get("workspace_id")
            said.append(_recover_one(env_root, data, cache.for_workspace(workspace) if isinstance(workspace, str)
                                     else cache))
    return said


def _recover_one(env_root: Path, data: dict, cache: RepoCache) -> str:
    task_id, agent = str(data.get("task_id") or env_root.name), str(data.get("agent_name") or "agent")
    scratch = env_root / ".delivery"
    notes, problems = [], []
    placement = data.get("placement")
    if isinstance(placement, dict) and Path(str(placement.get("path"))).is_dir():
        try:
            done = deliver_placement(cache, placement, scratch, agent_name=agent, task_id=task_id)
            notes.append(f"{placement['path']}: branch {placement['branch']} in the cache of {placement['url']}")
            if done.problem:
                problems.append(done.problem)
        except (delivery.DeliveryError, RepoCacheError, GitError, OSError, KeyError) as e:
            problems.append(str(e))
    from .branches import task_branch

    for co in recorded(env_root, env_root / "workdir", [str(u) for u in data.get("allowed") or []],
                       task_branch(agent, task_id)):
        sentence, ok = deliver(cache, co, scratch, agent_name=agent, task_id=task_id)
        (notes if ok else problems).append(sentence)
    if problems:
        mark_pending(env_root, task_id=task_id, agent_name=agent, allowed=list(data.get("allowed") or []),
                     placement=placement, state="kept", why="; ".join(problems),
                     workspace_id=data.get("workspace_id"))
        return f"Kept the checkouts of task {task_id} in {env_root}: " + "; ".join(problems)
    clear_pending(env_root)
    return f"Delivered the checkouts task {task_id} left when a previous run stopped: " + "; ".join(notes or ["nothing"])
