"""The Resources panel of a project page: list, add, edit label and mode, remove (R-WEB-1).

Each resource is drawn by its type's own `render_html`, and types without a form of their own
get the generic one (a JSON payload), so a new resource type needs no web code (R-RES-1). Every
change goes through the API's own use cases (service/project_actions.py), so the page applies
exactly the API's rules:
validation, the daemon's path check and the 409 on a second local folder per machine.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ... import resources as registry
from ...service import projects as svc
from ...service import serialize
from ..models import ResourceIn, ResourcePatch
from ...service import project_actions as actions
from .forms import FORM_ERRORS, Form, json_object, message_of, read_form, status_of
from .machine import local_folder_button
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import panel, pretty
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)
TEMPLATE = "_resources.html"


def resources_context(request: Request, viewer: Viewer, project_id: str, **extra: Any) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        project = svc.get_project(s, viewer.workspace_id, project_id)
        rows = svc.list_resources(s, project.id)
        button = local_folder_button(request, s, viewer.workspace_id, rows)
        machines = svc.resource_machines(s, viewer.workspace_id, rows)
    return {"viewer": viewer, "project": project, "resources": rows, "local_button": button, "machines": machines,
            "known_types": registry.known_types(), "choices": _choices(rows),
            "add_forms": registry.web_forms(),
            "add_ids": [f"add_{t.web_form.id}" for t in registry.web_forms() if t.web_form] + ["add_other"],
            "error": None, "error_for": None, "values": {}, **extra}


def _choices(rows: list[Any]) -> dict[str, list[registry.Field]]:
    """Per row, the fields its type offers a fixed list for (a select in its edit form)."""
    out: dict[str, list[registry.Field]] = {}
    for r in rows:
        try:
            fields = registry.get(r.resource_type).form_fields
        except registry.ResourceError:  # a type no longer registered: the JSON payload only
            continue
        out[r.id] = [f for f in fields if f.choices and f.key in (r.resource_ref or {})]
    return out


async def render_resources(request: Request, viewer: Viewer, project_id: str, *, status: int = 200,
                           headers: dict[str, str] | None = None, **extra: Any) -> Response:
    context = await in_page_thread(resources_context, request, viewer, project_id, **extra)
    return panel(request, TEMPLATE, context, page_url=f"/projects/{project_id}", status=status, headers=headers)


@router.get("/projects/{project_id}/resources")
async def show(request: Request, project_id: str, who: Viewer = Depends(viewer)) -> Response:
    return await render_resources(request, who, project_id)


def _new_resource(form: Form) -> ResourceIn:
    typed = registry.by_web_form(form.get("form") or "")
    if typed is not None:  # a type's own form: its fields, those filled in
        ref = {f.key: form.get(f.key) for f in typed.form_fields if form.get(f.key)}
        return ResourceIn(resource_type=typed.name, resource_ref=ref, label=form.optional("label"))
    return ResourceIn(resource_type=form.get("resource_type"), resource_ref=json_object(form.get("payload")),
                      label=form.optional("label"))


@router.post("/projects/{project_id}/resources")
async def add(request: Request, project_id: str, form: Form = Depends(read_form),
              who: Viewer = Depends(viewer)) -> Response:
    typed = registry.by_web_form(form.get("form") or "")
    which = f"add_{typed.web_form.id}" if typed is not None and typed.web_form else "add_other"
    try:
        state = request.app.state.px
        await actions.add_resource(state, state.hub, in_page_thread, who.workspace_id, who.caller.user_id, project_id,
                                   _new_resource(form).model_dump())
    except FORM_ERRORS as e:
        return await render_resources(request, who, project_id, status=status_of(e), error=message_of(e),
                                      error_for=which, values=form.values())
    return await render_resources(request, who, project_id)


def _ref_patch(current: dict[str, Any], form: Form, choice_keys: tuple[str, ...] = ()) -> dict[str, Any]:
    """What changed between the stored payload and the form: a key left out is cleared (null)."""
    patch: dict[str, Any] = {}
    if form.get("payload") and form.get("payload") != pretty(current):
        edited = json_object(form.get("payload"))
        patch = {k: v for k, v in edited.items() if current.get(k) != v}
        patch.update({k: None for k in current if k not in edited})
    for key in choice_keys:
        chosen = form.get(key)
        if chosen and chosen != current.get(key):
            patch[key] = chosen
    return patch


def _choice_keys(resource_type: str) -> tuple[str, ...]:
    try:
        return tuple(f.key for f in registry.get(resource_type).form_fields if f.choices)
    except registry.ResourceError:
        return ()


def _resource(state: Any, who: Viewer, project_id: str, resource_id: str) -> dict[str, Any]:
    with state.read() as s:
        return serialize.resource(svc.get_resource(s, svc.get_project(s, who.workspace_id, project_id), resource_id))


@router.post("/projects/{project_id}/resources/{resource_id}")
async def edit(request: Request, project_id: str, resource_id: str, form: Form = Depends(read_form),
               who: Viewer = Depends(viewer)) -> Response:
    state = request.app.state.px
    try:
        current = await in_page_thread(_resource, state, who, project_id, resource_id)
        ref_patch = _ref_patch(current["resource_ref"], form, _choice_keys(current["resource_type"]))
        patch = ResourcePatch(label=form.optional("label"), **({"resource_ref": ref_patch} if ref_patch else {}))
        await actions.update_resource(state, state.hub, in_page_thread, who.workspace_id, who.caller.user_id,
                                      project_id, resource_id, patch.model_dump(exclude_unset=True))
    except FORM_ERRORS as e:
        return await render_resources(request, who, project_id, status=status_of(e), error=message_of(e),
                                      error_for=resource_id, values=form.values())
    return await render_resources(request, who, project_id)


@router.post("/projects/{project_id}/resources/{resource_id}/remove")
async def remove(request: Request, project_id: str, resource_id: str, who: Viewer = Depends(viewer)) -> Response:
    try:
        await in_page_thread(actions.remove_resource, request.app.state.px, who.workspace_id, project_id, resource_id)
    except FORM_ERRORS as e:
        return await render_resources(request, who, project_id, status=status_of(e), error=message_of(e),
                                      error_for="remove")
    return await render_resources(request, who, project_id)
