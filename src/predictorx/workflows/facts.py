"""A gate's inputs with their provenance (issue 24 item 1): *system facts* Predictor X computes at
the moment of the pass (never passed by hand), and *asserted facts* the actor gives with the pass
(recorded as asserted by that actor). Facts are per pass: nothing an earlier pass or step gave is
read again.

A decision table declares each input's source on its DMN `<input>`: `px:fact="system"` or
`px:fact="asserted"` (any namespace; the attribute's local name is `fact`). A name Predictor X
computes (SYSTEM_FACTS) is a system fact whatever the table says — a table cannot make the
world's state forgeable — and a table that declares a system fact Predictor X does not compute,
or declares one it computes as asserted, is listed as a problem (`check workflow-refs`) and its
gate refuses to evaluate. The values are computed by `service/workflow_facts.py`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

SYSTEM, ASSERTED = "system", "asserted"

# name -> what it is (shown in refusals, the sweep and docs/workflows.md)
SYSTEM_FACTS: dict[str, str] = {
    "open_beans": "beans of the issue created or in progress, counted at the pass",
    "beans_created": "beans of the issue created and not yet started, counted at the pass",
    "beans_in_progress": "beans of the issue in progress, counted at the pass",
    "beans_total": "beans of the issue, any status, counted at the pass",
    "elapsed_seconds": "seconds since the workflow instance started",
    "elapsed_hours": "hours since the workflow instance started",
    "ci_state": "check state of the pull request of the task (else the issue's latest), null where none is known",
    "review_state": "review state of that pull request, null where none is known",
    "pr_state": "state of that pull request (pushed, open, merged, closed), null where none is known",
}

SystemFacts = Callable[[set[str]], dict[str, Any]]


class FactRefused(ValueError):
    """A pass whose facts cannot be accepted; the message says why and what to do."""


@dataclass
class PassFacts:
    """What a gate read at one pass: every value, and where each came from."""
    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)   # name -> system | asserted


def declared_sources(input_names: list[str], declared: Mapping[str, str]) -> dict[str, str]:
    """Each input's source: system for a name Predictor X computes, else what the table declares
    (asserted by default)."""
    return {n: SYSTEM if n in SYSTEM_FACTS else (declared.get(n) or ASSERTED) for n in input_names}


def problems(input_names: list[str], declared: Mapping[str, str]) -> list[str]:
    out = []
    for name in input_names:
        said = declared.get(name)
        if said not in (None, SYSTEM, ASSERTED):
            out.append(f"input {name!r} declares fact={said!r}; a fact is system or asserted")
        elif said == SYSTEM and name not in SYSTEM_FACTS:
            out.append(f"input {name!r} is declared a system fact, but Predictor X computes no fact of that "
                       f"name (it computes {', '.join(sorted(SYSTEM_FACTS))})")
        elif said == ASSERTED and name in SYSTEM_FACTS:
            out.append(f"input {name!r} is declared asserted, but Predictor X computes it "
                       f"({SYSTEM_FACTS[name]}): it cannot be asserted by hand")
    return out


def refuse_system(passed: Mapping[str, Any], where: str) -> None:
    """A system fact passed by hand is refused, on any step."""
    forged = sorted(n for n in passed if n in SYSTEM_FACTS)
    if forged:
        what = "; ".join(f"{n} ({SYSTEM_FACTS[n]})" for n in forged)
        raise FactRefused(f"{where}: {', '.join(forged)} {'is a system fact' if len(forged) == 1 else 'are system facts'}"
                          f" Predictor X computes at the pass — {what}; a system fact is never passed by hand")


def gather(input_names: list[str], declared: Mapping[str, str], passed: Mapping[str, Any],
           system: SystemFacts | None, where: str) -> PassFacts:
    """The facts of one pass: system facts computed now, asserted facts from `passed` only."""
    refuse_system(passed, where)
    sources = declared_sources(input_names, declared)
    wanted = {n for n, s in sources.items() if s == SYSTEM}
    computed = system(wanted) if (system and wanted) else {}
    out = PassFacts()
    for name, source in sources.items():
        if source == SYSTEM:
            if name not in computed:
                raise FactRefused(f"{where}: system fact {name} ({SYSTEM_FACTS.get(name, 'not computed')}) "
                                  "cannot be computed here")
            out.values[name] = computed[name]
        elif name in passed:
            out.values[name] = passed[name]
        out.sources[name] = source
    for name, value in passed.items():  # asserted facts the table does not read are kept in the record
        if name not in out.sources:
            out.values[name], out.sources[name] = value, ASSERTED
    return out


def missing_asserted(input_names: list[str], declared: Mapping[str, str], passed: Mapping[str, Any]) -> list[str]:
    return [n for n, s in declared_sources(input_names, declared).items() if s == ASSERTED and n not in passed]
