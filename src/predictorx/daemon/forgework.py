"""What the server asks of this daemon about a task's branch after its run (issue 22 §2, §6):
push it to its forge (`forge_push`: asynchronous; the daemon fetches the target with its own
token and reports back), or merge / discard it in the person's repository (`local_merge`,
`local_discard`: answered on the request, the server waits for it).

The server names the repository and branch the daemon itself reported with the task's end; the
daemon still checks them: a repository is acted on only when it is one of this daemon's repo
caches or a folder the local-directory path rules allow (R-LD-1).
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any, Callable

from .. import resources
from ..forges.base import PushTarget
from ..protocol import PushReport
from . import forgepush, gitview, localmerge, smartpush
from .branches import ref_component
from .gitcmd import KEPT_REFS, GitError
from .host import RunHost
from .repocache import CACHE_DIR_NAME
from .serverapi import ServerApi, ServerError

log = logging.getLogger("predictorx.daemon")
OPS = ("forge_push", "local_merge", "local_discard")


def _inside(path: Path, root: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real.startswith(top + os.sep)


def checked_repository(workspaces_root: Path, path: str) -> Path:
    """`path` when this daemon (of `workspaces_root`) may act on it: one of its repo caches, or an
    allowed local folder."""
    if not path or not os.path.isabs(path):
        raise ValueError(f"{path!r} is not a repository this daemon knows")
    if _inside(Path(path), workspaces_root / CACHE_DIR_NAME):
        return Path(os.path.realpath(path))
    try:
        return Path(resources.get("local_directory").check_folder(path))
    except resources.PathRuleError as e:
        raise ValueError(f"{path} cannot be used: {e}") from None


def target_from(answer: dict[str, Any], server_url: str | None = None) -> PushTarget:
    """The server's answer as a PushTarget. A `remote_url` that is a path is the server's relay
    (service/forgerelay.py): joined to `server_url`, the server this daemon talks to now."""
    remote = str(answer["remote_url"])
    if remote.startswith("/"):
        if not server_url:
            raise ValueError("the push target names the server's relay, but no server URL was given")
        remote = server_url.rstrip("/") + remote
    return PushTarget(remote_url=remote, branch=str(answer["branch"]),
                      username=str(answer["username"]), token=str(answer["token"]),
                      extra={str(k): str(v) for k, v in (answer.get("extra") or {}).items()})


class NoTarget(RuntimeError):
    """The server named no forge branch for the task."""


async def continuing_start(api: ServerApi, task_id: str, fetched: Callable[[str], None]) -> Callable[[Path], str]:
    """For a follow-up (issue 22 §5): a function that, given a repository (the repo cache, the
    person's git dir), fetches the continued branch from its forge — the credential in git's
    environment only — readies the branch there (`forgepush.adopt`) and returns where the run
    starts; `fetched(sha)` hears what the forge held."""
    try:
        target = target_from(await api.forge_target(task_id), api.server_url)
    except (ServerError, KeyError, TypeError, ValueError) as e:
        raise NoTarget(str(e)) from None
    name = ref_component(task_id, "task")

    def start_at(repo: Path) -> str:
        forge_sha = forgepush.fetch(repo, target, f"{forgepush.FETCHED_REFS}/{name}")
        fetched(forge_sha)
        return forgepush.adopt(repo, target.branch, forge_sha, f"{KEPT_REFS}/{name}-before")
    return start_at


async def handle(daemon: RunHost, event: dict[str, Any]) -> None:
    op = event.get("op")
    if op == "forge_push":
        await push_task(daemon, str(event.get("task_id", "")))
    elif op in ("local_merge", "local_discard"):
        await _answer_local(daemon, event)


async def push_task(daemon: RunHost, task_id: str, given: dict[str, Any] | None = None) -> None:
    """Push the task's branch where the server says (`given`: the target its finish's answer
    carried; else fetched now), and report how it went."""
    try:
        answer = given if given is not None else await daemon.api.forge_target(task_id)
    except ServerError as e:
        log.warning("task %s: no push target (%s)", task_id, e.detail)
        return
    ok, sha, error = await push_with(daemon.workspaces_root, task_id, answer, server_url=daemon.api.server_url)
    if ok is None:
        return
    try:
        await daemon.api.forge_pushed(task_id, PushReport(ok, sha, error))
    except ServerError as e:
        log.warning("task %s: could not report its push (%s)", task_id, e.detail)


async def push_with(workspaces_root: Path, task_id: str, answer: dict[str, Any],
                    quarantine: Path | None = None, *, session: smartpush.SessionLike = None,
                    server_url: str | None = None) -> tuple[bool | None, str | None, str | None]:
    """Push the task's branch to the target the server answered: (ok, sha, error); ok None when
    the answer was unreadable (nothing was pushed, nothing to report). `quarantine`: push the
    answer's `tip` from the delivery's own repository (daemon/delivery.py), not from the
    repository the server names. `session`: the forge's refs discovered already, or being
    discovered (smartpush.py; used when it is for this target, closed either way). `server_url`:
    the server the relay's path is joined to (target_from)."""
    try:
        target = target_from(answer, server_url)
    except (KeyError, TypeError, ValueError):
        log.warning("task %s: the server's push target was unreadable", task_id)
        smartpush.discard(session)
        return None, None, None
    ok, sha, error = False, None, None
    try:
        repo = quarantine or checked_repository(workspaces_root, target.extra.get("repo_path", ""))
        # At a run's end the server names the commit this daemon reported as the branch's tip.
        local = target.extra.get("tip") or f"refs/heads/{target.extra.get('local_branch') or target.branch}"
        if quarantine is None and target.extra.get("mode") == "in_place":
            done = await _push_in_place(task_id, repo, local, target, session)
        else:
            done = await _push(task_id, repo, local, target, quarantine is not None, session)
        session = None
        ok, sha = True, done.sha
        log.info("task %s: pushed %s to the forge's branch %s", task_id, done.sha[:12], target.branch)
    except (forgepush.PushError, ValueError) as e:
        error = str(e)
        log.warning("task %s: push failed: %s", task_id, error)
    finally:
        smartpush.discard(session)
        del target, session  # the credential lives no longer than the push
    return ok, sha, error


