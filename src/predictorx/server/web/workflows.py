"""The issue page's Workflows panel (R-HAR-3…7 on the web): each instance with its current
steps drawn on the diagram, the history with verdicts, the interaction state, beans and the last
handoff. A person takes the enabled steps their roles allow from the panel as well as from the CLI
(`predictorx workflow complete`), through the same use case as the API; agents use MCP."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from markupsafe import Markup
from pydantic import ValidationError

from ...service import beans as bean_svc
from ...service import classification
from ...service.classification_actions import judge_as
from ...service import issues as issue_svc
from ...service import workflow_actions as actions
from ...service import workflow_handoff as handoff
from ...service import workflow_instances as instances
from ...service import workflow_interaction as interaction
from ...service import workflow_offers as offered
from ...workflows import diagram
from ...workflows.engine import Actor
from ...workflows.classify import CATEGORIES, PLAIN_LABELS
from ...workflows.library import active_library
from ...workflows.loader import DiagramError
from ..models import StepIn
from .forms import FORM_ERRORS, Form, FormError, message_of, read_form, status_of
from .pageroute import PageRoute
from .pagework import in_page_thread
from .render import html, is_htmx, panel
from .session import Viewer, viewer

router = APIRouter(route_class=PageRoute, include_in_schema=False)


TASKS_CHANGED = {"HX-Trigger": "px-tasks-changed"}
HISTORY_SHOWN = 100  # the latest steps of an instance; a looping one has tens of thousands  # a step taken may have queued the agent's next task


def workflows_context(request: Request, who: Viewer, ref: str, *, error: str | None = None,
                      error_for: str | None = None, values: dict[str, str] | None = None) -> dict[str, Any]:
    with request.app.state.px.read() as s:
        issue = issue_svc.get_issue(s, who.workspace_id, ref)
        try:
            lib, problem = active_library(), None
        except DiagramError as e:
            lib, problem = None, str(e)
        roles = instances.actor_roles(s, lib, issue, "person", who.caller.user_id) if lib else frozenset()
        me = Actor("person", who.caller.user_id or "", who.user_name, roles)
        classified = [classification.as_dict(c) for c in classification.list_for(s, issue)]
        items: list[dict[str, Any]] = []
        for inst in instances.list_instances(s, issue):
            hist = instances.recent_history(s, inst, HISTORY_SHOWN)
            enabled = instances.enabled_steps(lib, inst) if lib and inst.status == "running" else []
            model = lib.model_of(inst.process_id) if lib else None
            drawing = Markup(diagram.svg(model, {e["node"] for e in enabled},
                                         instances.done_nodes(s, inst))) if model else None
            items.append({"inst": inst, "enabled": enabled, "history": hist, "svg": drawing,
                          "name": model.name if model else inst.process_id,
                          "why_not": offered.offers(s, lib, issue, inst, me, enabled) if lib else {},
                          "started_by": next((c for c in classified if c["instance_id"] == inst.id), None),
                          "earlier": max(0, inst.step_count - len(hist))})
        states = interaction.states_of(s, issue)
        handoffs = handoff.for_issue(s, issue.id, limit=1)
        on_issue = {it["inst"].process_id for it in items}
        running = {it["inst"].process_id for it in items if it["inst"].status == "running"}
        if error_for and error_for.startswith("stop:") and error_for[5:] not in running:
            error_for = None  # no stop form to show it next to: atop the panel
        startable = sorted(((m.id, m.name or m.id) for m in lib.processes.values() if m.id not in on_issue),
                           key=lambda p: p[1].lower()) if lib else []
        return {"issue": issue, "items": items, "problem": problem, "my_roles": roles, "startable": startable,
                "process_names": {m.id: m.name or m.id for m in lib.processes.values()} if lib else {},
                "error": error, "error_for": error_for, "values": values or {},
                "classifications": classified,
                "pending_classifications": classification.pending_questions(s, issue.id),
                "plain_category": PLAIN_LABELS, "categories": CATEGORIES,
                "states": states, "beans": bean_svc.list_beans(s, issue),
                "handoff": handoffs[0].content if handoffs else None}


@router.get("/issues/{ref}/workflows")
async def workflows_panel(request: Request, ref: str, who: Viewer = Depends(viewer)) -> Response:
    context = await in_page_thread(workflows_context, request, who, ref)
    if is_htmx(request):
        return html("_workflows.html", context)
    return html("standalone.html", {**context, "viewer": who, "section": "issues",
                                    "panel_template": "_workflows.html", "back_url": f"/issues/{ref}"})


def _facts(text: str) -> dict[str, Any]:
    """`name = value` per line (what a decision gate reads): numbers and true/false as such."""
    facts: dict[str, Any] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        name, sep, value = line.partition("=")
        if not sep or not name.strip():
            raise FormError(f"facts line {n} is not `name = value`: {line.strip()[:80]!r}")
        value = value.strip()
        lowered = value.lower()
        if lowered in ("true", "false"):
            facts[name.strip()] = lowered == "true"
            continue
        try:
            facts[name.strip()] = int(value)
        except ValueError:
            try:
                facts[name.strip()] = float(value)
            except ValueError:
                facts[name.strip()] = value
    return facts


def _step_in(form: Form) -> StepIn:
    version = form.get("if_version")
    try:
        return StepIn(step=form.get("step"), outcome=form.optional("outcome"), reason=form.optional("reason"),
                      facts=_facts(form.get("facts")),
                      produced={k.removeprefix("produced."): v.strip() for k, v in form.values().items()
                                if k.startswith("produced.") and v.strip()},
                      if_version=int(version) if version.isdigit() else None)
    except ValidationError as e:
        raise FormError(message_of(e)) from None


@router.post("/issues/{ref}/workflows/{process}/steps")
async def take_step(request: Request, ref: str, process: str, form: Form = Depends(read_form),
                    who: Viewer = Depends(viewer)) -> Response:
    """A person completes an enabled step (or passes a gate) from the panel: the API's own use
    case, so the engine's refusals, the strict policies and the record are the same."""
    try:
        body = _step_in(form)
        await in_page_thread(actions.complete, request.app.state.px, who.caller.principal, who.caller.workspace_id,
                             ref, process, body.completion())
    except FORM_ERRORS as e:
        context = await in_page_thread(workflows_context, request, who, ref, error=message_of(e),
                                          error_for=f"{process}#{form.get('step')}", values=form.values())
        return panel(request, "_workflows.html", context, page_url=f"/issues/{ref}", status=status_of(e))
    context = await in_page_thread(workflows_context, request, who, ref)
    return panel(request, "_workflows.html", context, page_url=f"/issues/{ref}", headers=TASKS_CHANGED)


