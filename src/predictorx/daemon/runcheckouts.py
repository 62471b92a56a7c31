"""The repositories an agent checked out itself during its run (`predictorx repo checkout`), and
how their work reaches the daemon's repo cache when the run ends.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from . import delivery
from .branches import ref_component
from .gitcmd import GitError
from .repocache import RepoCache, RepoCacheError, URLNotAllowed, check_allowed

log = logging.getLogger("predictorx.daemon")

CHECKOUTS_DIR = "checkouts"
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


def deliver(cache: RepoCache, co: RunCheckout, scratch: Path, *, agent_name: str, task_id: str) -> str:
    """Bring one checkout's work into the cache onto a free branch; a sentence saying where it is."""
    try:
        git_dir = cache.ensure(co.url, refresh=False)
        incoming = f"refs/predictorx/incoming/{ref_component(task_id, 'task', ascii_only=True)}"
        with cache.lock(co.url):
            done = delivery.deliver(co.path, git_dir, incoming, co.start, agent_name=agent_name, task_id=task_id,
                                    scratch=scratch, ref=incoming)
            try:
                if co.start and done.tip == co.start:
                    return f"{co.path} ({co.url}): no changes"
                name = cache.create_branch(git_dir, co.branch, done.tip)
            finally:
                cache.delete_ref(git_dir, incoming)
    except (delivery.DeliveryError, RepoCacheError, GitError, OSError) as e:
        return f"{co.path} ({co.url}): its work stays in that folder only ({e})"
    extra = f"; {done.problem}" if done.problem else ""
    return f"{co.path} ({co.url}): on branch {name} in this daemon's cache ({git_dir}){extra}"
