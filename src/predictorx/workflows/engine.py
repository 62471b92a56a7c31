"""One workflow instance over SpiffWorkflow: which steps are enabled, and completing one — refused
before anything changes when it is not enabled, not this actor's role, or its gate input is wrong
(R-HAR-3, R-HAR-4). No database here: `dump`/`load` give the state a store keeps."""

from __future__ import annotations

import re
import sys
import time
import types
from dataclasses import dataclass, field
from typing import Any

from SpiffWorkflow.bpmn.serializer import BpmnWorkflowSerializer
from SpiffWorkflow.bpmn.workflow import BpmnWorkflow
from SpiffWorkflow.bpmn.util.task import BpmnTaskIterator
from SpiffWorkflow.util.task import TaskIterator, TaskState

from .compaction import compact
from .dmn import DecisionError
from .facts import (
    ASSERTED,
    SYSTEM,
    FactRefused,
    SystemFacts,
    declared_sources,
    gather,
    missing_asserted,
    refuse_system,
)
from .library import Library, decision_key
from .loader import node_id_of, route_key
from .model import GATE_PREFIX, Node, ProcessModel

_SERIALIZER = BpmnWorkflowSerializer()
# Spiff walks its task tree recursively: a long chain (HARNESS-NOTES: ~500 nodes) or a long-lived
# loop needs more stack than Python's default 1000 frames. 20,000 frames stay far inside the
# 8 MiB main-thread stack (bench/harness.py measures the bound it gives).
RECURSION_LIMIT = 20_000


# Spiff's TaskIterator stops at depth 1000 by default, and every engine walk uses it: in a loop
# (each iteration adds a level to the task tree) tasks past that depth become invisible — the
# engine stops running them and `is_completed()` answers True (found on this machine at iteration
# 333 of a task → gate → task loop). The iterator itself is iterative, so the bound can go.
MAX_TASK_DEPTH = 10**9
for _it in (TaskIterator, BpmnTaskIterator):  # both take (end_at_spec, max_depth, …) first
    _defaults = _it.__init__.__defaults__
    if _defaults and _defaults[1] == 1000:
        _it.__init__.__defaults__ = (_defaults[0], MAX_TASK_DEPTH, *_defaults[2:])


def _get_tasks_by_state(self, first_task=None, **kwargs):
    """Spiff's `get_tasks(state=…)` walks the whole task tree in Python on every engine step, and a
    loop's tree only grows: steps/s fell from ~40 to ~6 over 1,200 iterations. A state-only query
    over the instance's task dicts (its own and every subprocess's) returns the same tasks."""
    if first_task is None and set(kwargs) == {"state"}:
        mask = kwargs["state"]
        return [t for wf in (self, *self.subprocesses.values()) for t in wf.tasks.values() if t.state & mask]
    return BpmnWorkflow.get_tasks(self, first_task, **kwargs)


def _update_waiting_tasks(self) -> None:
    """Spiff walks the whole tree for WAITING tasks after every completed task; same set, flat scan."""
    for task in [t for t in self.tasks.values() if t.state & TaskState.WAITING]:
        task.task_spec._update(task)


def _deep_enough() -> None:
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


class StepRefused(ValueError):
    """A step the engine will not take; the message says what is enabled and who may do it."""


def check_branch(step: "Step", produced: dict[str, str], issue_number: int | None) -> None:
    """`log branch="issue"` (seed: "the branch name carries the issue number, e.g. feat/197-word-import"):
    a produced branch must name the issue's number as a number of its own."""
    branch = produced.get("branch")
    if step.node.branch_rule != "issue" or branch is None or issue_number is None:
        return
    if not re.search(rf"(?<![0-9A-Za-z]){issue_number}(?![0-9])", branch):
        raise StepRefused(f"{step.describe()}: branch {branch!r} does not carry the issue number {issue_number}; "
                          f"name it like feat/{issue_number}-<topic>")