async def _after(request: Request, who: Viewer, ref: str, action: Any, where: str, form: Form) -> Response:
    """Run a panel action; the panel again, with the refusal next to the control that asked."""
    try:
        await in_page_thread(action)
    except FORM_ERRORS as e:
        context = await in_page_thread(workflows_context, request, who, ref, error=message_of(e), error_for=where,
                                       values=form.values())
        return panel(request, "_workflows.html", context, page_url=f"/issues/{ref}", status=status_of(e))
    context = await in_page_thread(workflows_context, request, who, ref)
    return panel(request, "_workflows.html", context, page_url=f"/issues/{ref}", headers=TASKS_CHANGED)


@router.post("/issues/{ref}/workflows")
async def start(request: Request, ref: str, form: Form = Depends(read_form), who: Viewer = Depends(viewer)) -> Response:
    """A person starts a workflow of the library on the issue: the API's own use case."""
    def action() -> None:
        process = form.get("process")
        if not process:
            raise FormError("choose a workflow to start")
        actions.start(request.app.state.px, who.caller.principal, who.caller.workspace_id, ref, process)
    return await _after(request, who, ref, action, "start", form)


@router.post("/issues/{ref}/workflows/{process}/stop")
async def stop(request: Request, ref: str, process: str, form: Form = Depends(read_form),
               who: Viewer = Depends(viewer)) -> Response:
    """A person stops a running workflow, with a reason: the API's own use case."""
    def action() -> None:
        actions.stop(request.app.state.px, who.caller.principal, who.caller.workspace_id, ref, process,
                     form.get("reason"))
    return await _after(request, who, ref, action, f"stop:{process}", form)


@router.post("/issues/{ref}/workflow-state/answer")
async def answer_switch(request: Request, ref: str, form: Form = Depends(read_form),
                        who: Viewer = Depends(viewer)) -> Response:
    """Seed scenario 3 from the panel: the person answers "suspend the content work, or file a
    bean?" — the API's own use case (workflow_actions.answer_switch)."""
    try:
        await in_page_thread(actions.answer_switch, request.app.state.px, who.caller.principal,
                             who.caller.workspace_id, ref, form.optional("agent"), form.get("answer"),
                             form.optional("reason"))
    except FORM_ERRORS as e:
        context = await in_page_thread(workflows_context, request, who, ref, error=message_of(e),
                                       values=form.values())
        return panel(request, "_workflows.html", context, page_url=f"/issues/{ref}", status=status_of(e))
    context = await in_page_thread(workflows_context, request, who, ref)
    return panel(request, "_workflows.html", context, page_url=f"/issues/{ref}", headers=TASKS_CHANGED)


@router.post("/issues/{ref}/classifications")
async def judge_classification(request: Request, ref: str, form: Form = Depends(read_form),
                               who: Viewer = Depends(viewer)) -> Response:
    """A person answers a pending classification from the panel: the API's own use case."""
    try:
        await in_page_thread(judge_as, request.app.state.px, who.caller.principal, who.caller.workspace_id, ref,
                             category=form.get("category"), reason=form.get("reason"), folio=form.optional("folio"),
                             classification=form.optional("classification"))
    except FORM_ERRORS as e:
        context = await in_page_thread(workflows_context, request, who, ref, error=message_of(e),
                                       error_for="classification", values=form.values())
        return panel(request, "_workflows.html", context, page_url=f"/issues/{ref}", status=status_of(e))
    context = await in_page_thread(workflows_context, request, who, ref)
    return panel(request, "_workflows.html", context, page_url=f"/issues/{ref}", headers=TASKS_CHANGED)
