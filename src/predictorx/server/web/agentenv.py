"""An agent's settings → Variables and secrets (issue 28 §2): the same use cases as
`/api/agents/{ref}/env` and `/api/agents/{ref}/grants` (service/agentenv.py). A value typed into
the form is never sent back to the browser, not even with an error."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ...service import agentenv
from ...service import agents as agent_svc
from ..models import EnvVarIn
from .forms import FORM_ERRORS, Form, message_of, read_form, status_of
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, redirect
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def _role(who: Viewer) -> str | None:
    return who.caller.principal.role_in(who.workspace_id)


def env_context(request: Request, who: Viewer, agent_id: str, **extra: Any) -> dict[str, Any]:
    role = _role(who)
    with request.app.state.px.read() as s:
        agent = agent_svc.find_agent(s, who.workspace_id, agent_id)
        rows = agentenv.list_for_agent(s, agent, actor_id=who.caller.user_id, role=role)
        managing = role in ("owner", "admin")
        workspace = [v["name"] for v in agentenv.list_workspace(s, who.workspace_id, role=role)
                     if v["grantable"]] if managing else []
        return {"viewer": who, "section": "agents", "agent": {"id": agent.id, "name": agent.name},
                "rows": rows, "owns": agent.owner_id == who.caller.user_id, "managing": managing,
                "grantable": [n for n in workspace if n not in {r["name"] for r in rows}],
                "error": None, "notice": None, "name_value": "", **extra}


async def _page(request: Request, who: Viewer, agent_id: str, status: int = 200, **extra: Any) -> Response:
    return html("agent_env.html", await in_page_thread(env_context, request, who, agent_id, **extra), status)


@router.get("/agents/{agent_id}/env")
async def env_page(request: Request, agent_id: str, who: Viewer = Depends(viewer)) -> Response:
    return await _page(request, who, agent_id)


async def _act(request: Request, who: Viewer, agent_id: str, work: Any, name_value: str = "") -> Response:
    try:
        await in_page_thread(work)
    except FORM_ERRORS as e:
        return await _page(request, who, agent_id, status=status_of(e), error=message_of(e), name_value=name_value)
    return redirect(request, f"/agents/{agent_id}/env")


@router.post("/agents/{agent_id}/env")
async def env_set(request: Request, agent_id: str, form: Form = Depends(read_form),
                  who: Viewer = Depends(viewer)) -> Response:
    def work() -> None:
        body = EnvVarIn(value=form.get("value"), secret=form.get("secret") == "on")
        with request.app.state.px.write() as s:
            agent = agent_svc.find_agent(s, who.workspace_id, agent_id)
            agentenv.set_for_agent(s, agent, actor_id=who.caller.user_id, name=form.get("name"), value=body.value,
                                   secret=body.secret, address=who.caller.address)
    return await _act(request, who, agent_id, work, name_value=form.get("name"))


@router.post("/agents/{agent_id}/env/{name}/remove")
async def env_unset(request: Request, agent_id: str, name: str, who: Viewer = Depends(viewer)) -> Response:
    def work() -> None:
        with request.app.state.px.write() as s:
            agent = agent_svc.find_agent(s, who.workspace_id, agent_id)
            agentenv.unset_for_agent(s, agent, actor_id=who.caller.user_id, role=_role(who), name=name,
                                     address=who.caller.address)
    return await _act(request, who, agent_id, work)


@router.post("/agents/{agent_id}/grants")
async def grant(request: Request, agent_id: str, form: Form = Depends(read_form),
                who: Viewer = Depends(viewer)) -> Response:
    def work() -> None:
        with request.app.state.px.write() as s:
            agent = agent_svc.find_agent(s, who.workspace_id, agent_id)
            agentenv.grant(s, agent, actor_id=who.caller.user_id, role=_role(who), name=form.get("name"),
                           address=who.caller.address)
    return await _act(request, who, agent_id, work)


@router.post("/agents/{agent_id}/grants/{name}/remove")
async def revoke(request: Request, agent_id: str, name: str, who: Viewer = Depends(viewer)) -> Response:
    def work() -> None:
        with request.app.state.px.write() as s:
            agent = agent_svc.find_agent(s, who.workspace_id, agent_id)
            agentenv.revoke(s, agent, actor_id=who.caller.user_id, role=_role(who), name=name,
                            address=who.caller.address)
    return await _act(request, who, agent_id, work)