@dataclass(frozen=True)
class Budget:
    """What one advance of the engine (a start, or everything a step sets off) may spend before the
    instance is failed: the engine's own tasks run (gateways, events, call activities — never a
    task for a lane, where it stops) and wall-clock seconds. A diagram the loader accepts needs a
    few per node; a loop with no task in it (gateways only), or a recursion the loader did not
    see, needs them without end."""
    steps: int = 2_000
    seconds: float = 5.0


DEFAULT_BUDGET = Budget()


class EngineOverrun(RuntimeError):
    """An advance ran past its budget; the message says where it was going round. The instance
    cannot go on (its state after the overrun is not kept)."""


def _advance(wf: BpmnWorkflow, budget: Budget, process_id: str) -> None:
    """`wf.do_engine_steps()` under `budget`: EngineOverrun instead of a request that never ends."""
    t0 = time.monotonic()
    ran: list[str] = []

    def count(task) -> None:
        ran.append(f"{task.workflow.spec.name}#{node_id_of(task.task_spec.name)}")
        elapsed = time.monotonic() - t0
        if len(ran) > budget.steps or elapsed > budget.seconds:
            where = ", ".join(dict.fromkeys(ran[-20:]))
            raise EngineOverrun(
                f"the engine ran {len(ran) - 1} of its own steps in {elapsed:.1f} s without reaching a task "
                f"for a lane (budget {budget.steps} steps, {budget.seconds:g} s); process {process_id!r} "
                f"is going round {where}: a loop with no task in it, or a process calling itself")
    wf.do_engine_steps(will_complete_task=count)


@dataclass(frozen=True)
class Actor:
    kind: str                 # agent | person
    id: str
    name: str
    roles: frozenset[str]

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass
class Step:
    task_id: str
    node: Node
    process: ProcessModel
    kind: str                 # task | gate
    reads: dict[str, str] = field(default_factory=dict)  # a decision gate's inputs: fact -> system | asserted

    @property
    def node_id(self) -> str:
        return self.node.id

    @property
    def role(self) -> str | None:
        return self.node.role

    @property
    def outcomes(self) -> list[str]:
        return [n for n, _ in self.node.outgoing] if self.kind == "gate" else []

    def describe(self) -> str:
        who = f"role {self.role}" if self.role else "any role"
        what = "gate" if self.kind == "gate" else "step"
        return f"{what} {self.node.id!r} ({self.node.name}, {who})"

    def as_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "node": self.node.id, "name": self.node.name, "kind": self.kind,
                "process": self.process.id, "diagram": self.process.diagram, "lane": self.node.lane,
                "role": self.role, "skills": self.node.skills, "gate": self.node.gate if self.kind == "gate" else None,
                "decision": self.node.decision_ref if self.kind == "gate" else None,
                "outcomes": self.outcomes, "capture": self.node.capture, "bean_op": self.node.bean_op,
                "commit_boundary": self.node.commit_boundary,
                "enforcement": self.process.enforcement_of(self.node), "documentation": self.node.documentation,
                "facts": {src: [n for n, s in self.reads.items() if s == src] for src in (SYSTEM, ASSERTED)}
                if self.reads else None}


@dataclass
class Passage:
    """What completing a step decided; the caller records it."""
    step: Step
    facts: dict[str, Any] = field(default_factory=dict)
    produced: dict[str, str] = field(default_factory=dict)
    outcome: str | None = None
    reason: str | None = None
    computed: bool = False     # the outcome came from the decision table
    fact_sources: dict[str, str] = field(default_factory=dict)  # fact -> system | asserted (by the actor)


