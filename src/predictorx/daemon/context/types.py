"""The data of a task's project context, in one module: what a claim says (`TaskContext`, its
`Resource`s and `WorkspaceRepo`s, the `Repository` list the agent is shown) and the handles of
what the daemon wrote into the person's folder (`ContextFiles`, `BlockHandle`), so that exactly
that can be taken out again."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from predictorx import resources as resource_types

from ...protocol import ClaimContext
from ..repocache import normalize_url
from .files import read_regular_file

RESOURCES_JSON = Path(".predictorx") / "project" / "resources.json"
GENERATED_BY = "predictorx"


@dataclass(frozen=True)
class Resource:
    id: str
    resource_type: str
    resource_ref: Mapping[str, Any]
    label: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "resource_type": self.resource_type,
                "resource_ref": dict(self.resource_ref), "label": self.label}


@dataclass(frozen=True)
class WorkspaceRepo:
    url: str
    description: str | None = None


@dataclass(frozen=True)
class Repository:
    """One entry of ``## Repositories``: from a project resource or, failing those, the workspace."""

    url: str
    source: str  # "project" | "workspace"
    label: str | None = None
    ref: str | None = None
    description: str | None = None


@dataclass(frozen=True)
class TaskContext:
    """What a claim tells the daemon about the task's project (only this daemon's rows, R-RES-8)."""

    project_id: str | None = None
    project_title: str | None = None
    project_description: str | None = None
    resources: tuple[Resource, ...] = ()
    workspace_repos: tuple[WorkspaceRepo, ...] = ()

    @classmethod
    def of_claim(cls, claimed: ClaimContext, *, daemon_id: str | None = None) -> TaskContext:
        """From a claim (protocol.py), checked at the daemon's edge; see `from_dict`."""
        return cls.from_dict(claimed.to_wire(), daemon_id=daemon_id)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, daemon_id: str | None = None) -> TaskContext:
        """Build from a claim/API payload; workspace repos may be URLs or {url, description}.

        With `daemon_id`, rows that belong to another machine are dropped even if the server sent
        them (R-RES-8): no other machine's path ever reaches the agent.
        """
        resources = tuple(
            Resource(id=str(r["id"]), resource_type=r["resource_type"],
                     resource_ref=dict(r.get("resource_ref") or {}), label=r.get("label"))
            for r in data.get("resources") or ()
        )
        if daemon_id is not None:
            resources = tuple(r for r in resources if _visible_to(r, daemon_id))
        repos = tuple(
            WorkspaceRepo(url=r) if isinstance(r, str) else WorkspaceRepo(url=r["url"], description=r.get("description"))
            for r in data.get("workspace_repos") or ()
        )
        return cls(project_id=data.get("project_id"), project_title=data.get("project_title"),
                   project_description=data.get("project_description"), resources=resources,
                   workspace_repos=repos)

    @property
    def has_project(self) -> bool:
        return bool(self.project_id or self.project_title)

    def project_repositories(self) -> list[Repository]:
        """Repositories the project's resources provide (deduplicated, in resource order)."""
        seen: set[str] = set()
        out = []
        for res in self.resources:
            url = _repository_url(res)
            if not url or repo_key(url) in seen:
                continue
            seen.add(repo_key(url))
            out.append(Repository(url=url, source="project", label=res.label, ref=res.resource_ref.get("ref")))
        return out

    def repositories(self) -> list[Repository]:
        """R-CTX-3: the project's repositories if it has any, otherwise the workspace's."""
        project = self.project_repositories()
        if project:
            return project
        seen: set[str] = set()
        out = []
        for repo in self.workspace_repos:
            if repo_key(repo.url) not in seen:
                seen.add(repo_key(repo.url))
                out.append(Repository(url=repo.url, source="workspace", description=repo.description))
        return out


def repo_key(url: str) -> str:
    try:
        return normalize_url(url)
    except ValueError:
        return url


def handler_of(resource_type: str) -> resource_types.ResourceType | None:
    try:
        return resource_types.get(resource_type)
    except resource_types.ResourceError:
        return None  # a type this daemon does not know yet (the server may be newer)


def _visible_to(res: Resource, daemon_id: str) -> bool:
    handler = handler_of(res.resource_type)
    try:
        return handler.visible_to_daemon(dict(res.resource_ref), daemon_id) if handler else True
    except (KeyError, TypeError, ValueError):
        return False


def _repository_url(res: Resource) -> str | None:
    handler = handler_of(res.resource_type)
    try:
        return handler.repository_url(dict(res.resource_ref)) if handler else None
    except (KeyError, TypeError, ValueError):
        return None


@dataclass
class ContextFiles:
    """What `write_resources_json` created, so that exactly that can be removed afterwards."""

    files: list[Path] = field(default_factory=list)
    dirs: list[Path] = field(default_factory=list)  # outermost first
    skipped: str | None = None  # why nothing was written

    def remove(self) -> None:
        """Remove our files (if still ours) and the directories we made (only if empty)."""
        for path in self.files:
            inside = list(path.parents)[:len(RESOURCES_JSON.parts) - 1]  # .predictorx/project: the agent's
            if is_ours(path) and not any(p.is_symlink() for p in inside):
                path.unlink(missing_ok=True)
        for directory in reversed(self.dirs):
            if any(d.is_symlink() for d in self.dirs):
                break  # the agent put a symlink in their place: nothing is removed through it
            try:
                directory.rmdir()
            except OSError:
                pass  # not empty (someone put something there) or already gone: leave it
        self.files, self.dirs = [], []


def is_ours(path: Path) -> bool:
    try:  # a regular file only, size-capped, never blocking (the agent may leave a FIFO there)
        data = json.loads(read_regular_file(path).decode("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("generated_by") == GENERATED_BY


@dataclass(frozen=True)
class BlockHandle:
    """Everything `remove_block` needs to take out exactly what `insert_block` put in."""

    path: Path        # the file written (a symlink's target)
    begin: bytes      # our begin marker line, newline included
    inserted: bytes   # separator + block, byte for byte as written
    separator: bytes  # the newline put between the person's content and the block ("" if none)
    created: bool     # the file did not exist (or held only a stale block of ours)


def task_repo_urls(ctx: TaskContext) -> list[str]:
    """The project's repository URLs, to add to the task's own allowed list (R-CTX-4)."""
    return [r.url for r in ctx.project_repositories()]


def allowed_repo_urls(ctx: TaskContext, extra: Iterable[str] = ()) -> list[str]:
    """Workspace repositories plus the task's project repositories (kept apart by the caller)."""
    urls = [r.url for r in ctx.workspace_repos] + task_repo_urls(ctx) + list(extra)
    return list(dict.fromkeys(urls))
