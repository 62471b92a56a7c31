"""Reads BPMN 2.0 diagrams in the seed's style and hands SpiffWorkflow what it can run (R-HAR-3).

Accepted: processes marked `isExecutable="false"` (the seed's diagrams are documentation first),
lanes bound to roles, exclusive gateways whose branch is the outgoing flow's *name*, parallel
fork/join, call activities across files, and extension elements in the harness namespace
(`skill`, `role`, `policy enforcement=…`, `decision ref=…dmn#…`, `judgement reason=…`,
`bean op=…`, `log capture=…`). Every other BPMN element is refused by name: the engine must
never quietly run a diagram differently from how it reads.

What Spiff sees is a transformed copy: executable, ids that collide with Spiff's own internal
task names renamed (HARNESS-NOTES: an id `Start` breaks the parse), every deciding gateway
preceded by a gate task so the engine stops there until a decision or judgement passes it, and
the gateway's flows conditioned on the outcome recorded for it.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

from lxml import etree

from .model import GATE_PREFIX, Node, ProcessModel

BPMN_NS = "http://www.omg.org/spec/BPMN/20100524/MODEL"
XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"
HARNESS_NS = "https://predictorx.dev/ns/harness/processes"
# The seed writes its extensions as `cat-harness.processes:…`; any namespace URI ending in
# `harness.processes` or `harness/processes` is the same vocabulary.
_HARNESS_NS_RE = re.compile(r"(^|[-/:#.])harness[./]processes/?$")
_IGNORED_NS = ("http://www.omg.org/spec/BPMN/20100524/DI", "http://www.omg.org/spec/DD/20100524/DC",
               "http://www.omg.org/spec/DD/20100524/DI")
SUPPORTED = {
    "definitions", "process", "laneSet", "lane", "childLaneSet", "flowNodeRef", "startEvent", "endEvent",
    "task", "userTask", "manualTask", "exclusiveGateway", "parallelGateway", "sequenceFlow",
    "callActivity", "incoming", "outgoing", "documentation", "extensionElements", "textAnnotation",
    "text", "association", "collaboration", "participant", "group", "category", "categoryValue",
}
FLOW_NODES = {"startEvent", "endEvent", "task", "userTask", "manualTask", "exclusiveGateway",
              "parallelGateway", "callActivity"}
EXTENSIONS = {"skill", "role", "policy", "decision", "judgement", "bean", "log", "exit", "commitBoundary"}
_HINTS = {
    "conditionExpression": "branches are chosen by the outgoing flow's name; declare the gateway "
                           "with a decision table or a judgement instead",
    "scriptTask": "diagrams do not run code; make it a task for a lane",
    "serviceTask": "make it a task for the agent lane",
    "businessRuleTask": "put the table on the gateway as <decision ref=\"file.dmn#id\"/>",
    "subProcess": "use a callActivity to a process in its own file",
    "inclusiveGateway": "use an exclusive gateway with a decision or parallel gateways",
}
RESERVED_IDS = {"Start", "End", "Root"}  # Spiff's own task-spec names


class DiagramError(ValueError):
    """A diagram the harness refuses; the message names the file and the element."""


def is_harness_ns(uri: str | None) -> bool:
    return bool(uri) and (uri == HARNESS_NS or bool(_HARNESS_NS_RE.search(uri)))


def _qn(el: etree._Element) -> etree.QName:
    return etree.QName(el)


def _ext(el: etree._Element) -> list[etree._Element]:
    out = []
    for child in el:
        if isinstance(child.tag, str) and _qn(child).localname == "extensionElements":
            out += [e for e in child if isinstance(e.tag, str) and is_harness_ns(_qn(e).namespace)]
    return out


def _value(e: etree._Element, *attrs: str) -> str:
    for a in attrs:
        if e.get(a):
            return e.get(a).strip()
    return (e.text or "").strip()


def spiff_id(node_id: str) -> str:
    return f"px_id__{node_id}" if node_id in RESERVED_IDS or node_id.endswith(".EndJoin") else node_id


def node_id_of(spiff_name: str) -> str:
    if spiff_name.startswith(GATE_PREFIX):
        return spiff_name[len(GATE_PREFIX):]
    return spiff_name[len("px_id__"):] if spiff_name.startswith("px_id__") else spiff_name


def _check_elements(root: etree._Element, fname: str) -> None:
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        q = _qn(el)
        where = f" (id {el.get('id')!r})" if el.get("id") else ""
        if q.namespace == BPMN_NS:
            if q.localname not in SUPPORTED:
                hint = _HINTS.get(q.localname, "the harness runs tasks, user/manual tasks, exclusive and "
                                  "parallel gateways, call activities, plain start and end events and lanes")
                raise DiagramError(f"{fname}: bpmn:{q.localname}{where} cannot be run faithfully; {hint}")
        elif is_harness_ns(q.namespace):
            if q.localname not in EXTENSIONS:
                raise DiagramError(f"{fname}: extension element {q.localname!r}{where} is not one of "
                                   f"{', '.join(sorted(EXTENSIONS))}")
        elif q.namespace in _IGNORED_NS:
            continue
        else:
            parent = el.getparent()
            inside_ext = False
            while parent is not None:
                if isinstance(parent.tag, str) and _qn(parent).localname == "extensionElements":
                    inside_ext = True
                    break
                parent = parent.getparent()
            if not inside_ext:
                raise DiagramError(f"{fname}: element {{{q.namespace}}}{q.localname}{where} is not BPMN 2.0")


def _read_node(el: etree._Element, process_id: str, fname: str) -> Node:
    kind = _qn(el).localname
    node = Node(id=el.get("id"), kind=kind, name=(el.get("name") or el.get("id") or "").strip(),
                process_id=process_id, called=el.get("calledElement"))
    for d in el:
        if isinstance(d.tag, str) and _qn(d).localname == "documentation":
            node.documentation = (d.text or "").strip()
    for e in _ext(el):
        name = _qn(e).localname
        if name == "skill":
            node.skills.append(_value(e, "ref", "name"))
        elif name == "policy":
            node.enforcement = _enforcement(e, fname, node.id)
            if _value(e, "ref"):
                node.policies.append(_value(e, "ref"))
        elif name == "decision":
            node.gate, node.decision_ref = "decision", _value(e, "ref")
            if "#" not in (node.decision_ref or ""):
                raise DiagramError(f"{fname}: gateway {node.id!r} decision ref must be 'file.dmn#decisionId'")
        elif name == "judgement":
            node.gate, node.judgement_reason = "judgement", _value(e, "reason")
            if not node.judgement_reason:
                raise DiagramError(f"{fname}: gateway {node.id!r} declares a judgement without reason=\"…\"")
        elif name == "bean":
            node.bean_op = _value(e, "op")
            if node.bean_op not in ("claim", "note", "resolve", "scrap"):
                raise DiagramError(f"{fname}: {node.id!r} bean op must be claim, note, resolve or scrap")
        elif name == "log":
            node.capture += [c for c in re.split(r"[\s,]+", _value(e, "capture")) if c]
            node.branch_rule = _branch_rule(e, fname, node.id) or node.branch_rule
            node.summary = node.summary or _value(e, "summary") == "issue"
        elif name == "commitBoundary":
            node.commit_boundary = True
        elif name == "role":
            raise DiagramError(f"{fname}: role belongs on a lane, not on {node.id!r}")
    if (node.gate or node.bean_op or node.skills) and kind in ("startEvent", "endEvent"):
        raise DiagramError(f"{fname}: {kind} {node.id!r} cannot carry harness extensions")
    if node.gate and kind != "exclusiveGateway":
        raise DiagramError(f"{fname}: {node.gate} is declared on {kind} {node.id!r}; only exclusive gateways decide")
    if kind == "callActivity" and not node.called:
        raise DiagramError(f"{fname}: callActivity {node.id!r} has no calledElement")
    return node


def _branch_rule(e: etree._Element, fname: str, where: str) -> str | None:
    rule = (e.get("branch") or "").strip() or None
    if rule not in (None, "issue"):
        raise DiagramError(f"{fname}: log branch on {where!r} must be \"issue\" (the branch names the issue's "
                           f"number), not {rule!r}")
    return rule


def _relaxable(e: etree._Element, fname: str, where: str) -> bool:
    value = (e.get("relaxable") or "true").strip()
    if value not in ("true", "false"):
        raise DiagramError(f"{fname}: policy relaxable on {where!r} must be true or false, not {value!r}")
    return value == "true"


def _check_fixed(model: ProcessModel, fname: str) -> None:
    """A policy declared relaxable="false" on the process holds on every node: a node may not lower
    its strict enforcement to advisory (its refs are added to every node's, policies_of)."""
    if not model.fixed or model.enforcement != "strict":
        return
    for node in model.nodes.values():
        if node.enforcement == "advisory":
            raise DiagramError(f"{fname}: {node.id!r} declares advisory enforcement, but process {model.id!r} "
                               f"holds policy {', '.join(model.fixed)} strict and relaxable=\"false\"")


def _check_boundaries(model: ProcessModel, fname: str) -> None:
    """`<commitBoundary/>` (the seed's commit-boundary gate): only on a task of the agent lane that
    records a commit — the commit must then be one the agent's run delivered (service/workflow_boundary.py)."""
    for node in model.nodes.values():
        if node.commit_boundary and not (node.is_task and node.role == "agent" and "commit" in node.capture):
            raise DiagramError(f"{fname}: commitBoundary on {node.id!r} needs a task of the agent lane with "
                               "<log capture=\"… commit\"/>: the boundary checks the commit an agent's run made")


def _enforcement(e: etree._Element, fname: str, where: str) -> str:
    value = (e.get("enforcement") or "advisory").strip()
    if value not in ("strict", "advisory"):
        raise DiagramError(f"{fname}: policy enforcement on {where!r} must be strict or advisory, not {value!r}")
    return value


def read_processes(root: etree._Element, fname: str) -> list[ProcessModel]:
    """Our view of every process in a definitions document (no transformation)."""
    _check_elements(root, fname)
    out = []
    for proc in root.iter(f"{{{BPMN_NS}}}process"):
        pid = proc.get("id")
        model = ProcessModel(id=pid, name=proc.get("name") or pid, diagram=fname)
        for e in _ext(proc):
            if _qn(e).localname == "policy":
                model.enforcement = _enforcement(e, fname, pid)
                if _value(e, "ref"):
                    model.policies.append(_value(e, "ref"))
                    if not _relaxable(e, fname, pid):
                        model.fixed.append(_value(e, "ref"))
            elif _qn(e).localname == "exit":
                xid, role = _value(e, "id"), _value(e, "role")
                if not xid or not role:
                    raise DiagramError(f"{fname}: exit on process {pid!r} needs id=\"…\" and role=\"…\" (who may take it)")
                model.exits[xid] = (_value(e, "name") or xid, role)
        lane_of: dict[str, str] = {}
        for lane in proc.iter(f"{{{BPMN_NS}}}lane"):
            lname = (lane.get("name") or lane.get("id")).strip()
            roles = [_value(e, "name", "ref") for e in _ext(lane) if _qn(e).localname == "role"]
            model.lanes[lname] = roles[0] if roles and roles[0] else lname.lower()
            for ref in lane.iter(f"{{{BPMN_NS}}}flowNodeRef"):
                lane_of[(ref.text or "").strip()] = lname
        for el in proc:
            if isinstance(el.tag, str) and _qn(el).localname in FLOW_NODES:
                node = _read_node(el, pid, fname)
                if node.id in model.nodes:
                    raise DiagramError(f"{fname}: id {node.id!r} is used twice")
                node.lane = lane_of.get(node.id)
                node.role = model.lanes.get(node.lane) if node.lane else None
                model.nodes[node.id] = node
        for flow in proc.iter(f"{{{BPMN_NS}}}sequenceFlow"):
            src, tgt = flow.get("sourceRef"), flow.get("targetRef")
            if src not in model.nodes or tgt not in model.nodes:
                raise DiagramError(f"{fname}: sequenceFlow {flow.get('id')!r} joins unknown nodes {src!r} → {tgt!r}")
            model.nodes[src].outgoing.append(((flow.get("name") or "").strip(), tgt))
        for node in model.nodes.values():
            if node.is_task and not node.lane and model.lanes:
                raise DiagramError(f"{fname}: task {node.id!r} is in no lane, so nobody may do it")
            if node.is_deciding_gateway:
                names = [n for n, _ in node.outgoing]
                if any(not n for n in names) or len(set(names)) != len(names):
                    raise DiagramError(f"{fname}: gateway {node.id!r} needs a distinct name on every outgoing "
                                       "flow (the branch is chosen by that name)")
            if node.kind == "startEvent" and any(model.nodes[t].is_deciding_gateway for _, t in node.outgoing):
                raise DiagramError(f"{fname}: gateway after start event {node.id!r} has nothing to decide "
                                   "from yet; put a task before it")
        _check_fixed(model, fname)
        _check_boundaries(model, fname)
        out.append(model)
    return out


def _rename_reserved(root: etree._Element) -> None:
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        for attr in ("id", "sourceRef", "targetRef", "default", "attachedToRef"):
            if el.get(attr) and spiff_id(el.get(attr)) != el.get(attr):
                el.set(attr, spiff_id(el.get(attr)))
        if _qn(el).localname == "flowNodeRef" and el.text and spiff_id(el.text.strip()) != el.text.strip():
            el.text = spiff_id(el.text.strip())


def route_key(process_id: str, gateway_id: str) -> str:
    return f"{process_id}/{gateway_id}"


def transform(root: etree._Element, models: list[ProcessModel]) -> etree._Element:
    """The copy SpiffWorkflow parses (see the module doc)."""
    root = copy.deepcopy(root)
    for el in list(root.iter()):
        if isinstance(el.tag, str) and _qn(el).localname in ("extensionElements", "incoming", "outgoing",
                                                              "textAnnotation", "association"):
            el.getparent().remove(el)
    by_id = {m.id: m for m in models}
    for proc in root.iter(f"{{{BPMN_NS}}}process"):
        proc.set("isExecutable", "true")
        model = by_id[proc.get("id")]
        for node in model.nodes.values():
            if not node.is_deciding_gateway:
                continue
            gw = next(e for e in proc if e.get("id") == node.id)
            gw.attrib.pop("default", None)
            gate_id = GATE_PREFIX + node.id
            for flow in proc.iter(f"{{{BPMN_NS}}}sequenceFlow"):
                if flow.get("targetRef") == node.id:
                    flow.set("targetRef", gate_id)
                if flow.get("sourceRef") == node.id:
                    cond = etree.SubElement(flow, f"{{{BPMN_NS}}}conditionExpression")
                    cond.set(f"{{{XSI_NS}}}type", "bpmn:tFormalExpression")
                    cond.text = (f"px_route.get({route_key(model.id, node.id)!r}) == "
                                 f"{(flow.get('name') or '').strip()!r}")
            gate = etree.Element(f"{{{BPMN_NS}}}task", id=gate_id, name=node.name)
            gw.addprevious(gate)
            gw.addprevious(etree.Element(f"{{{BPMN_NS}}}sequenceFlow", id=f"px_flow__{node.id}",
                                         sourceRef=gate_id, targetRef=node.id))
            lane_name = node.lane or _incoming_lane(model, node.id)
            if lane_name:
                node.lane, node.role = lane_name, model.lanes.get(lane_name)
                for lane in proc.iter(f"{{{BPMN_NS}}}lane"):
                    if (lane.get("name") or lane.get("id")).strip() == lane_name:
                        etree.SubElement(lane, f"{{{BPMN_NS}}}flowNodeRef").text = gate_id
    _rename_reserved(root)
    return root


def _incoming_lane(model: ProcessModel, node_id: str) -> str | None:
    lanes = {n.lane for n in model.nodes.values() if any(t == node_id for _, t in n.outgoing) and n.lane}
    return lanes.pop() if len(lanes) == 1 else None


def parse_file(path: Path) -> tuple[etree._Element, list[ProcessModel]]:
    try:
        root = etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True)).getroot()
    except (OSError, etree.XMLSyntaxError) as e:
        raise DiagramError(f"{path.name} is not readable BPMN XML: {e}") from None
    if _qn(root).namespace != BPMN_NS or _qn(root).localname != "definitions":
        raise DiagramError(f"{path.name} is not a BPMN 2.0 definitions document")
    return root, read_processes(root, path.name)
