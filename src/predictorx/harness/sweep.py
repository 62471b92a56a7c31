"""The task-start sweep (R-HAR-7): what an agent must know before it does anything — the beans
of its issue, the open workflow instances with their enabled steps (who may take them, their
skills, what to produce), its suspended stack, the last handoff on the issue, and sibling agent
branches. The daemon adds how far the default branch moved (a git fact only it can see).

One query per table, no per-bean work: the bench asks for well under a second with 200 beans."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.harness_schema import Bean, InteractionState, TaskHandoff, WorkflowInstance
from ..store.schema import Agent, Issue, Task
from .engine import Run
from .library import Library

MAX_BEANS_SHOWN = 50


def sweep(session: Session, lib: Library, task: Task) -> dict[str, Any]:
    issue = session.get(Issue, task.issue_id)
    beans = list(session.scalars(select(Bean).where(Bean.issue_id == issue.id).order_by(Bean.created_at)))
    counts: dict[str, int] = {}
    for b in beans:
        counts[b.status] = counts.get(b.status, 0) + 1
    open_beans = [b for b in beans if b.status in ("created", "in-progress")]
    instances = []
    for inst in session.scalars(select(WorkflowInstance).where(WorkflowInstance.issue_id == issue.id)
                                .order_by(WorkflowInstance.created_at)):
        item = {"process": inst.process_id, "status": inst.status, "version": inst.version, "enabled": []}
        if inst.status == "running" and inst.process_id in lib.processes:
            item["enabled"] = [s.as_dict() for s in Run.load(lib, inst.process_id, inst.state, inst.facts).enabled()]
        instances.append(item)
    state = session.scalar(select(InteractionState).where(InteractionState.issue_id == issue.id,
                                                          InteractionState.agent_id == task.agent_id))
    active = session.get(WorkflowInstance, state.active_instance_id) if state and state.active_instance_id else None
    last = session.scalar(select(TaskHandoff).join(Task, Task.id == TaskHandoff.task_id)
                          .where(TaskHandoff.issue_id == issue.id, TaskHandoff.task_id != task.id)
                          .order_by(Task.created_at.desc()).limit(1))
    siblings = []
    for t, name in session.execute(select(Task, Agent.name).join(Agent, Agent.id == Task.agent_id)
                                   .where(Task.issue_id == issue.id, Task.id != task.id,
                                          Task.branch_name.is_not(None), Task.branch_name != "")
                                   .order_by(Task.created_at)):
        siblings.append({"task": t.id, "agent": name, "branch": t.branch_name, "status": t.status})
    return {
        "issue": {"number": issue.number, "title": issue.title, "status": issue.status},
        "beans": {"counts": counts, "open": [{"id": b.id, "title": b.title, "status": b.status, "etag": b.version}
                                             for b in open_beans[:MAX_BEANS_SHOWN]],
                  "open_total": len(open_beans)},
        "instances": instances,
        "interaction": {"state": state.state if state else "idle",
                        "active": active.process_id if active else None,
                        "stack": list(reversed(state.stack)) if state else []},
        "last_handoff": last.content if last else None,
        "sibling_branches": siblings,
    }


def render(s: dict[str, Any], drift: str | None = None) -> str:
    """The sweep as the Markdown section the agent reads in its prompt."""
    out = ["## Session start (Predictor X harness)", ""]
    inter = s["interaction"]
    out.append(f"Interaction state: **{inter['state']}**" + (f", active workflow `{inter['active']}`"
                                                              if inter["active"] else ""))
    for f in inter["stack"]:
        out.append(f"- suspended: `{f['process']}` at {', '.join(f['activity']) or '-'} (resume pops the latest)")
    for inst in s["instances"]:
        out.append(f"\nWorkflow `{inst['process']}` — {inst['status']} (version {inst['version']})")
        for e in inst["enabled"]:
            what = (f"gate ({e['gate'] or 'judgement'}; outcomes: {', '.join(e['outcomes'])})"
                    if e["kind"] == "gate" else "step")
            extra = []
            if e["skills"]:
                extra.append("skills: " + ", ".join(e["skills"]))
            if e["capture"]:
                extra.append("produce: " + ", ".join(e["capture"]))
            if e["bean_op"]:
                extra.append(f"bean: {e['bean_op']}")
            out.append(f"- enabled {what} `{e['node']}` “{e['name']}” for role {e['role'] or 'any'}"
                       f" [{e['enforcement']}]" + (f" — {'; '.join(extra)}" if extra else ""))
    b = s["beans"]
    out.append(f"\nBeans: {', '.join(f'{k} {v}' for k, v in sorted(b['counts'].items())) or 'none'}")
    for bean in b["open"]:
        out.append(f"- [{bean['status']}] {bean['title']} (etag {bean['etag']})")
    if b["open_total"] > len(b["open"]):
        out.append(f"- … {b['open_total'] - len(b['open'])} more (`predictorx bean list {s['issue']['number']}`)")
    if drift:
        out.append(f"\nDefault branch: {drift}")
    if s["sibling_branches"]:
        out.append("\nAgent branches on this issue: " + ", ".join(
            f"{x['branch']} ({x['agent']}, {x['status']})" for x in s["sibling_branches"]))
    h = s["last_handoff"]
    if h:
        out += ["", "### Handoff from the previous task (start exactly here)",
                f"- done: {h.get('done') or '-'}", f"- branch: {h.get('branch') or '-'}",
                f"- commits: {', '.join(h.get('commits') or []) or '-'}",
                f"- beans touched: {', '.join(x['title'] for x in h.get('beans') or []) or '-'}",
                f"- workflow position: {h.get('position_text') or '-'}",
                f"- open questions: {'; '.join(h.get('open_questions') or []) or '-'}",
                f"- next step: {h.get('next_step') or '-'}"]
    out += ["", "Drive the workflow with the `predictorx` MCP tools (or `predictorx workflow …`): a step is "
            "refused unless it is enabled and yours; decisions take facts, judgements a reason. "
            "Before you stop, write the handoff (tool `handoff_write`). Never close the issue."]
    return "\n".join(out) + "\n"
