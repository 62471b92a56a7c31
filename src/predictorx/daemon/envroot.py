"""Per-task env roots: where a task's own artefacts live (R-LD-6).

Every task gets ``<workspaces_root>/<workspace>/<task_id>/`` with

    workdir/        the agent's working directory (absent for an ``in_place`` task: the agent
                    runs in the person's own folder, which is never inside an env root)
    output/         what the daemon keeps of the run
    logs/           raw agent streams and daemon logs
    .gc_meta.json   what garbage collection (`predictorx.daemon.gc`) needs to decide safely

`.gc_meta.json` records the task, its workspace, when it was created and finished, the kind of
working directory (`own`: a plain directory of ours, where checkouts of the repo cache go;
`worktree`: a checkout of a person's repository; `in_place`: the person's folder itself), that folder's path so
GC knows never to touch it, and the repository URLs the task used.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Literal

from predictorx import config

META_NAME = ".gc_meta.json"
META_VERSION = 1

WorkdirKind = Literal["own", "worktree", "in_place"]
WORKDIR_KINDS: tuple[str, ...] = ("own", "worktree", "in_place")

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def path_component(value: str) -> str:
    """A workspace slug or task id made safe as one directory name (no separators, no dot-dirs)."""
    cleaned = _UNSAFE.sub("-", value.strip()).strip("-")
    cleaned = cleaned.lstrip(".")
    if not cleaned:
        raise ValueError(f"{value!r} cannot be used as a directory name")
    return cleaned[:128]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class EnvRoot:
    """One task's env root. `workdir` is where the agent runs (the person's folder if in_place)."""

    path: Path
    task_id: str
    workspace: str
    workdir_kind: WorkdirKind
    local_path: Path | None = None

    @property
    def workdir(self) -> Path:
        if self.workdir_kind == "in_place":
            assert self.local_path is not None
            return self.local_path
        return self.path / "workdir"

    @property
    def output(self) -> Path:
        return self.path / "output"

    @property
    def logs(self) -> Path:
        return self.path / "logs"

    @property
    def meta_path(self) -> Path:
        return self.path / META_NAME

    def read_meta(self) -> dict[str, Any]:
        return read_meta(self.path) or {}


def env_root_path(root: Path, workspace: str, task_id: str) -> Path:
    return Path(root) / path_component(workspace) / path_component(task_id)


def read_meta(env_path: Path) -> dict[str, Any] | None:
    """The env root's `.gc_meta.json`, or None if it is missing, unreadable or not ours."""
    try:
        data = json.loads((Path(env_path) / META_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "task_id" in data else None


def open_env_root(env_path: Path) -> EnvRoot:
    """The EnvRoot recorded at `env_path` (for reconciling after a restart, or a task's CLI)."""
    data = read_meta(env_path)
    if data is None:
        raise FileNotFoundError(f"{env_path} has no readable {META_NAME}")
    kind = data.get("workdir_kind") if data.get("workdir_kind") in WORKDIR_KINDS else "own"
    local = data.get("local_path")
    return EnvRoot(path=Path(env_path), task_id=str(data["task_id"]), workspace=str(data.get("workspace", "")),
                   workdir_kind=kind, local_path=Path(local) if isinstance(local, str) and local else None)


def _write_meta(env_path: Path, data: dict[str, Any]) -> None:
    # Atomic: GC may read the file at any moment and must never see half of it.
    target = Path(env_path) / META_NAME
    tmp = target.with_name(f"{META_NAME}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, target)


def create_env_root(
    root: Path | None,
    workspace: str,
    task_id: str,
    *,
    workdir_kind: WorkdirKind = "own",
    local_path: Path | str | None = None,
    repo_urls: Iterable[str] = (),
    now: datetime | None = None,
) -> EnvRoot:
    """Create (or, for a retried task, reuse) the env root of `task_id`.

    `root` defaults to `config.workspaces_root()`. `local_path` is required for `in_place` and
    `worktree`-of-a-local-folder tasks; it is recorded so GC can protect it. For `worktree`,
    `workdir/` is made empty so the task's checkout can be made there.
    """
    if workdir_kind not in WORKDIR_KINDS:
        raise ValueError(f"workdir_kind must be one of {', '.join(WORKDIR_KINDS)}, got {workdir_kind!r}")
    if workdir_kind == "in_place" and local_path is None:
        raise ValueError("an in_place env root needs the local folder's path")
    root = Path(root) if root is not None else config.workspaces_root()
    local = Path(os.path.realpath(local_path)) if local_path is not None else None
    path = env_root_path(root, workspace, task_id)
    env = EnvRoot(path=path, task_id=task_id, workspace=workspace, workdir_kind=workdir_kind, local_path=local)

    for sub in ("output", "logs") + (("workdir",) if workdir_kind != "in_place" else ()):
        (path / sub).mkdir(parents=True, exist_ok=True)

    previous = read_meta(path) or {}
    _write_meta(path, {
        "version": META_VERSION,
        "task_id": task_id,
        "workspace": workspace,
        "created_at": previous.get("created_at") or _iso(now or utcnow()),
        "finished_at": None,
        "workdir_kind": workdir_kind,
        "local_path": str(local) if local else None,
        "repo_urls": _merge_urls(previous.get("repo_urls"), repo_urls),
    })
    return env


def _merge_urls(existing: Any, new: Iterable[str]) -> list[str]:
    urls = [u for u in (existing or []) if isinstance(u, str)]
    for url in new:
        if url not in urls:
            urls.append(url)
    return urls


def record_repo_urls(env: EnvRoot | Path, urls: Iterable[str]) -> None:
    """Add URLs the task checked out (e.g. via `predictorx repo checkout`) to its meta."""
    path = env.path if isinstance(env, EnvRoot) else Path(env)
    data = read_meta(path)
    if data is None:
        raise FileNotFoundError(f"{path} has no {META_NAME}")
    data["repo_urls"] = _merge_urls(data.get("repo_urls"), urls)
    _write_meta(path, data)


def mark_finished(env: EnvRoot | Path, *, now: datetime | None = None, status: str | None = None) -> None:
    """Record that the task is over; from then on GC may collect the env root after its TTL."""
    path = env.path if isinstance(env, EnvRoot) else Path(env)
    data = read_meta(path)
    if data is None:
        raise FileNotFoundError(f"{path} has no {META_NAME}")
    data["finished_at"] = _iso(now or utcnow())
    if status is not None:
        data["status"] = status
    _write_meta(path, data)


def disk_full_reason(exc: BaseException, workspaces_root: Path) -> str | None:
    """A sentence naming the full disk, when that is why the task could not run."""
    if not (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) and "No space left on device" not in str(exc):
        return None
    mount = Path(os.path.realpath(workspaces_root))
    while not os.path.ismount(mount) and mount != mount.parent:
        mount = mount.parent
    try:
        free = f"{shutil.disk_usage(mount).free / 1e6:.1f} MB free"
    except OSError:
        free = "free space unknown"
    return (f"the disk holding the task's env root is full: the filesystem mounted at {mount} ({free}; "
            f"env roots live under {workspaces_root}). Free space there, or point PREDICTORX_WORKSPACES_ROOT "
            "at a bigger disk and restart the daemon, then assign the issue again.")


def agent_env(env: EnvRoot, cwd: Path, *, server_url: str, token: str, task_id: str, workspace_id: str,
              issue_number: int, agent_name: str, workspaces_root: Path) -> dict[str, str]:
    """The Predictor X part of an agent's environment: where the server is and the task token it
    acts with, which task it is, and the env root's folders."""
    bin_dir = str(Path(sys.executable).parent)
    return {
        "PREDICTORX_SERVER_URL": server_url,
        "PREDICTORX_TOKEN": token,
        "PREDICTORX_TASK_ID": task_id,
        "PREDICTORX_WORKSPACE": workspace_id,
        "PREDICTORX_ISSUE": str(issue_number),
        "PREDICTORX_AGENT": agent_name,
        "PREDICTORX_ENV_ROOT": str(env.path),
        "PREDICTORX_WORKDIR": str(env.path / "workdir") if env.workdir_kind != "in_place" else str(cwd),
        "PREDICTORX_OUTPUT_DIR": str(env.output),
        "PREDICTORX_WORKSPACES_ROOT": str(workspaces_root),
        # Its own state dir: the daemon's (with the owner's token) is none of its business.
        "PREDICTORX_HOME": str(env.path / "home"),
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
    }
