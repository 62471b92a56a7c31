"""The places the Settings page links to: the one list of them (issue 26 §5).

Each later issue that adds a settings page of its own (forges, budgets, notifications, the audit
log) adds one line here, so the Settings page and its links stay in one spot. `least` is the
least workspace role that sees the link (the page itself refuses the others anyway).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Place:
    href: str
    title: str
    what: str
    least: str = "member"


SETTINGS_PLACES: tuple[Place, ...] = (
    Place("/forges", "Forges", "Where agents' branches are pushed and their pull requests opened."),
    Place("/budgets", "Budgets", "How much runs may cost, and what happens when a budget is spent."),
    Place("/notifications", "Notifications", "What you are told about, and where."),
    Place("/audit", "Audit log", "Who changed members, tokens, secrets and forges, and when.", "admin"),
)
