"""The execution record as W3C PROV-O JSON-LD, one document per workflow instance (R-HAR-5).

Every allowed step is a `prov:Activity` qualified by an association naming the agent or person,
the role (`prov:hadRole`), an agent's task (`px:task`) and the plan (`prov:hadPlan`, `<diagram>#<node>`); it used the issue and
generated what it produced (the bean, the branch, the commit). A person's change of a bean outside
the steps (bean_rules.py) is an activity too, with `px:beanOp` and `px:outsideSteps` and no plan. Everything is an IRI, never a
literal standing for a thing. Output is deterministic: same history, same bytes.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

PROV = "http://www.w3.org/ns/prov#"
PX = "https://predictorx.dev/ns/harness#"
CONTEXT = {"prov": PROV, "px": PX, "xsd": "http://www.w3.org/2001/XMLSchema#",
           "rdfs": "http://www.w3.org/2000/01/rdf-schema#"}
BASE = "urn:predictorx:"


def iri(kind: str, *parts: str) -> str:
    return BASE + kind + ":" + "/".join(quote(str(p), safe="") for p in parts)


def plan_iri(diagram: str, node: str) -> str:
    return BASE + "plan:" + quote(diagram, safe="") + "#" + quote(node, safe="")


_ENTITY_KINDS = {"bean": "bean", "branch": "branch", "commit": "commit"}


def _entity(key: str, value: str) -> str:
    return iri(_ENTITY_KINDS.get(key, "entity"), *( [value] if key in _ENTITY_KINDS else [key, value]))


def document(instance: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, Any]:
    """`instance`: id, issue_id, process_id, diagram; `steps`: history rows as dicts
    (seq, status, node_id, node_name, diagram, kind, role, actor_type, actor_id, actor_name,
    outcome, reason, computed, produced, verdict, enforcement, created_at)."""
    nodes: dict[str, dict[str, Any]] = {}
    issue = iri("issue", instance["issue_id"])
    nodes[issue] = {"@id": issue, "@type": "prov:Entity", "rdfs:label": f"issue {instance.get('issue_number', '')}".strip()}
    inst = iri("instance", instance["id"])
    nodes[inst] = {"@id": inst, "@type": "prov:Bundle", "px:process": instance["process_id"],
                   "px:diagram": instance["diagram"]}
    previous = None
    for st in sorted(steps, key=lambda s: s["seq"]):
        if st.get("status", "done") != "done":
            continue
        act = iri("step", instance["id"], str(st["seq"]))
        activity: dict[str, Any] = {
            "@id": act, "@type": "prov:Activity", "rdfs:label": st.get("node_name") or st["node_id"],
            "prov:startedAtTime": {"@value": st["created_at"], "@type": "xsd:dateTime"},
            "prov:endedAtTime": {"@value": st["created_at"], "@type": "xsd:dateTime"},
            "prov:used": [{"@id": issue}],
            "px:seq": st["seq"], "px:kind": st["kind"], "px:verdict": st.get("verdict") or "none",
            "px:enforcement": st.get("enforcement") or "advisory", "px:instance": {"@id": inst},
        }
        association: dict[str, Any] = {"@type": "prov:Association"}
        if st.get("kind") == "bean":  # a person changed a bean outside the steps: no plan was followed
            activity["px:beanOp"] = st["node_id"].removeprefix("bean:")
            activity["px:outsideSteps"] = True
        elif st.get("kind") == "session":  # the answer to "suspend, or file a bean?" (workflow_switch.py)
            activity["px:sessionQuestion"] = st.get("node_name") or st["node_id"]
        else:
            plan = plan_iri(st["diagram"], st["node_id"])
            nodes.setdefault(plan, {"@id": plan, "@type": "prov:Plan", "px:diagram": st["diagram"],
                                    "rdfs:label": st.get("node_name") or st["node_id"], "px:node": st["node_id"]})
            association["prov:hadPlan"] = {"@id": plan}
        if st.get("actor_id"):
            who = iri("person" if st["actor_type"] == "person" else "agent", st["actor_id"])
            kind = "prov:Person" if st["actor_type"] == "person" else "prov:SoftwareAgent"
            nodes.setdefault(who, {"@id": who, "@type": ["prov:Agent", kind], "rdfs:label": st.get("actor_name") or ""})
            activity["prov:wasAssociatedWith"] = {"@id": who}
            association["prov:agent"] = {"@id": who}
        if st.get("task_id"):  # an agent acts in a task: which run of it took the step
            activity["px:task"] = {"@id": iri("task", st["task_id"])}
        if st.get("role"):
            role = iri("role", st["role"])
            nodes.setdefault(role, {"@id": role, "@type": "prov:Role", "rdfs:label": st["role"]})
            association["prov:hadRole"] = {"@id": role}
        activity["prov:qualifiedAssociation"] = association
        if st.get("outcome") is not None:
            activity["px:outcome"] = st["outcome"]
            activity["px:computed"] = bool(st.get("computed"))
        if st.get("reason"):
            activity["px:reason"] = st["reason"]
        _facts(nodes, activity, instance["id"], st)
        generated = []
        for key, value in sorted((st.get("produced") or {}).items()):
            ent = _entity(key, value)
            nodes.setdefault(ent, {"@id": ent, "@type": "prov:Entity", "rdfs:label": f"{key} {value}"})
            generated.append({"@id": ent})
        if generated:
            activity["prov:generated"] = generated
        if previous:
            activity["prov:wasInformedBy"] = {"@id": previous}
        previous = act
        nodes[act] = activity
    return {"@context": CONTEXT, "@graph": [nodes[k] for k in sorted(nodes)]}


SYSTEM_AGENT = BASE + "system:predictorx"


def _facts(nodes: dict[str, dict[str, Any]], activity: dict[str, Any], instance_id: str, st: dict[str, Any]) -> None:
    """Each fact a step read is an entity the activity used, attributed to Predictor X (a system fact,
    computed at the pass) or to the step's actor (asserted): which were which is in the record."""
    sources = st.get("fact_sources") or {}
    who = iri("person" if st.get("actor_type") == "person" else "agent", st["actor_id"]) if st.get("actor_id") else None
    for name, value in sorted((st.get("facts") or {}).items()):
        source = sources.get(name, "asserted")
        ent = iri("fact", instance_id, str(st["seq"]), name)
        node: dict[str, Any] = {"@id": ent, "@type": "prov:Entity", "rdfs:label": f"{name} = {json.dumps(value)}",
                                "px:fact": name, "px:value": json.dumps(value, sort_keys=True),
                                "px:factSource": source}
        if source == "system":
            nodes.setdefault(SYSTEM_AGENT, {"@id": SYSTEM_AGENT, "@type": ["prov:Agent", "prov:SoftwareAgent"],
                                            "rdfs:label": "Predictor X"})
            node["prov:wasAttributedTo"] = {"@id": SYSTEM_AGENT}
        elif who:
            node["prov:wasAttributedTo"] = {"@id": who}
        nodes[ent] = node
        activity["prov:used"].append({"@id": ent})


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
