"""Regression: Spiff's task iterators stop at depth 1000, so a loop past ~333 iterations looked
completed with work still pending. The engine lifts the bound (engine.py); a 400-iteration loop
runs to its real end."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from predictorx.workflows.engine import Actor, Run
from predictorx.workflows.library import load_library

_BENCH = Path(__file__).resolve().parents[2] / "bench" / "harness.py"
sys.path.insert(0, str(_BENCH.parent))  # its `_common` import
_spec = importlib.util.spec_from_file_location("bench_harness", _BENCH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_a_loop_past_the_iterator_depth_bound_is_not_falsely_completed(tmp_path):
    (tmp_path / "loop.bpmn").write_text(bench.loop())
    (tmp_path / "loop.dmn").write_text(bench.LOOP_DMN)
    lib = load_library([tmp_path])
    run = Run.start(lib, "loop")
    agent = Actor("agent", "a", "a", frozenset({"agent"}))
    for left in range(399, -1, -1):
        assert not run.completed and [s.node_id for s in run.enabled()] == ["work"], left
        run.apply(run.prepare(run.find("work", agent)))
        run.apply(run.prepare(run.find("again", agent), facts={"left": left}))
    assert run.completed
    again = Run.load(lib, "loop", run.dump())
    assert again.completed and again.enabled() == []
