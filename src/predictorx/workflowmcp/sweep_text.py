"""The task-start sweep (R-HAR-7) as the Markdown section the agent reads in its prompt.

Pure: it turns the sweep's JSON (GET /api/tasks/{id}/harness/sweep, built by service/workflow_sweep.py)
into text, so the daemon renders it without importing anything that reaches the database."""

from __future__ import annotations

from typing import Any


def _pending_classifications(rows: list[dict[str, Any]]) -> list[str]:
    """A classification the table did not decide: its question, first thing the agent answers."""
    if not rows:
        return []
    out = ["", "### A request waits for your judgement (no workflow was started for it)"]
    for c in rows:
        options = ", ".join(c.get("candidates") or []) or "any of the eight categories"
        out.append(f"- {c['question']} (choose from: {options}; classification `{c['id']}`)")
    out.append("Answer it before other work: ask the person if you cannot tell, then record the judgement with "
               "the MCP tool `classification_judge` (category, reason; content authoring also names the folio, "
               "paper or document; `classification` the id above) — it starts the workflow the category selects.")
    return out


def render(s: dict[str, Any], drift: str | None = None) -> str:
    """The sweep as the Markdown section the agent reads in its prompt."""
    out = ["## Session start (Predictor X harness)", ""]
    inter = s["interaction"]
    out.append(f"Interaction state: **{inter['state']}**" + (f", active workflow `{inter['active']}`"
                                                              if inter["active"] else ""))
    for f in inter["stack"]:
        out.append(f"- suspended: `{f['process']}` at {', '.join(f['activity']) or '-'} (resume pops the latest)")
    if inter.get("pending"):
        out.append(f"- waiting for the person: {inter['pending']['question']} Ask them in a comment; do not "
                   "suspend the content work yourself.")
    for inst in s["instances"]:
        out.append(f"\nWorkflow `{inst['process']}` — {inst['status']} (version {inst['version']})"
                   + (" — your active workflow" if inst.get("active") else "")
                   + (f" — not yours now: {inst['blocked']}" if inst.get("blocked") else ""))
        for e in inst["enabled"]:
            what = (f"gate ({e['gate'] or 'judgement'}; outcomes: {', '.join(e['outcomes'])})"
                    if e["kind"] == "gate" else "step")
            extra = []
            if e["skills"]:
                extra.append("skills: " + ", ".join(e["skills"]))
            if e["capture"]:
                extra.append("produce: " + ", ".join(e["capture"]))
            if e.get("commit_boundary"):
                extra.append("commit boundary: the commit must be one your run delivered — commit on the task's "
                              "branch and end the run; the next task completes the step with that commit"
                              + (" (delivered so far, newest first: " + ", ".join(d["commit"][:12] for d in
                                                                                 e["delivered"]) + ")"
                                 if e.get("delivered") else ""))
            if e["bean_op"]:
                extra.append(f"bean: {e['bean_op']}")
            if e.get("facts"):
                extra.append("reads " + ", ".join([*(f"{n} (computed by Predictor X: never pass it)" for n in
                                                    e["facts"]["system"]),
                                                  *(f"{n} (pass it with this pass)" for n in e["facts"]["asserted"])]))
            out.append(f"- enabled {what} `{e['node']}` “{e['name']}” for role {e['role'] or 'any'}"
                       f" [{e['enforcement']}]" + (f" — {'; '.join(extra)}" if extra else ""))
    b = s["beans"]
    out.append(f"\nBeans: {', '.join(f'{k} {v}' for k, v in sorted(b['counts'].items())) or 'none'}")
    for bean in b["open"]:
        held = (f"; workflow {bean['workflow']} holds it: its steps change its status"
                if bean.get("workflow") else "")
        out.append(f"- [{bean['status']}] {bean['title']} (etag {bean['etag']}{held})")
    if b["open_total"] > len(b["open"]):
        out.append(f"- … {b['open_total'] - len(b['open'])} more (`predictorx bean list {s['issue']['number']}`)")
    if drift:
        out.append(f"\nDefault branch: {drift}")
    if s["sibling_branches"]:
        out.append("\nAgent branches on this issue: " + ", ".join(
            f"{x['branch']} ({x['agent']}, {x['status']})" for x in s["sibling_branches"]))
    out += _pending_classifications(s.get("pending_classifications") or [])
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
            "Start every reply with where you are: the bean you are on and what is next. "
            "Before you stop, write the handoff (tool `handoff_write`). Never close the issue."]
    return "\n".join(out) + "\n"
