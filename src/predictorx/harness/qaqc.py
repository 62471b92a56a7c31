"""`predictorx prov qaqc`: re-check every recorded step against the policies and the *current*
diagrams, after the fact — the agentic pole's check (R-HAR-3, R-HAR-5).

Findings per step: `deny` / `unknown` (the policies today), `refused` (a strict policy stopped it
when it ran), `not-eligible` (the step's lane is another role now, or the actor did not hold it),
`no-actor`, `node-not-in-model` (the process or node is gone), `source-moved` (the diagram's bytes
changed since the step ran). The report is deterministic: identical input, identical bytes.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from .library import Library
from .odrl import PERMIT, Request, evaluate

FINDINGS = ("deny", "refused", "unknown", "not-eligible", "no-actor", "node-not-in-model", "source-moved")


def check_step(lib: Library, instance: dict[str, Any], st: dict[str, Any]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    where = f"{st['diagram']}#{st['node_id']}"

    def add(kind: str, detail: str) -> None:
        out.append({"finding": kind, "detail": detail})

    if st.get("status") == "refused":
        again = int(st.get("attempts") or 1)
        add("refused", f"a strict policy stopped it when it ran ({st.get('verdict')})"
                       + (f", {again} attempts" if again > 1 else ""))
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


def report(lib: Library, records: list[dict[str, Any]]) -> dict[str, Any]:
    """`records`: [{"instance": {...}, "steps": [...]}]."""
    rows = []
    counts: Counter[str] = Counter()
    total = 0
    for rec in sorted(records, key=lambda r: r["instance"]["id"]):
        inst = rec["instance"]
        for st in sorted(rec["steps"], key=lambda s: s["seq"]):
            total += 1
            for f in check_step(lib, inst, st):
                counts[f["finding"]] += 1
                rows.append({"instance": inst["id"], "issue": inst.get("issue_number"), "process": inst["process_id"],
                             "seq": st["seq"], "node": st["node_id"], "actor": st.get("actor_name"), **f})
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