class Run:
    def __init__(self, lib: Library, process_id: str, wf: BpmnWorkflow, facts: dict[str, Any] | None = None,
                 budget: Budget = DEFAULT_BUDGET):
        self.lib, self.process_id, self.wf, self.budget = lib, process_id, wf, budget
        wf.get_tasks = types.MethodType(_get_tasks_by_state, wf)
        wf.update_waiting_tasks = types.MethodType(_update_waiting_tasks, wf)
        self.facts: dict[str, Any] = dict(facts or {})

    @classmethod
    def start(cls, lib: Library, process_id: str, budget: Budget = DEFAULT_BUDGET) -> "Run":
        _deep_enough()
        spec, subs = lib.spec(process_id)
        run = cls(lib, process_id, BpmnWorkflow(spec, subs), budget=budget)
        _advance(run.wf, budget, process_id)
        return run

    @classmethod
    def load(cls, lib: Library, process_id: str, state: str, facts: dict[str, Any] | None = None) -> "Run":
        _deep_enough()
        return cls(lib, process_id, _SERIALIZER.deserialize_json(state), facts)

    def dump(self) -> str:
        return _SERIALIZER.serialize_json(self.wf)

    @property
    def completed(self) -> bool:
        return self.wf.is_completed()

    def enabled(self) -> list[Step]:
        out = []
        for t in self.wf.get_tasks(state=TaskState.READY):
            name = t.task_spec.name
            model = self.lib.process(t.workflow.spec.name)
            node = model.node(node_id_of(name))
            if node is None:
                continue
            kind = "gate" if name.startswith(GATE_PREFIX) else "task"
            table = self.lib.decisions.get(decision_key(node.decision_ref or "")) if (
                kind == "gate" and node.gate == "decision") else None
            reads = declared_sources(table.input_names, table.input_sources) if table else {}
            out.append(Step(str(t.id), node, model, kind, reads))
        return out

    def _refusal(self, head: str) -> StepRefused:
        steps = self.enabled()
        if not steps:
            return StepRefused(f"{head}; the instance has no enabled step"
                               + (" (it is completed)" if self.completed else ""))
        return StepRefused(f"{head}; enabled: " + "; ".join(s.describe() for s in steps))

    def find(self, ref: str, actor: Actor) -> Step:
        """The enabled step `ref` (node id or task id) if `actor` may take it, else StepRefused."""
        steps = [s for s in self.enabled() if ref in (s.node_id, s.task_id)]
        if not steps:
            known = any(ref in m.nodes for m in self.lib.processes.values())
            head = (f"step {ref!r} is not enabled now" if known
                    else f"there is no step {ref!r} in process {self.process_id!r}")
            raise self._refusal(head)
        step = steps[0]
        if step.role and step.role not in actor.roles:
            raise StepRefused(f"{step.describe()} is for role {step.role}; {actor.label} holds "
                              f"{', '.join(sorted(actor.roles)) or 'no role'} in this project")
        return step

    def prepare(self, step: Step, *, facts: dict[str, Any] | None = None, outcome: str | None = None,
                reason: str | None = None, produced: dict[str, str] | None = None,
                system: SystemFacts | None = None, issue_number: int | None = None) -> Passage:
        """Everything checked, nothing changed yet. A decision gate reads the facts of this pass
        only: system facts from `system` (computed now), asserted facts from `facts`."""
        facts = dict(facts or {})
        produced = {k: str(v) for k, v in (produced or {}).items()}
        reason = (reason or "").strip() or None
        node = step.node
        try:
            refuse_system(facts, step.describe())
        except FactRefused as e:
            raise StepRefused(str(e)) from None
        sources = {n: ASSERTED for n in facts}
        if step.kind == "task":
            if outcome is not None:
                raise StepRefused(f"{step.describe()} is a task, it has no outcome; pass facts or produced")
            missing = [c for c in node.capture if c not in produced and c not in facts]
            if missing:
                raise StepRefused(f"{step.describe()} records {', '.join(node.capture)}; "
                                  f"pass {', '.join(missing)} in produced")
            check_branch(step, produced, issue_number)
            return Passage(step, facts, produced, None, reason, fact_sources=sources)
        if node.gate == "decision":
            return self._decide(step, facts, produced, outcome, reason, system)
        # judgement, or an undeclared gateway (treated as a judgement: never decided silently)
        if outcome is None or outcome not in step.outcomes:
            raise StepRefused(f"gate {node.id!r} needs an outcome, one of {', '.join(step.outcomes)}")
        if not reason:
            raise StepRefused(f"gate {node.id!r} needs a judgement; the outcome {outcome!r} needs a reason")
        return Passage(step, facts, produced, outcome, reason, fact_sources=sources)

    def _decide(self, step: Step, passed: dict[str, Any], produced: dict[str, str], outcome: str | None,
                reason: str | None, system: SystemFacts | None) -> Passage:
        node = step.node
        if outcome is not None:
            raise StepRefused(f"gate {node.id!r} is computed by decision {node.decision_ref}; an outcome "
                              "passed by hand is refused — pass the facts it reads")
        table_ref = decision_key(node.decision_ref or "")
        if table_ref not in self.lib.decisions:
            raise StepRefused(f"gate {node.id!r} reads decision {node.decision_ref}, which is not loaded: "
                              + self.lib.unresolved.get(table_ref, "no DMN file of the library defines it"))
        table = self.lib.decisions[table_ref]
        where = f"gate {node.id!r}"
        try:
            read = gather(table.input_names, table.input_sources, passed, system, where)
            rows = table.evaluate(read.values)
        except FactRefused as e:
            raise StepRefused(str(e)) from None
        except DecisionError as e:
            raise StepRefused(f"gate {node.id!r}: {e}{_per_pass_hint(table, passed)}") from None
        if not rows:
            raise StepRefused(f"gate {node.id!r}: {table.no_match(read.values)}, so no branch can be taken"
                              + (_per_pass_hint(table, passed) or "; pass the facts it reads"))
        values = {str(r[table.output_names[0]]) for r in rows}
        if len(values) != 1:
            raise StepRefused(f"gate {node.id!r}: decision {table.id!r} answered {sorted(values)}, "
                              "a gateway takes exactly one branch")
        computed = values.pop()
        if computed not in step.outcomes:
            raise StepRefused(f"gate {node.id!r}: decision {table.id!r} answered {computed!r}, but the "
                              f"outgoing flows are named {', '.join(step.outcomes)}")
        return Passage(step, read.values, produced, computed, reason, computed=True, fact_sources=read.sources)

    def exit(self, exit_id: str, actor: Actor) -> tuple[str, str]:
        """Leave the process by a declared exit (`<h:exit id name role>`, e.g. the seed's "the user
        defers the remaining work"): checked, then every open task is cancelled. (name, role)."""
        model = self.lib.process(self.process_id)
        if exit_id not in model.exits:
            known = ", ".join(sorted(model.exits)) or "none"
            raise StepRefused(f"process {self.process_id!r} declares no exit {exit_id!r} (its exits: {known})")
        name, role = model.exits[exit_id]
        if role not in actor.roles:
            raise StepRefused(f"exit {exit_id!r} ({name}) is for role {role}; {actor.label} holds "
                              f"{', '.join(sorted(actor.roles)) or 'no role'} in this project")
        if self.completed:
            raise StepRefused(f"process {self.process_id!r} is already complete")
        self.wf.cancel()
        return name, role

    def apply(self, passage: Passage) -> None:
        """Move the engine past the step (after the caller has authorised and recorded it)."""
        step = passage.step
        task = next((t for t in self.wf.get_tasks(state=TaskState.READY) if str(t.id) == step.task_id), None)
        if task is None:
            raise StepRefused(f"{step.describe()} is no longer enabled")
        if step.kind == "gate":
            routes = dict(task.data.get("px_route") or {})
            routes[route_key(step.process.id, step.node.id)] = passage.outcome
            task.data["px_route"] = routes
        task.run()
        _advance(self.wf, self.budget, self.process_id)
        compact(self.wf)  # the history is our rows; the tree keeps only what is still to do


def _per_pass_hint(table: Any, passed: dict[str, Any]) -> str:
    """What to add when an asserted fact the table reads was not passed with this pass."""
    missing = missing_asserted(table.input_names, table.input_sources, passed)
    return f" (facts are per pass, never carried over: pass {', '.join(missing)} with this pass)" if missing else ""
