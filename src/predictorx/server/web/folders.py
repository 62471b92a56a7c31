"""The folder browser behind "Add local folder" (R-WEB-2).

It lists the sub-directories of a folder on the server's machine, which is the daemon's machine:
the route answers only requests from loopback, and only when this server's state dir names a
daemon. It lists names of directories and never reads a file. Saving goes through the API's
resource creation (so the daemon's path check and the 409 apply), after the same path rules the
daemon applies (R-LD-1) were checked here, on the same machine, for an answer before saving.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from ... import resources as registry
from ...resources.placement import IN_PLACE, WORKTREE
from ...service import projects as svc
from ..models import ResourceIn
from ...service import project_actions as actions
from .forms import FORM_ERRORS, Form, FormError, message_of, read_form, status_of
from .machine import is_local_request, local_daemon_id, local_folder_button
from .pageroute import PageRoute, error_page
from .pagework import in_page_thread
from .render import html
from .resources import render_resources
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)
MAX_ENTRIES = 500


def _subdirectories(path: str) -> tuple[list[dict[str, str]], int, str | None]:
    """(shown entries, how many more there are, why the folder could not be listed)."""
    try:
        with os.scandir(path) as it:
            names = []
            for entry in it:
                if entry.name.startswith("."):
                    continue
                try:
                    if entry.is_dir(follow_symlinks=True):
                        names.append(entry.name)
                except OSError:
                    continue
    except PermissionError:
        return [], 0, "permission denied"
    except FileNotFoundError:
        return [], 0, "it does not exist"
    except NotADirectoryError:
        return [], 0, "it is not a folder"
    except OSError as e:
        return [], 0, e.strerror or "it cannot be opened"
    except ValueError:  # a NUL character in the path
        return [], 0, "it is not a valid path"
    names.sort(key=str.casefold)
    shown = [{"name": n, "path": os.path.join(path, n)} for n in names[:MAX_ENTRIES]]
    return shown, max(0, len(names) - MAX_ENTRIES), None


def _crumbs(path: str) -> list[dict[str, str]]:
    parts = Path(path).parts
    return [{"name": part, "path": str(Path(*parts[: i + 1]))} for i, part in enumerate(parts)]


def _picker() -> registry.ResourceType:
    """The resource type a picked folder becomes (`folder_picker`); the button exists only with one."""
    picker = registry.folder_picker()
    if picker is None:
        raise FormError("no resource type here takes a local folder")
    return picker


def _modes(picker: registry.ResourceType) -> tuple[str, ...]:
    field = picker.form_field("execution_mode")
    return field.choices if field else (IN_PLACE,)


def browser_context(request: Request, who: Viewer, project_id: str, path: str | None,
                    **extra: Any) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        project = svc.get_project(s, who.workspace_id, project_id)
        button = local_folder_button(request, s, who.workspace_id, svc.list_resources(s, project.id))
    if button is None:
        raise FormError("folders can be browsed only on the machine that runs the daemon")
    # A relative path is taken from $HOME, where the browser starts, not from the server's cwd.
    path = os.path.abspath(os.path.join(str(Path.home()), os.path.expanduser(path or "")))
    entries, more, unreadable = _subdirectories(path)
    picker = _picker()
    try:
        picker.check_folder(path)
        refusal = None
    except registry.PathRuleError as e:
        refusal = str(e)
    is_git = os.path.exists(os.path.join(path, ".git"))
    # Seed 001: a git folder on a machine that can isolate runs starts in worktree mode.
    mode = WORKTREE if is_git and button.worktree_capable else IN_PLACE
    parent = os.path.dirname(path)
    return {"viewer": who, "project": project, "button": button, "path": path, "entries": entries,
            "more": more, "unreadable": unreadable, "refusal": refusal, "is_git": is_git,
            "crumbs": _crumbs(path), "parent": parent if parent != path else None, "modes": _modes(picker),
            "mode": mode, "label": os.path.basename(path) or path, "error": None, **extra}


def _refuse_remote(request: Request) -> Response | None:
    if not is_local_request(request) or local_daemon_id() is None:
        return error_page(request, 403, "Local folders can be added only from a browser on the machine that "
                                        "runs the daemon (the page `predictorx up` opens there).")
    return None


@router.get("/projects/{project_id}/local-folders")
async def browse(request: Request, project_id: str, path: str | None = Query(default=None, max_length=4096),
                 who: Viewer = Depends(viewer)) -> Response:
    if (refused := _refuse_remote(request)) is not None:
        return refused
    try:
        context = await in_page_thread(browser_context, request, who, project_id, path)
    except FormError as e:
        return error_page(request, 403, str(e))
    return html("_folders.html", context)


@router.post("/projects/{project_id}/local-folders")
async def save(request: Request, project_id: str, form: Form = Depends(read_form),
               who: Viewer = Depends(viewer)) -> Response:
    if (refused := _refuse_remote(request)) is not None:
        return refused
    path = form.get("path")
    try:
        if not path or not os.path.isabs(path):
            raise FormError("choose a folder first")
        try:
            await in_page_thread(_picker().check_folder, path)
        except registry.PathRuleError as e:
            raise FormError(str(e)) from None
        picker = _picker()
        body = ResourceIn(resource_type=picker.name, label=form.optional("label"),
                          resource_ref=picker.folder_ref(os.path.abspath(path), local_daemon_id() or "",
                                                         form.get("execution_mode") or IN_PLACE))
        state = request.app.state.px
        await actions.add_resource(state, state.hub, in_page_thread, who.workspace_id, who.caller.user_id, project_id,
                                   body.model_dump())
    except FORM_ERRORS as e:
        context = await in_page_thread(browser_context, request, who, project_id, path or None,
                                          error=message_of(e), label=form.get("label"),
                                          mode=form.get("execution_mode") or "in_place")
        return html("_folders.html", context, status=status_of(e))
    # The dialog's form targets the browser; on success the panel is what changes.
    return await render_resources(request, who, project_id, headers={
        "HX-Retarget": "#resources", "HX-Reswap": "innerHTML", "HX-Trigger": "px-close-dialog"})
