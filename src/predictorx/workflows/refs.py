"""`predictorx check workflow-refs`: per diagram, how much of it a model decides (R-HAR-4).

Deciding gateways split three ways: computed (a DMN table), judgement (declared, with a reason)
and undeclared. Errors: a skill ref with no `skills/<ref>.md` under a diagram root, a decision
ref to a missing DMN file or decision, a decision table with a cell outside the FEEL subset, a
policy that does not load. With --strict also: uncovered activities (a task no skill covers).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .library import decision_key, load_library
from .loader import DiagramError


def _skills(roots: list[Path]) -> set[str]:
    out = set()
    for root in roots:
        base = root if root.is_dir() else root.parent
        for d in {base, *base.parents[:1]}:
            if (d / "skills").is_dir():
                out |= {p.stem for p in (d / "skills").rglob("*.md")}
    return out


def check(roots: list[Path], *, strict: bool = False) -> dict[str, Any]:
    diagrams: dict[str, dict[str, Any]] = {}
    try:
        lib = load_library(roots, build=False)
    except DiagramError as e:
        return {"ok": False, "errors": [str(e)], "diagrams": {}}
    skills = _skills(lib.roots)
    errors: list[str] = list(lib.problems)
    for pid in sorted(lib.processes):
        model = lib.processes[pid]
        d = diagrams.setdefault(model.diagram, {"processes": [], "computed": 0, "judgement": 0, "undeclared": 0,
                                                "errors": [], "uncovered": []})
        d["processes"].append(pid)
        for node in sorted(model.nodes.values(), key=lambda n: n.id):
            where = f"{model.diagram}#{node.id}"
            if node.is_deciding_gateway:
                d[{"decision": "computed", "judgement": "judgement"}.get(node.gate or "", "undeclared")] += 1
            if node.decision_ref:
                key = decision_key(node.decision_ref)
                table = lib.decisions.get(key)
                if table is None:
                    why = lib.unresolved.get(key, "no DMN file of the library defines it")
                    d["errors"].append(f"{where}: decision ref {node.decision_ref} resolves to nothing: {why}")
                else:
                    d["errors"] += [f"{where}: decision {key}: {p}" for p in table.problems]
                    names = {n for n, _ in node.outgoing}
                    for rule in table.rules:
                        if rule.outputs and str(rule.outputs[0]) not in names:
                            d["errors"].append(f"{where}: decision {key} rule {rule.index + 1} answers "
                                               f"{rule.outputs[0]!r}, no outgoing flow has that name")
            for skill in node.skills:
                if skill not in skills:
                    d["errors"].append(f"{where}: skill {skill!r} has no skills/{skill}.md")
            if node.is_task and not node.skills:
                d["uncovered"].append(where)
            if node.called and node.called not in lib.processes:
                d["errors"].append(f"{where}: calls process {node.called!r}, which no diagram defines")
    for d in diagrams.values():
        errors += d["errors"]
        if strict:
            errors += [f"{u}: uncovered activity (no skill covers it)" for u in d["uncovered"]]
    return {"ok": not errors, "strict": strict, "errors": errors, "diagrams": diagrams}


def to_text(result: dict[str, Any]) -> str:
    lines = []
    for name, d in sorted(result["diagrams"].items()):
        total = d["computed"] + d["judgement"] + d["undeclared"]
        lines.append(f"{name}: {total} deciding gateways — computed {d['computed']}, judgement {d['judgement']}, "
                     f"undeclared {d['undeclared']}; {len(d['uncovered'])} uncovered activities")
    lines += [f"error: {e}" for e in result["errors"]]
    lines.append("ok" if result["ok"] else f"{len(result['errors'])} errors")
    return "\n".join(lines) + "\n"


def to_json(result: dict[str, Any]) -> str:
    return json.dumps(result, sort_keys=True, indent=2) + "\n"
