"""Is this page being looked at on the machine whose daemon could add a local folder? (R-WEB-2)

A browser cannot pick a folder on its own machine for a server to use, so the "Add local folder"
button exists only when both hold: the request comes from loopback (the browser runs where the
server runs), and this server's state dir names a daemon (`predictorx up` starts one there).
A request that went through a proxy counts as remote, since its real origin is unknown.
"""

from __future__ import annotations

import ipaddress
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastapi import Request
from sqlalchemy.orm import Session

from ... import config
from ... import resources as registry
from ...resources.placement import WORKTREE
from ...service.daemons import declared_capabilities, find_daemon, is_online

if TYPE_CHECKING:  # annotations only: routes and pages reach the database through the services
    from ...store.schema import ProjectResource

_PROXY_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip")


def is_local_request(request: Request) -> bool:
    if any(h in request.headers for h in _PROXY_HEADERS) or request.client is None:
        return False
    try:
        address = ipaddress.ip_address(request.client.host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def local_daemon_id() -> str | None:
    """The daemon id in this server's state dir, read without creating one when absent."""
    try:
        return str(uuid.UUID((config.state_dir() / "daemon_id").read_text().strip()))
    except (OSError, ValueError):
        return None


def _owner(handler: registry.ResourceType, row: ProjectResource) -> str | None:
    try:
        return handler.owner_daemon_id(dict(row.resource_ref or {}))
    except (KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True)
class LocalFolderButton:
    daemon_id: str
    daemon_name: str
    enabled: bool
    hint: str | None
    worktree_capable: bool


def local_folder_button(request: Request, session: Session, workspace_id: str,
                        resources: list[ProjectResource]) -> LocalFolderButton | None:
    """None: no button at all (remote page, no daemon on the server's machine, or no resource type
    that takes a picked folder). The folder type says what it needs for worktree mode and which
    of its rows belong to this machine."""
    picker = registry.folder_picker()
    if picker is None or not is_local_request(request):
        return None
    daemon_id = local_daemon_id()
    if daemon_id is None:
        return None
    daemon = find_daemon(session, workspace_id, daemon_id)
    if daemon is None:
        return LocalFolderButton(daemon_id, "this machine", False, (
            "The daemon on this machine has not joined this workspace yet; "
            "start it with `predictorx daemon start`."), False)
    needs = picker.required_capabilities(picker.folder_ref("/", daemon_id, WORKTREE))
    capable = needs <= declared_capabilities(session, daemon)
    if any(r.resource_type == picker.name and _owner(picker, r) == daemon_id for r in resources):
        return LocalFolderButton(daemon_id, daemon.name, False, (
            f"This project already has a local folder on this machine ({daemon.name}); a project has one "
            "per machine — edit or remove that one."), capable)
    if not is_online(daemon):
        return LocalFolderButton(daemon_id, daemon.name, False, (
            f"The daemon on this machine ({daemon.name}) is offline; start it with "
            "`predictorx daemon start` to add a folder."), capable)
    return LocalFolderButton(daemon_id, daemon.name, True, None, capable)
