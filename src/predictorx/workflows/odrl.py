"""A declared subset of W3C ODRL 2.2 for workflow steps (R-HAR-5).

A policy is a JSON-LD file:

    {"@context": "http://www.w3.org/ns/odrl.jsonld", "@type": "Set", "uid": "https://…/team",
     "permission": [{"assignee": "role:agent", "action": "complete", "target": "change.bpmn#draft",
                     "constraint": [{"leftOperand": "role", "operator": "eq", "rightOperand": "agent"}]}],
     "prohibition": [{"assignee": "role:agent", "action": "pass", "target": "change.bpmn#accept"}]}

Rules: `permission` and `prohibition`. `assignee`: `role:<role>`, `agent:<name>` or `person:<name>`
(absent: anyone). `action`: a name or `{"id": name, "includedIn": parent}`; the vocabulary is
`complete` (a task) and `pass` (a gate), both included in `execute`, included in `use`; a rule for
an action covers every action included in it; `switch` (included in `use`) is an agent suspending a
content workflow for a platform change, targeted at the content workflow's diagram. `target`: `<diagram>#<node>` or `<diagram>`.
`constraint`: `leftOperand` process | task | role, `operator` eq | neq | isAnyOf | isNoneOf.
Anything else is refused when the file loads: a policy we would half-read is worse than none.

Evaluation is three-valued: permit, deny, unknown. Any deny wins; a prohibition that might apply
(a constraint on a value the request does not carry) makes the answer unknown, never permit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ODRL_CONTEXTS = ("http://www.w3.org/ns/odrl.jsonld", "https://www.w3.org/ns/odrl.jsonld")
POLICY_TYPES = ("Set", "Policy", "Agreement", "Offer", "odrl:Set", "odrl:Policy")
# `switch`: suspend a content workflow for a platform change that arrived (service/workflow_switch.py)
BASE_ACTIONS = {"complete": "execute", "pass": "execute", "execute": "use", "switch": "use", "use": None}
LEFT_OPERANDS = ("process", "task", "role")
OPERATORS = ("eq", "neq", "isAnyOf", "isNoneOf")
PERMIT, DENY, UNKNOWN = "permit", "deny", "unknown"


class PolicyError(ValueError):
    """A policy file outside the declared subset."""


@dataclass(frozen=True)
class Request:
    actor_kind: str           # agent | person
    actor_name: str
    roles: frozenset[str]
    action: str               # complete | pass
    diagram: str
    node: str
    process: str
    role: str | None          # the lane's role of the step

    @property
    def target(self) -> str:
        return f"{self.diagram}#{self.node}"


@dataclass
class Constraint:
    left: str
    operator: str
    right: list[str]

    def holds(self, req: Request) -> bool | None:
        value = {"process": req.process, "task": req.node, "role": req.role}[self.left]
        if value is None:
            return None
        inside = value in self.right
        return inside if self.operator in ("eq", "isAnyOf") else not inside


@dataclass
class Rule:
    kind: str                  # permission | prohibition
    policy: str
    index: int
    assignee: str | None
    action: str
    target: str | None
    constraints: list[Constraint] = field(default_factory=list)

    def applies(self, req: Request, actions: dict[str, str | None]) -> bool | None:
        if self.assignee is not None:
            mine = {f"role:{r}" for r in req.roles} | {f"{req.actor_kind}:{req.actor_name}"}
            if self.assignee not in mine:
                return False
        if not _included(req.action, self.action, actions):
            return False
        if self.target is not None and self.target not in (req.target, req.diagram):
            return False
        results = [c.holds(req) for c in self.constraints]
        if any(r is False for r in results):
            return False
        return None if any(r is None for r in results) else True


def _included(action: str, rule_action: str, actions: dict[str, str | None]) -> bool:
    seen = set()
    while action is not None and action not in seen:
        if action == rule_action:
            return True
        seen.add(action)
        action = actions.get(action)
    return False


@dataclass
class Policy:
    uid: str
    source: str
    rules: list[Rule]
    actions: dict[str, str | None]


def _strict(obj: Any, allowed: set[str], where: str) -> dict:
    if not isinstance(obj, dict):
        raise PolicyError(f"{where} must be a JSON object")
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise PolicyError(f"{where} has keys outside the ODRL subset: {', '.join(unknown)}")
    return obj


def _strings(value: Any, where: str) -> list[str]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, str) and v for v in values):
        raise PolicyError(f"{where} must be a non-empty string or list of strings")
    return values


def _rule(raw: Any, kind: str, uid: str, index: int, actions: dict[str, str | None]) -> Rule:
    where = f"{uid} {kind} {index + 1}"
    obj = _strict(raw, {"assignee", "action", "target", "constraint"}, where)
    if "action" not in obj:
        raise PolicyError(f"{where} has no action")
    action = obj["action"]
    if isinstance(action, dict):
        _strict(action, {"id", "@id", "includedIn"}, f"{where} action")
        name = action.get("id") or action.get("@id")
        parent = action.get("includedIn")
        if not isinstance(name, str) or not isinstance(parent, str) or parent not in actions:
            raise PolicyError(f"{where} action needs an id and includedIn one of {', '.join(sorted(actions))}")
        actions[name] = parent
        action = name
    if not isinstance(action, str) or action not in actions:
        raise PolicyError(f"{where} action {action!r} is not one of {', '.join(sorted(actions))}")
    assignee = obj.get("assignee")
    if assignee is not None and (not isinstance(assignee, str) or assignee.split(":", 1)[0] not in
                                 ("role", "agent", "person") or ":" not in assignee):
        raise PolicyError(f"{where} assignee must be role:<role>, agent:<name> or person:<name>")
    target = obj.get("target")
    if target is not None and not isinstance(target, str):
        raise PolicyError(f"{where} target must be '<diagram>#<node>' or '<diagram>'")
    constraints = []
    raw_c = obj.get("constraint", [])
    for c_i, c in enumerate(raw_c if isinstance(raw_c, list) else [raw_c]):
        c = _strict(c, {"leftOperand", "operator", "rightOperand"}, f"{where} constraint {c_i + 1}")
        if c.get("leftOperand") not in LEFT_OPERANDS:
            raise PolicyError(f"{where} constraint leftOperand must be one of {', '.join(LEFT_OPERANDS)}")
        if c.get("operator") not in OPERATORS:
            raise PolicyError(f"{where} constraint operator must be one of {', '.join(OPERATORS)}")
        right = _strings(c.get("rightOperand"), f"{where} constraint rightOperand")
        if c["operator"] in ("eq", "neq") and len(right) != 1:
            raise PolicyError(f"{where} constraint {c['operator']} takes one rightOperand")
        constraints.append(Constraint(c["leftOperand"], c["operator"], right))
    return Rule(kind, uid, index, assignee, action, target, constraints)


def parse_policy(data: Any, source: str) -> Policy:
    obj = _strict(data, {"@context", "@type", "uid", "permission", "prohibition"}, source)
    if obj.get("@context") not in ODRL_CONTEXTS:
        raise PolicyError(f"{source} @context must be {ODRL_CONTEXTS[0]}")
    if obj.get("@type") not in POLICY_TYPES:
        raise PolicyError(f"{source} @type must be one of {', '.join(POLICY_TYPES)}")
    uid = obj.get("uid")
    if not isinstance(uid, str) or not uid:
        raise PolicyError(f"{source} needs a uid")
    actions = dict(BASE_ACTIONS)
    rules = []
    for kind in ("permission", "prohibition"):
        raw = obj.get(kind, [])
        for i, r in enumerate(raw if isinstance(raw, list) else [raw]):
            rules.append(_rule(r, kind, uid, i, actions))
    return Policy(uid, source, rules, actions)


def load_policy(path: Path) -> Policy:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PolicyError(f"{path.name} is not a readable JSON-LD policy: {e}") from None
    return parse_policy(data, path.name)


@dataclass
class Verdict:
    value: str                      # permit | deny | unknown
    rules: list[str]                # which rules decided it, e.g. "uid prohibition 1"

    def sentence(self) -> str:
        if self.value == PERMIT:
            return "permitted by " + ", ".join(self.rules)
        if self.value == DENY:
            return "denied by " + ", ".join(self.rules)
        return ("no policy rule permits it" if not self.rules
                else "it may be prohibited by " + ", ".join(self.rules) + " (a value it reads is unknown)")


def evaluate(policies: list[Policy], req: Request) -> Verdict:
    denies, maybes, permits = [], [], []
    for p in policies:
        for r in p.rules:
            hit = r.applies(req, p.actions)
            label = f"{p.uid} {r.kind} {r.index + 1}"
            if r.kind == "prohibition":
                if hit is True:
                    denies.append(label)
                elif hit is None:
                    maybes.append(label)
            elif hit is True:
                permits.append(label)
    if denies:
        return Verdict(DENY, denies)
    if maybes:
        return Verdict(UNKNOWN, maybes)
    if permits:
        return Verdict(PERMIT, permits)
    return Verdict(UNKNOWN, [])
