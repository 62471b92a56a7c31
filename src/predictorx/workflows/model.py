"""What the loader reads out of a diagram beside what the engine runs: lanes and roles, skills,
policies, gateway declarations, bean operations and log captures, by node (R-HAR-3, R-HAR-4)."""

from __future__ import annotations

from dataclasses import dataclass, field

TASK_KINDS = ("task", "userTask", "manualTask")
GATE_PREFIX = "px_gate__"  # the engine stops at a declared gateway through a task of this id


@dataclass
class Node:
    id: str                       # the diagram's own id (plans are `<diagram>#<id>`)
    kind: str                     # task | userTask | manualTask | exclusiveGateway | parallelGateway
    #                               | startEvent | endEvent | callActivity
    name: str
    process_id: str
    lane: str | None = None       # lane name
    role: str | None = None       # the lane's role
    skills: list[str] = field(default_factory=list)
    enforcement: str | None = None  # strict | advisory (task level overrides the process)
    policies: list[str] = field(default_factory=list)
    bean_op: str | None = None      # claim | note | resolve | scrap
    capture: list[str] = field(default_factory=list)  # what the step must produce into the record
    branch_rule: str | None = None  # `log branch="issue"`: a produced branch names the number
    commit_boundary: bool = False   # `<commitBoundary/>`: the produced commit must be the agent's run's own
    summary: bool = False           # `log summary="issue"`: passing it leaves an iteration summary comment
    called: str | None = None       # callActivity's calledElement
    gate: str | None = None         # decision | judgement | None (undeclared) for deciding gateways
    decision_ref: str | None = None  # `file.dmn#decisionId`
    judgement_reason: str | None = None
    outgoing: list[tuple[str, str]] = field(default_factory=list)  # (flow name, target id)
    documentation: str = ""

    @property
    def is_task(self) -> bool:
        return self.kind in TASK_KINDS

    @property
    def is_deciding_gateway(self) -> bool:
        return self.kind == "exclusiveGateway" and len(self.outgoing) > 1


@dataclass
class ProcessModel:
    id: str
    name: str
    diagram: str                  # file name, e.g. `feature-request.bpmn`
    enforcement: str = "advisory"
    policies: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)   # policy refs declared relaxable="false": no node drops them
    exits: dict[str, tuple[str, str]] = field(default_factory=dict)  # `<h:exit id name role>`: id -> (name, role)
    lanes: dict[str, str] = field(default_factory=dict)  # lane name -> role
    nodes: dict[str, Node] = field(default_factory=dict)

    def node(self, node_id: str) -> Node | None:
        return self.nodes.get(node_id)

    def enforcement_of(self, node: Node) -> str:
        if self.fixed and self.enforcement == "strict":
            return "strict"  # relaxable="false": a node cannot make it advisory (the loader refuses that too)
        return node.enforcement or self.enforcement

    def policies_of(self, node: Node) -> list[str]:
        own = node.policies or self.policies
        return own + [r for r in self.fixed if r not in own]

    def people_roles(self, bean_op: str) -> set[str]:
        """The roles a person needs to `bean_op` a bean of this process outside its steps
        (service/bean_rules.py): the people lane of the step that does it, else every people lane."""
        lanes = {r for r in self.lanes.values() if r != "agent"}
        doing = {n.role for n in self.nodes.values() if n.bean_op == bean_op and n.role and n.role != "agent"}
        return doing or lanes
