"""Issue 12: the harness's figures, in process (no server): engine step on a 100-node process,
a 10,000-iteration one-task loop (steps/s, memory, state size, recursion), resume from the
database, `prov qaqc` over 10,000 recorded steps, classification latency, the task-start sweep
with 200 beans, a decision gate's pass with its system facts computed on an issue with 200 beans
(issue 24). Prints one JSON object.

    .venv/bin/python bench/harness.py [--loop 10000] [--db-loop 10000] [--only-loops] [--only-gate] [--chain 100]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import emit, log, machine, summary_ms

from predictorx.service import beans
from predictorx.service import workflow_instances as instances
from predictorx.service import workflow_sweep as sweep
from predictorx.workflowmcp import sweep_text
from predictorx.workflows import classify, qaqc
from predictorx.workflows.engine import Actor, Run
from predictorx.workflows.library import SHIPPED, load_library

HEAD = ('<?xml version="1.0"?><bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" '
        'xmlns:h="urn:cat-harness.processes" id="d" targetNamespace="x">')
AGENT = Actor("agent", "a-1", "bench", frozenset({"agent"}))


def chain(n: int) -> str:
    nodes = "".join(f'<bpmn:task id="t{i}" name="step {i}"/>' for i in range(n))
    ids = ["s", *[f"t{i}" for i in range(n)], "e"]
    flows = "".join(f'<bpmn:sequenceFlow id="f{i}" sourceRef="{a}" targetRef="{b}"/>' for i, (a, b) in
                    enumerate(zip(ids, ids[1:])))
    return (HEAD + f'<bpmn:process id="chain" isExecutable="false"><bpmn:startEvent id="s"/>{nodes}'
            f'<bpmn:endEvent id="e"/>{flows}</bpmn:process></bpmn:definitions>')


def loop() -> str:
    return (HEAD + '<bpmn:process id="loop" isExecutable="false"><bpmn:startEvent id="s"/>'
            '<bpmn:task id="work" name="work"/><bpmn:exclusiveGateway id="again" name="again?">'
            '<bpmn:extensionElements><h:decision ref="loop.dmn#more"/></bpmn:extensionElements></bpmn:exclusiveGateway>'
            '<bpmn:endEvent id="e"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="work"/>'
            '<bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="again"/>'
            '<bpmn:sequenceFlow id="f3" name="more" sourceRef="again" targetRef="work"/>'
            '<bpmn:sequenceFlow id="f4" name="done" sourceRef="again" targetRef="e"/></bpmn:process></bpmn:definitions>')


LOOP_DMN = ('<definitions xmlns="https://www.omg.org/spec/DMN/20191111/MODEL/"><decision id="more">'
            '<decisionTable hitPolicy="UNIQUE"><input><inputExpression><text>left</text></inputExpression></input>'
            '<output name="route"/><rule><inputEntry><text>&gt; 0</text></inputEntry><outputEntry><text>"more"</text>'
            '</outputEntry></rule><rule><inputEntry><text>0</text></inputEntry><outputEntry><text>"done"</text>'
            '</outputEntry></rule></decisionTable></decision></definitions>')


def step(run: Run, ref: str, **kw) -> None:
    run.apply(run.prepare(run.find(ref, AGENT), **kw))


def bench_chain(tmp: Path, n: int) -> dict:
    (tmp / "chain").mkdir()
    (tmp / "chain" / "chain.bpmn").write_text(chain(n))
    lib = load_library([tmp / "chain"])
    run = Run.start(lib, "chain")
    times, persisted = [], []
    for i in range(n):
        t0 = time.perf_counter()
        step(run, f"t{i}")
        run.enabled()
        t1 = time.perf_counter()
        state = run.dump()
        Run.load(lib, "chain", state)
        persisted.append(time.perf_counter() - t0)
        times.append(t1 - t0)
    assert run.completed
    return {"nodes": n, "complete_plus_next": summary_ms(times),
            "with_serialise_and_reload": summary_ms(persisted), "state_bytes_at_end": len(run.dump())}


def _loop_lib(tmp: Path):
    d = tmp / "loop"
    if not d.exists():
        d.mkdir()
        (d / "loop.bpmn").write_text(loop())
        (d / "loop.dmn").write_text(LOOP_DMN)
    return load_library([d])


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return round(int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)


def _per_window(times: list[float], per: int) -> list[float]:
    """steps/s in each window of `per` iterations (two steps each)."""
    return [round(2 * len(w) / sum(w), 1) for w in (times[i:i + per] for i in range(0, len(times), per))]


def bench_loop(tmp: Path, iterations: int) -> dict:
    """The engine alone, in memory: one task and one decision gate, `iterations` times round."""
    lib = _loop_lib(tmp)
    run = Run.start(lib, "loop")
    per = max(1, iterations // 10)
    times, cpu, samples = [], [], []
    done, error = 0, None
    try:
        for left in range(iterations - 1, -1, -1):
            t0, c0 = time.perf_counter(), time.process_time()
            step(run, "work")
            step(run, "again", facts={"left": left})
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            done += 1
            if done % per == 0 or done == 1:
                samples.append({"iteration": done, "state_bytes": len(run.dump()), "tasks": len(run.wf.tasks),
                                "rss_mb": _rss_mb()})
    except RecursionError as e:  # the documented bound, if it is ever hit
        error = f"RecursionError after {done} iterations: {e}"
    t1 = time.perf_counter()
    state = run.dump()
    dump_s = time.perf_counter() - t1
    t1 = time.perf_counter()
    Run.load(lib, "loop", state)
    load_s = time.perf_counter() - t1
    windows = _per_window(times, per)
    return {"iterations": done, "steps": done * 2, "steps_per_s": round(done * 2 / sum(times), 1),
            "steps_per_s_by_tenth": windows, "first_tenth_vs_last": [windows[0], windows[-1]],
            "cpu_steps_per_s_by_tenth": _per_window(cpu, per), "completed": run.completed, "error": error, "samples": samples,
            "state_bytes_at_end": len(state), "serialise_ms": round(dump_s * 1000, 2),
            "deserialise_ms": round(load_s * 1000, 2), "recursion_limit": sys.getrecursionlimit()}


def bench_db_loop(tmp: Path, iterations: int) -> dict:
    """The same loop through the service on SQLite, as the server runs it: each step loads the
    instance's state, checks, applies, stores the state and one history row, and commits."""
    from predictorx.service.auth import bootstrap_owner
    from predictorx.service.issues import create_issue
    from predictorx.store.db import Database
    from predictorx.store.schema import Issue
    from predictorx.store.workflow_schema import WorkflowInstance, WorkflowStep

    lib = _loop_lib(tmp)
    path = tmp / "loop.db"
    db = Database(f"sqlite:///{path}")
    db.migrate()
    with db.write() as s:
        _, ws, user = bootstrap_owner(s)
        issue = create_issue(s, ws.id, user.id, title="loop bench")
        inst, _ = instances.start(s, lib, issue, "loop")
        issue_id, iid = issue.id, inst.id
    per = max(1, iterations // 10)
    times, cpu, samples = [], [], []

    def take(ref: str, facts: dict | None = None) -> None:
        with db.write() as s:
            instances.complete(s, lib, s.get(Issue, issue_id), s.get(WorkflowInstance, iid), AGENT,
                               instances.Completion(ref, facts=facts or {}))

    for k, left in enumerate(range(iterations - 1, -1, -1), 1):
        t0, c0 = time.perf_counter(), time.process_time()
        take("work")
        take("again", {"left": left})
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        if k % per == 0 or k == 1:
            with db.read() as s:
                state = s.get(WorkflowInstance, iid).state
            samples.append({"iteration": k, "state_bytes": len(state), "rss_mb": _rss_mb()})
    with db.read() as s:
        inst = s.get(WorkflowInstance, iid)
        status, rows = inst.status, s.query(WorkflowStep).filter(WorkflowStep.instance_id == iid).count()
    db.dispose()
    windows = _per_window(times, per)
    return {"iterations": iterations, "steps": 2 * iterations, "steps_per_s": round(2 * iterations / sum(times), 1),
            "steps_per_s_by_tenth": windows, "first_tenth_vs_last": [windows[0], windows[-1]],
            "cpu_steps_per_s_by_tenth": _per_window(cpu, per), "status": status, "history_rows": rows, "samples": samples,
            "db_mb": round(path.stat().st_size / 2**20, 1)}


def bench_db(tmp: Path) -> dict:
    from predictorx.service import classification
    from predictorx.service.auth import bootstrap_owner
    from predictorx.service.issues import create_issue
    from predictorx.store.db import Database
    from predictorx.store.schema import Task
    from predictorx.store.workflow_schema import WorkflowInstance

    db = Database(f"sqlite:///{tmp / 'bench.db'}")
    db.migrate()
    classification.register()  # new issues are classified and routed, as the server does
    lib = load_library([SHIPPED])
    with db.write() as s:
        _, ws, user = bootstrap_owner(s)
        from predictorx.service.agents import create_agent
        agent = create_agent(s, ws.id, owner_id=user.id, name="bench", provider="command", command=["true"])
        issue = create_issue(s, ws.id, user.id, title="Add a CSV export command to the CLI", assignee="bench")
        for i in range(200):
            beans.create(s, issue, f"bean {i:03d}")
        task = s.query(Task).filter(Task.issue_id == issue.id).one()
        issue_id, task_id = issue.id, task.id
    resume = []
    for _ in range(200):
        t0 = time.perf_counter()
        with db.read() as s:
            inst = s.get(WorkflowInstance, instances.instance_id(issue_id, "feature-request"))
            instances.load_run(lib, inst).enabled()
        resume.append(time.perf_counter() - t0)
    sweeps = []
    for _ in range(50):
        t0 = time.perf_counter()
        with db.read() as s:
            out = sweep.sweep(s, lib, s.get(Task, task_id))
            sweep_text.render(out)
        sweeps.append(time.perf_counter() - t0)
    db.dispose()
    assert out["beans"]["open_total"] == 200 and agent
    return {"resume_load_and_deserialise": summary_ms(resume), "sweep_200_beans": summary_ms(sweeps)}


class _Rollback(Exception):
    """Leaves the measured pass uncommitted, so every sample passes the same gate of the same world."""


def bench_gate_facts(tmp: Path, passes: int = 200) -> dict:
    """Issue 24 item 1: feature-request's `more` gate passed through the service on an issue with
    200 beans — load the instance, compute the system facts (beans created / in progress, counted),
    evaluate beans-left.dmn, apply, record the row with its fact sources — rolled back each time."""
    from predictorx.service import workflow_facts
    from predictorx.service.auth import bootstrap_owner
    from predictorx.service.issues import create_issue
    from predictorx.store.db import Database
    from predictorx.store.schema import Agent, Issue, Task
    from predictorx.store.workflow_schema import WorkflowInstance

    db = Database(f"sqlite:///{tmp / 'gate.db'}")
    db.migrate()
    lib = load_library([SHIPPED])
    person = Actor("person", "u-1", "bench-person", frozenset({"stakeholder"}))
    with db.write() as s:
        _, ws, user = bootstrap_owner(s)
        issue = create_issue(s, ws.id, user.id, title="gate bench")
        inst, _ = instances.start(s, lib, issue, "feature-request")
        for i in range(200):
            beans.create(s, issue, f"bean {i:03d}")
        # implement is a commit boundary: the agent's run delivered its commit (as the daemon's finish records it)
        s.add(Agent(id=AGENT.id, workspace_id=ws.id, name=AGENT.name, provider="command"))
        s.flush()
        s.add(Task(workspace_id=ws.id, issue_id=issue.id, agent_id=AGENT.id, status="completed",
                   review={"branch": f"feat/{issue.number}-b", "commits": ["abc1234" + "0" * 33]}))
        s.flush()
        for ref, who, kw in [("capture", AGENT, {}), ("requirements", AGENT, {}), ("signoff", person, {}),
                             ("approved", person, {"outcome": "approved", "reason": "bench"}), ("plan-beans", AGENT, {}),
                             ("implement", AGENT, {"produced": {"bean": "bean 000", "branch": f"feat/{issue.number}-b",
                                                                "commit": "abc1234"}})]:
            instances.complete(s, lib, issue, inst, who, instances.Completion(ref, **kw))
        issue_id, iid = issue.id, inst.id
    passes_ms, cpu_ms, facts_ms, outcome = [], [], [], None
    for _ in range(passes):
        try:
            with db.write() as s:
                t0, c0 = time.perf_counter(), time.process_time()
                issue, inst = s.get(Issue, issue_id), s.get(WorkflowInstance, iid)
                row, _ = instances.complete(s, lib, issue, inst, AGENT, instances.Completion("more"))
                passes_ms.append(time.perf_counter() - t0)
                cpu_ms.append(time.process_time() - c0)
                outcome = (row.outcome, row.facts, row.fact_sources)
                t1 = time.perf_counter()
                workflow_facts.provider(s, issue, inst, None)({"beans_created", "beans_in_progress"})
                facts_ms.append(time.perf_counter() - t1)
                raise _Rollback
        except _Rollback:
            pass
    db.dispose()
    assert outcome == ("next bean", {"beans_created": 199, "beans_in_progress": 1},
                       {"beans_created": "system", "beans_in_progress": "system"}), outcome
    return {"beans": 200, "passes": passes, "outcome": outcome[0], "gate_pass": summary_ms(passes_ms),
            "gate_pass_cpu_time": summary_ms(cpu_ms),
            "system_facts_only": summary_ms(facts_ms)}


def bench_qaqc(n: int) -> dict:
    lib = load_library([SHIPPED])
    nodes = ["capture", "requirements", "signoff", "approved", "plan-beans", "implement", "more", "review"]
    rng = random.Random(7)
    records = []
    for i in range(n // 100):
        steps = []
        for seq in range(100):
            node = nodes[seq % len(nodes)]
            model_node = lib.process("feature-request").nodes[node]
            steps.append(dict(seq=seq + 1, status="done", process_id="feature-request", diagram="feature-request.bpmn",
                              diagram_digest=lib.digests["feature-request.bpmn"], node_id=node, node_name=node,
                              kind="gate" if model_node.is_deciding_gateway else "task", role=model_node.role,
                              actor_type="agent", actor_id="a", actor_name="bench",
                              actor_roles=[rng.choice(["agent", "stakeholder"])], created_at="2026-12-01T00:00:00+00:00"))
        records.append({"instance": {"id": f"i{i:04d}", "issue_number": i, "process_id": "feature-request",
                                     "diagram": "feature-request.bpmn"}, "steps": steps})
    t0 = time.perf_counter()
    rep = qaqc.report(lib, records)
    md, js = qaqc.to_markdown(rep), qaqc.to_json(rep)
    elapsed = time.perf_counter() - t0
    return {"steps": rep["steps"], "findings": len(rep["findings"]), "seconds": round(elapsed, 3),
            "markdown_kb": len(md) // 1024, "json_kb": len(js) // 1024}


def bench_classify() -> dict:
    texts = ["Add a CSV export command to the CLI", "The sync crashes with a traceback on empty files",
             "Why does the build take so long?", "Please run the QA sweep", "Import the attached report.pdf",
             "Draft the chapter on pricing", "Review section 3 of the paper", "Update the beans for this issue",
             "Penguins", "Let users sign in with SSO via the API " * 5]
    times = []
    for i in range(5000):
        t0 = time.perf_counter()
        classify.classify(texts[i % len(texts)])
        times.append(time.perf_counter() - t0)
    return summary_ms(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--loop", type=int, default=10_000)
    ap.add_argument("--db-loop", type=int, default=10_000, help="the same loop through the service on SQLite")
    ap.add_argument("--only-loops", action="store_true", help="the two loops, nothing else")
    ap.add_argument("--chain", type=int, default=100)
    ap.add_argument("--qaqc", type=int, default=10_000)
    ap.add_argument("--only-gate", action="store_true", help="the gate pass with system facts, nothing else")
    args = ap.parse_args()
    if args.only_gate:
        with tempfile.TemporaryDirectory() as d:
            emit({"machine_at_start": machine(), "gate_pass_system_facts": bench_gate_facts(Path(d)),
                  "targets": {"gate_pass_system_facts_200_beans_p99_ms": 20.0}, "machine": machine()})
        return
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        out = {"machine_at_start": machine()}
        log("loop…")
        out["engine_loop"] = bench_loop(tmp, args.loop)
        log("loop through the service on SQLite…")
        out["db_loop"] = bench_db_loop(tmp, args.db_loop)
        if args.only_loops:
            out["machine"] = machine()
            emit(out)
            return
        log("chain…")
        out["engine_chain"] = bench_chain(tmp, args.chain)
        log("database…")
        out.update(bench_db(tmp))
        log("gate pass with system facts…")
        out["gate_pass_system_facts"] = bench_gate_facts(tmp)
        log("qaqc…")
        out["qaqc"] = bench_qaqc(args.qaqc)
        log("classify…")
        out["classify"] = bench_classify()
    out["targets"] = {"qaqc_10000_steps_s": 2.0, "classify_p99_ms": 5.0, "sweep_200_beans_s": 1.0,
                      "gate_pass_system_facts_200_beans_p99_ms": 20.0}
    out["machine"] = machine()
    emit(out)


if __name__ == "__main__":
    main()
