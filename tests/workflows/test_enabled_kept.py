"""The enabled steps of a workflow state are kept by (library, process, serialised state) (issue 30):
a claim's sweep, a finish's delivery check and handoff and an inbox loaded the same state into the
engine each. Kept only for that exact state and library; each caller gets dicts of its own."""

from __future__ import annotations

import copy
from types import SimpleNamespace

from predictorx.service import workflow_instances
from predictorx.workflows.engine import Run
from predictorx.workflows.library import active_library


def test_enabled_steps_are_loaded_once_per_state_and_library(monkeypatch) -> None:
    lib = active_library()
    state = Run.start(lib, "feature-request").dump()
    loads: list[str] = []
    real = workflow_instances.load_run

    def counting(lib_, inst):
        loads.append(inst.state)
        return real(lib_, inst)

    monkeypatch.setattr(workflow_instances, "load_run", counting)
    inst = SimpleNamespace(status="running", process_id="feature-request", state=state, facts={})
    first = workflow_instances.enabled_steps(lib, inst)
    assert first and len(loads) == 1
    first[0]["delivered"] = ["a caller's own addition"]
    again = workflow_instances.enabled_steps(lib, inst)
    assert len(loads) == 1 and "delivered" not in again[0] and again == workflow_instances.enabled_steps(lib, inst)
    moved = SimpleNamespace(status="running", process_id="feature-request", state=state + " ", facts={})
    assert workflow_instances.enabled_steps(lib, moved) == again and len(loads) == 2  # another state: loaded
    other_lib = copy.copy(lib)  # (processes reloaded: a library of its own)
    workflow_instances.enabled_steps(other_lib, inst)
    assert len(loads) == 3
    assert workflow_instances.enabled_steps(lib, SimpleNamespace(**{**vars(inst), "status": "completed"})) == []
