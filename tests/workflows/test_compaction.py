"""A looping instance's engine state stays the size of the work still to do (workflows/compaction.py):
SpiffWorkflow keeps every finished task, so without compaction the tree, the serialised state and
every step's cost grow with each iteration. The loop here has a parallel fork/join and a call
activity in its body, the parts whose engine logic reads the tree (a join walks its ancestors;
a completed subprocess is kept by its caller's task)."""

from __future__ import annotations

from predictorx.workflows.engine import Actor, Run
from predictorx.workflows.library import load_library

HEAD = ('<?xml version="1.0"?><bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" '
        'xmlns:h="urn:cat-harness.processes" id="{id}" targetNamespace="x">')
FLOWS = [("s", "fork"), ("fork", "a"), ("fork", "b"), ("a", "join"), ("b", "join"), ("join", "call"),
         ("call", "again")]
OUTER = (HEAD.format(id="d_outer") + '<bpmn:process id="outer" isExecutable="false"><bpmn:startEvent id="s"/>'
         '<bpmn:parallelGateway id="fork"/><bpmn:task id="a" name="a"/><bpmn:task id="b" name="b"/>'
         '<bpmn:parallelGateway id="join"/><bpmn:callActivity id="call" calledElement="inner"/>'
         '<bpmn:exclusiveGateway id="again" name="again?"><bpmn:extensionElements>'
         '<h:judgement reason="whether to go round once more"/></bpmn:extensionElements></bpmn:exclusiveGateway>'
         '<bpmn:endEvent id="e"/>'
         + "".join(f'<bpmn:sequenceFlow id="f{i}" sourceRef="{a}" targetRef="{b}"/>' for i, (a, b) in enumerate(FLOWS))
         + '<bpmn:sequenceFlow id="more" name="more" sourceRef="again" targetRef="fork"/>'
         '<bpmn:sequenceFlow id="done" name="done" sourceRef="again" targetRef="e"/></bpmn:process></bpmn:definitions>')
INNER = (HEAD.format(id="d_inner") + '<bpmn:process id="inner" isExecutable="false"><bpmn:startEvent id="is"/>'
         '<bpmn:task id="x" name="x"/><bpmn:endEvent id="ie"/>'
         '<bpmn:sequenceFlow id="i1" sourceRef="is" targetRef="x"/><bpmn:sequenceFlow id="i2" sourceRef="x" '
         'targetRef="ie"/></bpmn:process></bpmn:definitions>')
AGENT = Actor("agent", "a-1", "bot", frozenset({"agent"}))


def _take(run: Run, ref: str, **kw) -> None:
    run.apply(run.prepare(run.find(ref, AGENT), **kw))


def _enabled(run: Run) -> list[str]:
    return sorted(s.node_id for s in run.enabled())


def _tasks(run: Run) -> int:
    return len(run.wf.tasks) + sum(len(sp.tasks) for sp in run.wf.subprocesses.values())


def test_a_loop_with_a_join_and_a_call_keeps_a_bounded_state_and_still_runs_right(tmp_path):
    (tmp_path / "outer.bpmn").write_text(OUTER)
    (tmp_path / "inner.bpmn").write_text(INNER)
    lib = load_library([tmp_path])
    run = Run.start(lib, "outer")
    sizes, tasks = [], []
    for i in range(60):
        assert _enabled(run) == ["a", "b"], i
        _take(run, "b" if i % 2 else "a")
        # the join still waits for the other branch, on every iteration (not satisfied by an old one)
        assert _enabled(run) == ["a" if i % 2 else "b"], i
        _take(run, "a" if i % 2 else "b")
        assert _enabled(run) == ["x"], i
        if i % 7 == 3:  # a reload mid-iteration (the database path) resumes in the same place
            run = Run.load(lib, "outer", run.dump())
            assert _enabled(run) == ["x"], i
        _take(run, "x")
        assert _enabled(run) == ["again"], i
        _take(run, "again", outcome="more" if i < 59 else "done", reason="one more round")
        sizes.append(len(run.dump()))
        tasks.append(_tasks(run))
    assert run.completed and run.enabled() == []
    # bounded: the 60th iteration's state is no larger than the 5th's, give or take ids and floats
    assert max(sizes[4:]) <= sizes[4] * 1.2, sizes
    assert max(tasks[4:]) <= tasks[4], tasks
    assert len(run.wf.subprocesses) <= 1  # the completed call's subprocesses go with their task
    again = Run.load(lib, "outer", run.dump())
    assert again.completed and again.enabled() == []


def test_the_loop_bench_state_is_flat_over_iterations(tmp_path):
    from tests.workflows.test_engine_loop import bench

    (tmp_path / "loop.bpmn").write_text(bench.loop())
    (tmp_path / "loop.dmn").write_text(bench.LOOP_DMN)
    lib = load_library([tmp_path])
    run = Run.start(lib, "loop")
    sizes = {}
    for left in range(1499, -1, -1):
        _take(run, "work")
        _take(run, "again", facts={"left": left})
        if left in (1400, 0):
            sizes[left] = (len(run.dump()), len(run.wf.tasks))
    assert run.completed
    (size_early, tasks_early), (size_end, tasks_end) = sizes[1400], sizes[0]
    assert tasks_end <= tasks_early + 2 and size_end <= size_early * 1.2, sizes
