"""The Agents page: the workspace's agents with what they run on, and creating, editing and
deleting them from the browser (issue 13 §2) — provider, runtime, model, instructions, command,
concurrency, the sandbox — through the same service calls as the API. The sandbox box starts
ticked (the default, issue 29) and says what an unticked agent can reach. The edit form always
sends the whole agent, so an unticked sandbox box turns the sandbox off.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ... import unconfined
from ...service import agents as svc
from ...service import runnability, usage_rollup
from ..models import AgentCreate, AgentUpdate
from .forms import FORM_ERRORS, Form, FormError, message_of, read_form, status_of
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, panel
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def agents_context(request: Request, who: Viewer, **extra: Any) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        agents = svc.list_agents(s, who.workspace_id)
        archived = svc.list_agents(s, who.workspace_id, archived=True)
        active = svc.active_run_counts(s, who.workspace_id)
        runs = svc.run_counts(s, who.workspace_id)
        runtimes = svc.runtimes_by_provider(s, who.workspace_id)
        month = usage_rollup.this_month_by_agent(s, who.workspace_id)  # what each cost this month (issue 27)
        mine = runnability.provider_states(s, who.workspace_id, who.caller.user_id)
        blockers = {a.id: runnability.agent_blocker(s, a) for a in agents}
    by_id = {rt.id: (rt, d) for rt, d in runtimes}
    rows = []
    for a in agents:
        rt, daemon = by_id.get(a.runtime_id or "", (None, None))
        rows.append({"agent": a, "active": active.get(a.id, 0), "runs": runs.get(a.id, 0), "month": month.get(a.id),
                     "command": shlex.join(a.command) if a.command else "",
                     "runs_on": f"{daemon.name} · {rt.provider}" if rt and daemon else "any daemon with " + a.provider,
                     "cannot_run": blockers.get(a.id)})
    choices = [{"id": rt.id, "provider": rt.provider,
                "label": f"{d.name} · {rt.provider}{' ' + rt.version if rt.version else ''}"} for rt, d in runtimes]
    return {"viewer": who, "section": "agents", "rows": rows, "providers": svc.PROVIDERS, "runtimes": choices,
            **_offered(mine),
            "unconfined_reach": unconfined.REACH,
            "archived": [{"agent": a, "runs": runs.get(a.id, 0)} for a in archived],
            "error": None, "error_for": None, "values": {}, **extra}


def _offered(mine: list[runnability.ProviderState]) -> dict[str, Any]:
    """The new-agent form's providers (issue 26 §2): once a person has a daemon, those none of
    their daemons has are disabled, with the reason and the way to get them; one whose daemons are
    all offline stays selectable and says so. Preselected: one a daemon of theirs runs now."""
    any_daemon = any(p.installed for p in mine)
    offered = [{"name": p.provider, "reason": p.reason(), "disabled": any_daemon and not p.installed,
                "note": "" if p.runnable else (" — its daemon is offline" if p.installed else
                                               " — not on your daemons" if any_daemon else "")} for p in mine]
    first = next((p.provider for p in mine if p.runnable), None) or next((p.provider for p in mine if p.installed), None)
    return {"offered": offered, "first_choice": first or "claude", "no_daemon_online": not any(p.runnable for p in mine)}


def _command(form: Form) -> list[str] | None:
    text = form.get("command")
    if not text:
        return None
    try:
        return shlex.split(text)
    except ValueError as e:
        raise FormError(f"the command line cannot be read ({e}); quote it as in a shell") from None


def _limit(form: Form) -> int:
    try:
        return int(form.get("max_concurrent_tasks") or "1")
    except ValueError:
        raise FormError("max parallel runs must be a whole number from 1 to 64") from None


def _hosts(form: Form) -> list[str]:
    """The allowed hosts' box: one per line (or separated by spaces or commas)."""
    return [h for h in form.get("allow_hosts").replace(",", " ").split() if h]


async def _answer(request: Request, who: Viewer, *, status: int = 200, **extra: Any) -> Response:
    context = await in_page_thread(agents_context, request, who, **extra)
    return panel(request, "_agents.html", context, page_url="/agents", status=status)


@router.get("/agents")
async def agents_page(request: Request, who: Viewer = Depends(viewer)) -> Response:
    return html("agents.html", await in_page_thread(agents_context, request, who))


@router.post("/agents")
async def create(request: Request, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    def work() -> None:
        body = AgentCreate(name=form.get("name"), provider=form.get("provider"), model=form.optional("model"),
                           instructions=form.get("instructions"), command=_command(form),
                           max_concurrent_tasks=_limit(form), runtime=form.optional("runtime"),
                           sandbox=form.get("sandbox") == "on", network=form.get("network") or "open",
                           allow_hosts=_hosts(form))
        with request.app.state.px.write() as s:
            svc.create_agent(s, who.workspace_id, owner_id=who.caller.user_id, address=who.caller.address,
                             **body.model_dump())
    try:
        await in_page_thread(work)
    except FORM_ERRORS as e:
        return await _answer(request, who, status=status_of(e), error=message_of(e), error_for="new",
                             values=form.values())
    return await _answer(request, who)


@router.post("/agents/{agent_id}")
async def edit(request: Request, agent_id: str, form: Form = Depends(read_form),
               who: Viewer = Depends(viewer)) -> Response:
    def work() -> None:
        body = AgentUpdate(name=form.get("name"), provider=form.get("provider"), model=form.optional("model"),
                           instructions=form.get("instructions"), command=_command(form),
                           max_concurrent_tasks=_limit(form), runtime=form.optional("runtime"),
                           sandbox=form.get("sandbox") == "on", network=form.get("network") or "open",
                           allow_hosts=_hosts(form))
        with request.app.state.px.write() as s:
            agent = svc.find_agent(s, who.workspace_id, agent_id)
            svc.update_agent(s, agent, actor_id=who.caller.user_id, address=who.caller.address,
                             **body.model_dump(exclude={"mcp_servers"}))  # (set through the API and CLI)
    try:
        await in_page_thread(work)
    except FORM_ERRORS as e:
        return await _answer(request, who, status=status_of(e), error=message_of(e), error_for=agent_id,
                             values=form.values())
    return await _answer(request, who)


def _remove(request: Request, who: Viewer, agent_id: str, action: Callable[..., Any]) -> None:
    with request.app.state.px.write() as s:
        action(s, svc.find_agent(s, who.workspace_id, agent_id), actor_id=who.caller.user_id,
               actor_role=who.caller.principal.role_in(who.workspace_id))


async def _removal(request: Request, who: Viewer, agent_id: str, action: Callable[..., Any]) -> Response:
    """Delete (only an agent that never ran), archive or restore; a refusal is shown atop the table."""
    try:
        await in_page_thread(_remove, request, who, agent_id, action)
    except FORM_ERRORS as e:
        return await _answer(request, who, status=status_of(e), error=message_of(e), error_for="delete")
    return await _answer(request, who)


@router.post("/agents/{agent_id}/delete")
async def delete(request: Request, agent_id: str, who: Viewer = Depends(viewer)) -> Response:
    return await _removal(request, who, agent_id, svc.delete_agent)


@router.post("/agents/{agent_id}/archive")
async def archive(request: Request, agent_id: str, who: Viewer = Depends(viewer)) -> Response:
    return await _removal(request, who, agent_id, svc.archive_agent)


@router.post("/agents/{agent_id}/restore")
async def restore(request: Request, agent_id: str, who: Viewer = Depends(viewer)) -> Response:
    return await _removal(request, who, agent_id, svc.restore_agent)
