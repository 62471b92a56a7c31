"""`predictorx prov qaqc`: re-check every recorded step against the policies and the *current*
diagrams, after the fact — the agentic pole's check (R-HAR-3, R-HAR-5).

Findings per step: `deny` / `unknown` (the policies today), `refused` (a strict policy stopped it
when it ran), `failed` (the engine overran its budget there: engine.py `Budget`), `not-eligible` (the step's lane is another role now, or the actor did not hold it),
`no-actor`, `node-not-in-model` (the process or node is gone), `source-moved` (the diagram's bytes
changed since the step ran). Beans (bean_rules.py): `override` (a person with the role changed a
bean outside the workflow's steps: recorded, reported), `outside-steps` (a bean the instance
governs was resolved or scrapped while it ran by no step and no recorded person — data from
before the rule, or a path around it; a change after the instance completed is not one). The
report is deterministic: identical input, identical bytes.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Any

from .library import Library
from .odrl import PERMIT, Request, evaluate

FINDINGS = ("deny", "refused", "failed", "unknown", "not-eligible", "no-actor", "node-not-in-model", "source-moved",
            "outside-steps", "override")
_SETTLED = {"resolved": "resolve", "scrapped": "scrap"}


def check_step(lib: Library, instance: dict[str, Any], st: dict[str, Any]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    where = f"{st['diagram']}#{st['node_id']}"

    def add(kind: str, detail: str) -> None:
        out.append({"finding": kind, "detail": detail})

    if st.get("kind") == "bean":
        _check_bean_row(lib, instance, st, add)
        return out
    if st.get("kind") in ("session", "exit", "stop"):  # a session answer; a declared exit; a person's stop
        _check_session_row(lib, instance, st, add)
        return out

    if st.get("status") == "refused":
        again = int(st.get("attempts") or 1)
        add("refused", f"a strict policy stopped it when it ran ({st.get('verdict')})"
                       + (f", {again} attempts" if again > 1 else ""))
    if st.get("status") == "failed":
        add("failed", st.get("reason") or "the engine could not advance the instance")
    if not st.get("actor_id"):
        add("no-actor", "the record names nobody who took the step")
    model = lib.model_of(st.get("process_id") or instance["process_id"])
    node = model.node(st["node_id"]) if model else None
    if node is None:
        add("node-not-in-model", f"{where} is not in the current diagrams")
        return out
    digest = lib.digests.get(model.diagram)
    if st.get("diagram_digest") and digest and st["diagram_digest"] != digest:
        add("source-moved", f"{model.diagram} changed since the step ran")
    roles = frozenset(st.get("actor_roles") or [])
    if node.role and (node.role != st.get("role") or (st.get("actor_id") and node.role not in roles)):
        add("not-eligible", f"{where} is for role {node.role}; it was taken as "
                            f"{st.get('role') or 'no role'} by a holder of {', '.join(sorted(roles)) or 'no role'}")
    policies = lib.policies_for(model, node)
    if policies:
        req = Request(st.get("actor_type") or "agent", st.get("actor_name") or "", roles,
                      "pass" if st["kind"] == "gate" else "complete", model.diagram, node.id, model.id, node.role)
        verdict = evaluate(policies, req)
        if verdict.value != PERMIT and st.get("status") != "refused":
            add(verdict.value, verdict.sentence())
    return out


def _check_session_row(lib: Library, instance: dict[str, Any], st: dict[str, Any], add) -> None:
    if not st.get("actor_id"):
        add("no-actor", "the record names nobody who answered or left the workflow")
    if st["kind"] != "exit":
        return
    model = lib.model_of(st.get("process_id") or instance["process_id"])
    xid = st["node_id"].removeprefix("exit:")
    if model is None or xid not in model.exits:
        add("node-not-in-model", f"{st['diagram']} declares no exit {xid!r} now")
    elif model.exits[xid][1] not in (st.get("actor_roles") or []):
        add("not-eligible", f"exit {xid!r} is for role {model.exits[xid][1]}; it was taken by a holder of "
                            f"{', '.join(sorted(st.get('actor_roles') or [])) or 'no role'}")


def _check_bean_row(lib: Library, instance: dict[str, Any], st: dict[str, Any], add) -> None:
    """A bean status change outside the steps (or the refused attempt at one)."""
    op = st["node_id"].removeprefix("bean:")
    who = f"{st.get('actor_type') or 'someone'} {st.get('actor_name') or ''}".strip()
    if st.get("status") == "refused":
        again = int(st.get("attempts") or 1)
        add("refused", f"{who} tried to {op} a bean outside the workflow's steps"
                       + (f", {again} attempts" if again > 1 else ""))
        return
    model = lib.model_of(st.get("process_id") or instance["process_id"])
    roles = model.people_roles(op) if model else set()
    held = set(st.get("actor_roles") or [])
    if st.get("actor_type") != "person" or (roles and (st.get("role") not in roles or st.get("role") not in held)):
        add("outside-steps", f"{who} changed a bean ({op}) outside the workflow's steps without a people role "
                             f"of it ({' or '.join(sorted(roles)) or 'any person'})")
    else:
        add("override", f"{who} (role {st.get('role') or 'none'}) did the bean's {op} outside the workflow's steps")


def _when(value: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if value else None
    except ValueError:
        return None


def check_beans(lib: Library, rec: dict[str, Any]) -> list[dict[str, Any]]:
    """Each settled bean of the instance against its steps: which step, or which recorded person
    with the role, resolved or scrapped it? Neither, while the instance ran: `outside-steps`."""
    inst, out = rec["instance"], []
    model = lib.model_of(inst["process_id"])
    done = [st for st in rec["steps"] if st.get("status", "done") == "done"]
    ended = _when(inst.get("updated_at")) if inst.get("status") == "completed" else None
    for bean in rec.get("beans") or []:
        op = _SETTLED.get(bean["status"])
        if op is None:
            continue
        changed = _when(bean.get("updated_at"))
        if ended and changed and changed > ended:
            continue  # settled after its workflow completed: the bean was free again
        if any((st.get("produced") or {}).get("bean") == bean["id"] and _does(model, st, op) for st in done):
            continue
        by = [c.get("by") for c in bean.get("changes") or [] if c.get("op") == op]
        out.append({"seq": None, "node": f"bean {bean['title']}", "actor": by[-1] if by else None,
                    "finding": "outside-steps",
                    "detail": f"bean {bean['title']!r} is {bean['status']}, but no step of this workflow and no "
                              f"person with its role did the {op}" + (f" (done by {by[-1]})" if by else
                                                                       " (the record does not say who)")})
    return out


def _does(model, st: dict[str, Any], op: str) -> bool:
    if st.get("kind") == "bean":
        return st["node_id"] == f"bean:{op}"
    node = model.node(st["node_id"]) if model else None
    return node is not None and node.bean_op == op


def report(lib: Library, records: list[dict[str, Any]]) -> dict[str, Any]:
    """`records`: [{"instance": {...}, "steps": [...], "beans": [...]}] (beans: optional)."""
    rows = []
    counts: Counter[str] = Counter()
    total = 0
    for rec in sorted(records, key=lambda r: r["instance"]["id"]):
        inst = rec["instance"]
        where = {"instance": inst["id"], "issue": inst.get("issue_number"), "process": inst["process_id"]}
        for st in sorted(rec["steps"], key=lambda s: s["seq"]):
            total += 1
            for f in check_step(lib, inst, st):
                counts[f["finding"]] += 1
                rows.append({**where, "seq": st["seq"], "node": st["node_id"], "actor": st.get("actor_name"), **f})
        for f in check_beans(lib, rec):
            counts[f["finding"]] += 1
            rows.append({**where, **f})
    return {"steps": total, "instances": len(records), "findings": rows,
            "counts": {k: counts[k] for k in FINDINGS if counts[k]}}


def to_json(rep: dict[str, Any]) -> str:
    return json.dumps(rep, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def _cell(value: Any) -> str:
    return str("" if value is None else value).replace("|", "\\|").replace("\n", " ")


def to_markdown(rep: dict[str, Any]) -> str:
    lines = ["# PROV QA/QC report", "",
             f"{rep['steps']} recorded steps in {rep['instances']} instances; "
             f"{len(rep['findings'])} findings.", ""]
    if rep["counts"]:
        lines += ["| finding | count |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in rep["counts"].items()] + [""]
        lines += ["| issue | process | step | node | actor | finding | detail |", "|---|---|---|---|---|---|---|"]
        for f in rep["findings"]:
            lines.append("| " + " | ".join(_cell(f[k]) for k in ("issue", "process", "seq", "node", "actor",
                                                                   "finding", "detail")) + " |")
    else:
        lines.append("No findings: every recorded step is permitted by the policies and fits the current diagrams.")
    return "\n".join(lines) + "\n"
