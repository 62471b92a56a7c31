"""A project's forge policy (issue 22 §2, §3, §5, §6): how its agents' branches reach a forge.

Stored as `Project.forge_policy` (JSON, only what was set); read through `policy_of`, which
fills the defaults, so a project that never set anything pushes at run end, opens a draft pull
request, allows 3 automatic follow-ups per pull request and moves its issue to done on merge.
"""

from __future__ import annotations

from typing import Any

from ..store.schema import Project
from .errors import Invalid

DEFAULTS: dict[str, Any] = {"auto_push": True, "auto_pr": True, "draft": True, "max_followups": 3,
                            "on_merge": "done"}
ON_MERGE = ("done", "in_review")
MAX_FOLLOWUPS_LIMIT = 20
FLAGS = ("auto_push", "auto_pr", "draft")


def policy_of(project: Project) -> dict[str, Any]:
    """The whole policy: what the project set over the defaults (unknown stored keys dropped)."""
    stored = project.forge_policy or {}
    return {key: stored.get(key, default) for key, default in DEFAULTS.items()}


def _checked(key: str, value: Any) -> Any:
    if key in FLAGS:
        if not isinstance(value, bool):
            raise Invalid(f"forge policy {key} must be true or false")
        return value
    if key == "max_followups":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_FOLLOWUPS_LIMIT:
            raise Invalid(f"forge policy max_followups must be a whole number from 0 to {MAX_FOLLOWUPS_LIMIT} "
                          "(automatic follow-ups per pull request before a person is asked)")
        return value
    if key == "on_merge":
        if value not in ON_MERGE:
            raise Invalid(f"forge policy on_merge must be one of {', '.join(ON_MERGE)} "
                          "(where an issue goes when its pull request merges)")
        return value
    raise Invalid(f"forge policy has no setting {key!r}; the settings are {', '.join(DEFAULTS)}")


def set_policy(project: Project, changes: dict[str, Any]) -> dict[str, Any]:
    """Check every change first (one bad value changes nothing), then store them; a value of
    None returns that setting to its default. The whole policy after the change."""
    if not isinstance(changes, dict):
        raise Invalid("forge_policy must be a JSON object")
    checked = {key: None if value is None else _checked(key, value) for key, value in changes.items()}
    stored = dict(project.forge_policy or {})
    for key, value in checked.items():
        if value is None:
            stored.pop(key, None)
        else:
            stored[key] = value
    project.forge_policy = stored or None
    return policy_of(project)
