"""A set of diagrams loaded together: call activities resolve across files, decision refs to DMN
files beside them, and SpiffWorkflow specs built once per library (R-HAR-3)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from SpiffWorkflow.bpmn.parser import BpmnParser
from SpiffWorkflow.bpmn.parser.ValidationException import ValidationException

from . import callgraph
from .dmn import CellError, DecisionTable, load_dmn
from .loader import DiagramError, parse_file, transform
from .model import Node, ProcessModel
from .odrl import Policy, PolicyError, load_policy

# The workflows shipped as examples (R-HAR-8): every workflow seed 003 names (authoring-a-paper,
# authoring-a-document, content-lifecycle, document-ingestion, draft-to-publication, the CRDM
# requirements workflow as feature-request, evidence-retrieval), bug-triage, information-request,
# bean-lifecycle and the harness's own idle/workflow state machine (agentic-harness). The list is
# in docs/workflows.md (tests/workflows/test_seed_workflows.py keeps it true).
SHIPPED = Path(__file__).parent / "processes"


@dataclass
class Library:
    roots: list[Path]
    processes: dict[str, ProcessModel] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)        # diagram name -> path
    decisions: dict[str, DecisionTable] = field(default_factory=dict)  # "file.dmn#id" -> table
    digests: dict[str, str] = field(default_factory=dict)        # diagram name -> sha256 of its bytes
    policies: dict[str, Policy] = field(default_factory=dict)    # resolved path -> policy
    policy_refs: dict[str, dict[str, str]] = field(default_factory=dict)  # diagram -> ref -> resolved path
    problems: list[str] = field(default_factory=list)            # dangling refs (build=False only)
    unresolved: dict[str, str] = field(default_factory=dict)     # "file.dmn#id" -> why it did not load
    parser: BpmnParser | None = None

    def process(self, process_id: str) -> ProcessModel:
        try:
            return self.processes[process_id]
        except KeyError:
            raise DiagramError(f"no process {process_id!r}; known: {', '.join(sorted(self.processes))}") from None

    def model_of(self, process_id: str) -> ProcessModel | None:
        return self.processes.get(process_id)

    def spec(self, process_id: str):
        self.process(process_id)
        try:
            return self.parser.get_spec(process_id), self.parser.get_subprocess_specs(process_id)
        except ValidationException as e:
            raise DiagramError(f"{self.processes[process_id].diagram}: the engine refuses it: {e}") from None

    def policies_for(self, model: ProcessModel, node: Node) -> list[Policy]:
        refs = self.policy_refs.get(model.diagram, {})
        return [self.policies[refs[r]] for r in model.policies_of(node) if refs.get(r) in self.policies]

    def decision(self, ref: str) -> DecisionTable:
        if ref not in self.decisions:
            raise DiagramError(f"decision {ref!r} is not in any DMN file of the library"
                               + (f": {self.unresolved[ref]}" if ref in self.unresolved else ""))
        return self.decisions[ref]


def _diagram_paths(roots: list[Path]) -> list[Path]:
    out: list[Path] = []
    for root in roots:
        out += sorted(root.rglob("*.bpmn")) if root.is_dir() else [root]
    return out


def load_library(roots: list[Path] | None = None, *, build: bool = True) -> Library:
    """Every diagram under `roots` (default: the shipped processes). `build=False` reads without
    building engine specs (what `check workflow-refs` needs for a broken call graph)."""
    roots = [Path(r) for r in (roots or [SHIPPED])]
    lib = Library(roots)
    parser = BpmnParser()
    for path in _diagram_paths(roots):
        if path.name in lib.files:
            raise DiagramError(f"two diagrams are named {path.name}: {lib.files[path.name]} and {path}")
        root, models = parse_file(path)
        lib.files[path.name] = path
        lib.digests[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
        for model in models:
            if model.id in lib.processes:
                raise DiagramError(f"process id {model.id!r} is in {lib.processes[model.id].diagram} and {path.name}")
            lib.processes[model.id] = model
            for ref in set(model.policies).union(*[n.policies for n in model.nodes.values()]):
                _load_policy(lib, path, ref, strict=build)
            for node in model.nodes.values():
                if node.decision_ref:
                    _load_decision(lib, path.parent, node.decision_ref)
                if model.enforcement_of(node) == "strict" and node.is_task and not model.policies_of(node):
                    raise DiagramError(f"{path.name}: {node.id!r} is under strict enforcement but no "
                                       "<policy ref=…> says what to enforce")
        if build:
            try:
                parser.add_bpmn_xml(transform(root, models), filename=path.name)
            except ValidationException as e:
                raise DiagramError(f"{path.name}: the engine refuses it: {e}") from None
    cycles = callgraph.problems(lib.processes)
    if cycles and build:
        raise DiagramError("; ".join(cycles))
    lib.problems += cycles
    if build:
        for model in lib.processes.values():
            for node in model.nodes.values():
                if node.called and node.called not in lib.processes:
                    raise DiagramError(f"{model.diagram}: call activity {node.id!r} calls process "
                                       f"{node.called!r}, which no loaded diagram defines")
        lib.parser = parser
    return lib


def _load_policy(lib: Library, diagram: Path, ref: str, *, strict: bool) -> None:
    path = (diagram.parent / ref).resolve()
    lib.policy_refs.setdefault(diagram.name, {})[ref] = str(path)
    if str(path) in lib.policies:
        return
    try:
        if not path.is_file():
            raise PolicyError(f"{diagram.name}: policy {ref!r} does not exist")
        lib.policies[str(path)] = load_policy(path)
    except PolicyError as e:
        if strict:
            raise DiagramError(str(e)) from None
        lib.problems.append(str(e))


def _load_decision(lib: Library, base: Path, ref: str) -> None:
    file, _, did = ref.partition("#")
    key = f"{Path(file).name}#{did}"
    if key in lib.decisions:
        return
    path = (base / file).resolve()
    # a dangling ref: `check workflow-refs` reports why, a run refuses at the gate saying so
    if not path.is_file():
        lib.unresolved[key] = f"{file} does not exist beside the diagram"
        return
    try:
        tables = load_dmn(path)
    except CellError as e:
        lib.unresolved[key] = str(e)
        return
    for tid, table in tables.items():
        lib.decisions[f"{path.name}#{tid}"] = table
    if did not in tables:
        lib.unresolved[key] = f"{path.name} has no decision {did!r} (its decisions: {', '.join(sorted(tables)) or 'none'})"


def decision_key(ref: str) -> str:
    file, _, did = ref.partition("#")
    return f"{Path(file).name}#{did}"


@lru_cache(maxsize=8)
def _cached(key: tuple[str, ...]) -> Library:
    return load_library([Path(k) for k in key])


def library_roots() -> list[Path]:
    """The shipped processes plus the folders in PREDICTORX_PROCESSES (os.pathsep-separated)."""
    extra = [Path(p) for p in os.environ.get("PREDICTORX_PROCESSES", "").split(os.pathsep) if p.strip()]
    return [SHIPPED, *extra]


def active_library() -> Library:
    """What the server and CLI run: loaded once per process and set of roots."""
    return _cached(tuple(str(p) for p in library_roots()))
