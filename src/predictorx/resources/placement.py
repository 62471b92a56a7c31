"""Where an agent runs for a task, as the project's resource types choose it (R-LD-3, R-CTX-4).

The daemon knows how to run an agent in four kinds of place; each resource type's `placement`
says which one its row asks for, and the registry's `choose_placement` picks the task's one:
- `in_place`: a folder on this machine, used as it is (a person's folder, one task at a time);
- `worktree`: a git worktree made from a folder on this machine;
- `checkout`: a checkout of a repository, from the daemon's cache of it, on the task's branch;
- `own`: an empty working directory of the task's own (nothing asked for one of the others).
A folder on this machine wins over a checkout; among equals the first resource in the project's
order wins. Pure data and a pure choice: the daemon does the work, the types decide.
"""

from __future__ import annotations

from dataclasses import dataclass

IN_PLACE = "in_place"
WORKTREE = "worktree"
CHECKOUT = "checkout"
OWN = "own"
KINDS = (IN_PLACE, WORKTREE, CHECKOUT, OWN)
RANK = {IN_PLACE: 0, WORKTREE: 0, CHECKOUT: 1}  # lower wins; `own` is what is left


@dataclass(frozen=True)
class Placement:
    kind: str                      # one of KINDS
    local_path: str | None = None  # in_place / worktree: the folder on this machine
    label: str | None = None       # the resource's label, for messages
    url: str | None = None         # checkout: the repository
    ref: str | None = None         # checkout: the ref to start from (None: its default branch)
    resource_type: str | None = None  # the type that chose it (set by `choose_placement`): its path rules apply

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"placement kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind in (IN_PLACE, WORKTREE) and not self.local_path:
            raise ValueError(f"a {self.kind} placement needs local_path")
        if self.kind == CHECKOUT and not self.url:
            raise ValueError("a checkout placement needs url")

    @property
    def on_this_machine(self) -> bool:
        """The agent works in (a worktree of) a folder that already is on the daemon's machine."""
        return self.kind in (IN_PLACE, WORKTREE)
