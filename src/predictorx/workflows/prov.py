"""The execution record as W3C PROV-O JSON-LD, one document per workflow instance (R-HAR-5).

Every allowed step is a `prov:Activity` qualified by an association naming the agent or person,
the role (`prov:hadRole`), an agent's task (`px:task`) and the plan (`prov:hadPlan`, `<diagram>#<node>`); it used the issue and
generated what it produced. A person's change of a bean outside the steps (bean_rules.py) is an
activity too, with `px:beanOp` and `px:outsideSteps` and no plan. Everything is an IRI, never a
literal standing for a thing. Output is deterministic: same history, same bytes.

So that other PROV tools read it (issue 24 item 5; the `prov` package reads generations only
from the entity's side) and it meets PROV-CONSTRAINTS:
- generation is stated both ways: `prov:generated` on the activity, `prov:wasGeneratedBy` and
  `prov:generatedAtTime` on the entity (no qualified Generation as well: a reader would count two);
- what changes is versioned, so each entity is generated once: a branch *at a commit*
  (`urn:predictorx:branch:<name>@<commit>`), a bean *at the step that changed it*
  (`urn:predictorx:bean:<id>@<instance>/<seq>`), each `prov:specializationOf` the branch or bean
  and `prov:wasRevisionOf` its previous version in the record (which the step used; also as a
  qualified `prov:Revision`, the form the `prov` package reads). A version
  or a commit produced again by a later step is used by it, not generated again;
- scrapping a bean invalidates its latest version (`prov:wasInvalidatedBy`, `prov:invalidatedAtTime`);
- a refused attempt (and an instance's failed step, service/workflow_failures.py) is an activity
  typed `px:RefusedAttempt` (`px:FailedAttempt`), `px:valid false`, with who tried and its plan,
  and neither generates nor invalidates anything. `workflows/provcheck.py` checks the constraints.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from urllib.parse import quote

PROV = "http://www.w3.org/ns/prov#"
PX = "https://predictorx.dev/ns/harness#"
CONTEXT = {"prov": PROV, "px": PX, "xsd": "http://www.w3.org/2001/XMLSchema#",
           "rdfs": "http://www.w3.org/2000/01/rdf-schema#"}
BASE = "urn:predictorx:"
_ATTEMPT_TYPES = {"refused": "px:RefusedAttempt", "failed": "px:FailedAttempt"}


def iri(kind: str, *parts: str) -> str:
    return BASE + kind + ":" + "/".join(quote(str(p), safe="") for p in parts)


def plan_iri(diagram: str, node: str) -> str:
    return BASE + "plan:" + quote(diagram, safe="") + "#" + quote(node, safe="")


def _time(value: str) -> dict[str, str]:
    return {"@value": value, "@type": "xsd:dateTime"}


def _ended(st: dict[str, Any]) -> str:
    """A repeated refusal ends at its last attempt (never before the row's own time: the row is
    written a moment after the attempt's clock was read)."""
    last = st.get("last_attempt_at")
    if last and datetime.fromisoformat(last) > datetime.fromisoformat(st["created_at"]):
        return last
    return st["created_at"]


class _Record:
    """The graph under construction: nodes by IRI, each entity's latest version, what was generated."""

    def __init__(self, instance: dict[str, Any], bean_ops: dict[tuple[str, str], str]):
        self.instance, self.bean_ops = instance, bean_ops
        self.nodes: dict[str, dict[str, Any]] = {}
        self.latest: dict[str, str] = {}       # branch/bean IRI -> its latest version's IRI
        self.previous: str | None = None        # the last allowed step: what the next one was informed by
        self.issue = iri("issue", instance["issue_id"])
        self.inst = iri("instance", instance["id"])
        self.nodes[self.issue] = {"@id": self.issue, "@type": "prov:Entity",
                                  "rdfs:label": f"issue {instance.get('issue_number', '')}".strip()}
        self.nodes[self.inst] = {"@id": self.inst, "@type": ["prov:Bundle", "prov:Entity"],
                                 "px:process": instance["process_id"], "px:diagram": instance["diagram"]}

    def activity(self, st: dict[str, Any]) -> dict[str, Any]:
        """The activity of a history row with its association (who, role, plan, task)."""
        act = iri("step", self.instance["id"], str(st["seq"]))
        activity: dict[str, Any] = {
            "@id": act, "@type": "prov:Activity", "rdfs:label": st.get("node_name") or st["node_id"],
            "prov:startedAtTime": _time(st["created_at"]),
            "prov:endedAtTime": _time(_ended(st)),
            "prov:used": [{"@id": self.issue}],
            "px:seq": st["seq"], "px:kind": st["kind"], "px:verdict": st.get("verdict") or "none",
            "px:enforcement": st.get("enforcement") or "advisory", "px:instance": {"@id": self.inst},
        }
        association: dict[str, Any] = {"@type": "prov:Association"}
        if st.get("kind") == "bean":  # a person changed a bean outside the steps: no plan was followed
            activity["px:beanOp"] = st["node_id"].removeprefix("bean:")
            activity["px:outsideSteps"] = True
        elif st.get("kind") == "session":  # the answer to "suspend, or file a bean?" (workflow_switch.py)
            activity["px:sessionQuestion"] = st.get("node_name") or st["node_id"]
        else:
            plan = plan_iri(st["diagram"], st["node_id"])
            self.nodes.setdefault(plan, {"@id": plan, "@type": ["prov:Entity", "prov:Plan"], "px:diagram": st["diagram"],
                                         "rdfs:label": st.get("node_name") or st["node_id"], "px:node": st["node_id"]})
            association["prov:hadPlan"] = {"@id": plan}
        if st.get("actor_id"):
            who = iri("person" if st["actor_type"] == "person" else "agent", st["actor_id"])
            kind = "prov:Person" if st["actor_type"] == "person" else "prov:SoftwareAgent"
            self.nodes.setdefault(who, {"@id": who, "@type": ["prov:Agent", kind], "rdfs:label": st.get("actor_name") or ""})
            activity["prov:wasAssociatedWith"] = {"@id": who}
            association["prov:agent"] = {"@id": who}
        if st.get("task_id"):  # an agent acts in a task: which run of it took the step
            activity["px:task"] = {"@id": iri("task", st["task_id"])}
        if st.get("role"):
            role = iri("role", st["role"])
            self.nodes.setdefault(role, {"@id": role, "@type": "prov:Role", "rdfs:label": st["role"]})
            association["prov:hadRole"] = {"@id": role}
        activity["prov:qualifiedAssociation"] = association
        if st.get("outcome") is not None:
            activity["px:outcome"] = st["outcome"]
            activity["px:computed"] = bool(st.get("computed"))
        if st.get("reason"):
            activity["px:reason"] = st["reason"]
        return activity

    def attempt(self, st: dict[str, Any]) -> None:
        """A refused or failed attempt: an activity that is not valid and changed nothing."""
        activity = self.activity(st)
        activity["@type"] = ["prov:Activity", _ATTEMPT_TYPES.get(st["status"], "px:InvalidAttempt")]
        activity["px:valid"] = False
        activity["px:status"] = st["status"]
        activity["px:attempts"] = int(st.get("attempts") or 1)
        if self.previous:
            activity["prov:wasInformedBy"] = {"@id": self.previous}
        self.nodes[activity["@id"]] = activity

    def step(self, st: dict[str, Any]) -> None:
        activity = self.activity(st)
        act, at = activity["@id"], st["created_at"]
        _facts(self.nodes, activity, self.instance["id"], st)
        produced = st.get("produced") or {}
        op = (st["node_id"].removeprefix("bean:") if st.get("kind") == "bean"
              else self.bean_ops.get((st.get("process_id") or self.instance["process_id"], st["node_id"])))
        for key, value in sorted(produced.items()):
            if key == "bean" and op == "scrap":
                self._invalidate(activity, iri("bean", value), at)
                continue
            if key in ("bean", "branch"):
                general = iri(key, value)
                tag = (quote(str(produced["commit"]), safe="") if key == "branch" and produced.get("commit")
                       else f"{quote(self.instance['id'], safe='')}/{st['seq']}")
                self._version(activity, general, f"{general}@{tag}", f"{key} {value}", at)
            else:
                ent = iri(key, value) if key == "commit" else iri("entity", key, value)
                self._generate(activity, ent, f"{key} {value}", at)
        if self.previous:
            activity["prov:wasInformedBy"] = {"@id": self.previous}
        self.previous = act
        self.nodes[act] = activity

    def _generate(self, activity: dict[str, Any], ent: str, label: str, at: str,
                  extra: dict[str, Any] | None = None) -> None:
        """`activity` generated `ent`, stated both ways, unless an earlier step did: then it used it."""
        if ent in self.nodes:
            _add(activity, "prov:used", ent)
            return
        act = activity["@id"]
        self.nodes[ent] = {"@id": ent, "@type": "prov:Entity", "rdfs:label": label,
                           "prov:wasGeneratedBy": {"@id": act}, "prov:generatedAtTime": _time(at), **(extra or {})}
        _add(activity, "prov:generated", ent)

    def _version(self, activity: dict[str, Any], general: str, version: str, label: str, at: str) -> None:
        self.nodes.setdefault(general, {"@id": general, "@type": "prov:Entity", "rdfs:label": label})
        before = self.latest.get(general)
        if before == version or version in self.nodes:
            _add(activity, "prov:used", version)
            return
        extra: dict[str, Any] = {"prov:specializationOf": {"@id": general}}
        if before:
            extra["prov:wasRevisionOf"] = {"@id": before}  # and qualified: what the `prov` package reads
            extra["prov:qualifiedRevision"] = {"@type": "prov:Revision", "prov:entity": {"@id": before}}
            _add(activity, "prov:used", before)
        self._generate(activity, version, f"{label} at step {activity['px:seq']}", at, extra)
        self.latest[general] = version

    def _invalidate(self, activity: dict[str, Any], general: str, at: str) -> None:
        target = self.latest.pop(general, general)
        node = self.nodes.setdefault(target, {"@id": target, "@type": "prov:Entity",
                                              "rdfs:label": general.removeprefix(BASE).replace(":", " ", 1)})
        if "prov:wasInvalidatedBy" in node:
            return  # invalidated once; a later scrap of the same version changes nothing
        node["prov:wasInvalidatedBy"] = {"@id": activity["@id"]}
        node["prov:invalidatedAtTime"] = _time(at)
        _add(activity, "prov:invalidated", target)


def _add(activity: dict[str, Any], key: str, ent: str) -> None:
    refs = activity.setdefault(key, [])
    if {"@id": ent} not in refs:
        refs.append({"@id": ent})


def document(instance: dict[str, Any], steps: list[dict[str, Any]],
             bean_ops: dict[tuple[str, str], str] | None = None) -> dict[str, Any]:
    """`instance`: id, issue_id, process_id, diagram; `steps`: history rows as dicts
    (seq, status, node_id, node_name, diagram, kind, role, actor_type, actor_id, actor_name,
    outcome, reason, computed, produced, verdict, enforcement, created_at, attempts, last_attempt_at);
    `bean_ops`: (process id, node id) → the bean op its diagram declares (a `scrap` invalidates)."""
    record = _Record(instance, bean_ops or {})
    for st in sorted(steps, key=lambda s: s["seq"]):
        if st.get("status", "done") == "done":
            record.step(st)
        else:
            record.attempt(st)
    return {"@context": CONTEXT, "@graph": [record.nodes[k] for k in sorted(record.nodes)]}


def bean_ops_of(processes: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(process id, node id) → bean op, from a library's process models."""
    return {(pid, n.id): n.bean_op for pid, m in processes.items() for n in m.nodes.values() if n.bean_op}


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
        _add(activity, "prov:used", ent)


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
