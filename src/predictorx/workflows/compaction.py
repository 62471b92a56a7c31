"""Keep a running instance's SpiffWorkflow task tree the size of the work still to do.

SpiffWorkflow 3.2 keeps every finished task forever (its 1.x "loop reset" task, which pruned the
tree on a loop back, was removed in 1.2 and nothing replaced it): each iteration of a loop adds a
level to the tree, so every engine walk, the serialised state, and loading it grow with the
instance's age (bench/harness.py, CPU time: 3,700 steps/s at the start of a one-task loop, 490
after 2,000 iterations, with a 2.3 MB state). Our history does not live in the tree — every
step is a `workflow_step` row — so the finished part of the tree above the work still to do can go.

What is dropped: the finished tasks above the lowest common ancestor of all unfinished tasks
(ready, waiting, started, future and predicted ones) — every strict ancestor of that ancestor is
finished, so nothing the engine still has to run or wait on goes — except a spine: the root and,
for each task spec, its nearest occurrence on the path down to that ancestor. Spiff's engine
asks the tree above the open work only "which is my nearest ancestor of spec X" (a parallel
gateway in a loop walks up to find its inputs, even back to the start event; call and boundary
joins look up their split) and "is A an ancestor of B"; the spine answers both exactly as the
full tree did, and it is at most one task per spec of the process. Finished side branches off
the path go, including an earlier iteration's cancelled join tokens, which Spiff 3.2 otherwise
counts as arrived inputs of the next iteration's join (tests/workflows/test_compaction.py). A
completed call activity's subprocess is deleted with its task (Spiff keeps those forever too)."""

from __future__ import annotations

from SpiffWorkflow.bpmn.workflow import BpmnWorkflow
from SpiffWorkflow.util.task import TaskState


def compact(top: BpmnWorkflow) -> int:
    """Drop the finished part of each (sub)workflow's tree; returns how many tasks went."""
    dropped = 0
    for wf in (top, *list(top.subprocesses.values())):
        if wf is top or wf.parent_task_id in top.subprocesses:  # not deleted by an earlier pass
            dropped += _compact_one(top, wf)
    return dropped


def _compact_one(top: BpmnWorkflow, wf) -> int:  # BpmnWorkflow or BpmnSubWorkflow
    tasks = wf.tasks
    open_ = [t for t in tasks.values() if t._state & TaskState.NOT_FINISHED_MASK]
    if not open_:
        return 0  # completed: its caller reads its last task; dropped with the caller's task
    chain = []
    t = open_[0]
    while t is not None:
        chain.append(t.id)
        t = tasks.get(t._parent) if t._parent is not None else None
    chain.reverse()                                    # root … first open task
    index = {tid: i for i, tid in enumerate(chain)}
    lowest = len(chain) - 1
    for t in open_[1:]:
        tid = t.id
        while tid not in index:
            tid = tasks[tid]._parent
        lowest = min(lowest, index[tid])
    if lowest == 0:
        return 0                                       # not started
    path = chain[:lowest]                              # root … the parent of the common ancestor
    nearest = {tasks[tid].task_spec.name: i for i, tid in enumerate(path) if i}
    spine = [path[0], *(path[i] for i in sorted(set(nearest.values())))]
    kept = set(spine)
    stack = [chain[lowest]]                            # the common ancestor and all below it
    while stack:
        tid = stack.pop()
        kept.add(tid)
        stack.extend(tasks[tid]._children)
    if len(kept) == len(tasks):
        return 0                                       # already compact
    gone = [tid for tid in tasks if tid not in kept]
    for tid in gone:
        if tid in top.subprocesses:
            top.delete_subprocess(tasks[tid])
    for tid in gone:
        del tasks[tid]
    for parent, child in zip(spine, [*spine[1:], chain[lowest]]):
        tasks[parent]._children = [child]
        tasks[child]._parent = parent
    if wf.last_task is not None and wf.last_task.id not in kept:
        wf.last_task = tasks[spine[-1]]
    return len(gone)