async def _push_in_place(task_id: str, folder: Path, local: str, target: PushTarget,
                         session: smartpush.SessionLike) -> forgepush.Pushed:
    """An in-place task's branch, pushed from the folder's sealed view (`gitview`): its `.git` is
    the agent's to write, and a push there would read its config (a promisor remote's lazy fetch,
    `core.sshCommand`, …) as the daemon's."""
    with gitview.sealed_view(folder) as env:
        if env is None:
            raise ValueError(f"{folder} is not a git working copy the daemon can read; nothing was pushed")
        return await _push(task_id, Path(env["GIT_DIR"]), local, target, True, session)


async def _push(task_id: str, repo: Path, local: str, target: PushTarget, is_git_dir: bool,
                session: smartpush.SessionLike) -> forgepush.Pushed:
    """The push spoken by the daemon itself (smartpush.py), or `git push` where it does not speak it."""
    lease = target.extra.get("lease") or None
    try:
        return await smartpush.push(repo, local, target, lease=lease, is_git_dir=is_git_dir, session=session)
    except smartpush.Unsupported as e:
        log.info("task %s: pushing with git push (%s)", task_id, e)
    except forgepush.PushError:
        raise  # the forge's or the lease's answer: git push would hear the same
    except Exception:  # a fault of this client's: git push still delivers the work
        log.warning("task %s: the daemon's own push failed; pushing with git push", task_id, exc_info=True)
    return await asyncio.to_thread(forgepush.push, repo, local, target, lease=lease, git_dir=is_git_dir)


async def _answer_local(daemon: RunHost, event: dict[str, Any]) -> None:
    ok, error, data = False, None, None
    try:
        repo = checked_repository(daemon.workspaces_root, str(event.get("repo_path", "")))
        branch = str(event.get("branch") or "")
        if not branch.startswith("agent/") and not event.get("continued"):
            raise ValueError(f"{branch!r} is not a task's branch")
        if event["op"] == "local_merge":
            out = await asyncio.to_thread(localmerge.merge, repo, branch, issue=str(event.get("issue", "")),
                                          task_id=str(event.get("task_id", "")),
                                          in_place=event.get("mode") == "in_place")
        else:
            kept = event.get("kept_folder")
            out = await asyncio.to_thread(localmerge.discard, repo, branch, expected=event.get("expected") or None,
                                          kept_folder=Path(kept) if kept else None, kept_root=daemon.workspaces_root,
                                          start=event.get("start") or None, in_place=event.get("mode") == "in_place")
        ok, data = True, {"sha": out.sha, "how": out.how, "into": out.into, "message": out.message}
    except (localmerge.Refused, ValueError) as e:
        error = str(e)
    except GitError as e:
        error = f"git failed in the repository: {e}"
    try:
        await daemon.api.answer(event["request_id"], ok, error, data)
    except ServerError as e:
        log.warning("could not answer a %s request: %s", event.get("op"), e)
