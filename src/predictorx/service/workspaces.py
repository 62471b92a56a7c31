"""Workspaces: the ones a person belongs to, creating one (its creator is the owner), finding one
by id or slug among the caller's."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..resources.local_urls import entry_url, local_git_url
from ..store.schema import Member, Workspace
from .errors import Conflict, Forbidden, Invalid, NotFound
from .members import role_of


def list_for_user(session: Session, user_id: str) -> list[Workspace]:
    return list(session.scalars(select(Workspace).join(Member, Member.workspace_id == Workspace.id)
                                .where(Member.user_id == user_id).order_by(Workspace.created_at)))


def repos_of(session: Session, workspace_id: str) -> list:
    """The workspace's repositories (R-CTX-3), as stored."""
    ws = session.get(Workspace, workspace_id)
    return list(ws.repos or []) if ws is not None else []


def set_repos(session: Session, ws: Workspace, user_id: str | None, repos: list[str]) -> None:
    """The workspace's repositories, in order, each once. A file:// repository is a folder on the
    machine that fetches it and the list goes to every owner's daemon, so only an owner adds one
    (R-SEC-6; service/claiming.py gives such entries to owners' daemons only)."""
    before = {entry_url(r) for r in ws.repos or []}
    added = [u for u in repos if u not in before and local_git_url(u)]
    if added and role_of(session, ws.id, user_id) != "owner":
        raise Forbidden(f"{added[0]} is a file:// repository, a folder on the machine that fetches it: only a "
                        "workspace owner adds one to the workspace's list (only owners' daemons fetch it); "
                        "add it as a repository resource of a project instead, which only your daemons fetch")
    ws.repos = list(dict.fromkeys(repos))


def rename(ws: Workspace, name: str) -> Workspace:
    """A new display name (the slug, which CLIs and URLs name it by, stays)."""
    name = name.strip()
    if not name:
        raise Invalid("a workspace needs a name")
    ws.name = name
    return ws


def create_workspace(session: Session, user_id: str, *, name: str, slug: str, repos: list) -> Workspace:
    """Conflict when the slug is taken (the caller's transaction then rolls back: nothing created)."""
    ws = Workspace(name=name, slug=slug, repos=repos)
    try:
        session.add(ws)
        session.flush()
        session.add(Member(workspace_id=ws.id, user_id=user_id, role="owner"))
        session.flush()
    except IntegrityError:
        raise Conflict(f"a workspace with slug {slug!r} exists; choose another --slug") from None
    return ws


def find_mine(session: Session, workspace_ids: list[str], ref: str) -> Workspace:
    """By id or slug, among the caller's workspaces; another's is 404 like a missing one."""
    ws = session.get(Workspace, ref) or session.scalar(select(Workspace).where(Workspace.slug == ref))
    if ws is None or ws.id not in workspace_ids:
        raise NotFound(f"workspace {ref!r} not found; `predictorx workspace list` shows yours")
    return ws
