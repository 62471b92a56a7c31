"""Recursive call activities, found before anything runs (issue 24 item 2).

A call activity that reaches its own process again — directly (SpiffWorkflow's own
`call_activity_level_3.bpmn`: process Level3 calls Level3) or through other processes in other
files — makes the engine start one more subprocess for every one it starts: `workflow start`
never returned. The loader refuses such a library and `check workflow-refs` reports it, each
cycle once, named from its alphabetically first process:
`recursive call activities: a (a.bpmn#call_b) → b (b.bpmn#call_a) → a`.
"""

from __future__ import annotations

from .model import ProcessModel


def _edges(processes: dict[str, ProcessModel]) -> dict[str, list[tuple[str, str]]]:
    """process id → [(call activity id, called process id)], only to processes that exist."""
    return {pid: sorted((n.id, n.called) for n in m.nodes.values() if n.called and n.called in processes)
            for pid, m in processes.items()}


def call_cycles(processes: dict[str, ProcessModel]) -> list[list[tuple[str, str]]]:
    """Every elementary cycle of the call graph as [(process id, call activity id), …], starting at
    its alphabetically smallest process; deterministic. (Johnson's enumeration is not needed: a
    library has tens of processes, and one cycle through each back edge names the problem.)"""
    edges = _edges(processes)
    found: dict[tuple[tuple[str, str], ...], list[tuple[str, str]]] = {}
    for start in sorted(edges):
        stack: list[tuple[str, int]] = [(start, 0)]
        path: list[tuple[str, str]] = []
        on_path = {start}
        while stack:
            pid, i = stack.pop()
            if i >= len(edges[pid]):
                on_path.discard(pid)
                if path:
                    path.pop()
                continue
            stack.append((pid, i + 1))
            call_id, target = edges[pid][i]
            if target == start:
                cycle = path + [(pid, call_id)]
                if min(p for p, _ in cycle) == start:
                    found.setdefault(tuple(cycle), cycle)
                continue
            if target in on_path or target < start:
                continue  # a cycle not through `start`, or found from a smaller start
            path.append((pid, call_id))
            on_path.add(target)
            stack.append((target, 0))
    return [found[k] for k in sorted(found)]


def describe(cycle: list[tuple[str, str]], processes: dict[str, ProcessModel]) -> str:
    hops = [f"{pid} ({processes[pid].diagram}#{call})" for pid, call in cycle]
    if len(cycle) == 1:
        pid, call = cycle[0]
        return (f"recursive call activity: process {pid!r} calls itself ({processes[pid].diagram}#{call}); "
                "the engine would start it again without end")
    return (f"recursive call activities: {' → '.join(hops)} → {cycle[0][0]}; "
            "the engine would start them again without end")


def problems(processes: dict[str, ProcessModel]) -> list[str]:
    return [describe(c, processes) for c in call_cycles(processes)]
