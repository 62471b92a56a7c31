"""A provider's group → workspace role rules, applied at every sign-in through it (issue 28 §1).

For each workspace a rule of the provider names, the person's role there is the highest role of
the rules their ID token's claims match. What the mapping gives is recorded (`oidc_grant`), so it
can also take it back: when no rule matches any more (a group removed at the provider), a
membership the mapping created is removed — with everything acting for it, as when an admin removes
a member — and a role it raised goes back to what it was. A membership someone added by hand is
never lowered below what they gave, and a workspace's last owner is never removed or demoted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..store.oidc_schema import OidcGrant, OidcProvider
from ..store.schema import Member
from . import members

RANK = {"member": 1, "admin": 2, "owner": 3}


@dataclass(frozen=True)
class RoleChange:
    workspace_id: str
    before: str | None
    after: str | None


def _matches(claims: dict[str, Any], rule: dict[str, str]) -> bool:
    value = claims.get(rule["claim"])
    if isinstance(value, list):
        return rule["value"] in [str(v) for v in value]
    return value is not None and str(value) == rule["value"]


def wanted_roles(provider: OidcProvider, claims: dict[str, Any]) -> dict[str, str | None]:
    """workspace id → the highest role the claims' matching rules give (None: no rule matches)."""
    wanted: dict[str, str | None] = {}
    for rule in provider.role_map or []:
        current = wanted.setdefault(rule["workspace_id"], None)
        if _matches(claims, rule) and RANK[rule["role"]] > RANK.get(current or "", 0):
            wanted[rule["workspace_id"]] = rule["role"]
    return wanted


def _owners(session: Session, workspace_id: str) -> int:
    return session.scalar(select(func.count()).select_from(Member).where(
        Member.workspace_id == workspace_id, Member.role == "owner")) or 0


def apply(session: Session, provider: OidcProvider, user_id: str, claims: dict[str, Any]) -> list[RoleChange]:
    """Bring the person's memberships in line with the provider's rules; the changes made."""
    changes = []
    for workspace_id, role in wanted_roles(provider, claims).items():
        member = session.get(Member, (workspace_id, user_id))
        grant = session.get(OidcGrant, (user_id, workspace_id))
        before = member.role if member else None
        if role is not None:
            _grant(session, provider, user_id, workspace_id, role, member, grant)
        elif grant is not None and grant.provider_id == provider.id:
            _take_back(session, member, grant)
        after = session.get(Member, (workspace_id, user_id))
        if (after.role if after else None) != before:
            changes.append(RoleChange(workspace_id, before, after.role if after else None))
    session.flush()
    return changes


def _grant(session: Session, provider: OidcProvider, user_id: str, workspace_id: str, role: str,
           member: Member | None, grant: OidcGrant | None) -> None:
    if member is None:
        session.add(Member(workspace_id=workspace_id, user_id=user_id, role=role))
        previous = None
    elif grant is None:
        if RANK[member.role] >= RANK[role]:
            return  # a membership given by hand, already this role or more: the mapping leaves it
        previous = member.role
    else:
        previous = grant.previous_role
    if member is not None and member.role != role:
        if member.role == "owner" and _owners(session, workspace_id) <= 1:
            return  # the last owner stays one
        # a hand-given role is never lowered: the mapping only lowers what it raised
        member.role = role if grant is not None or RANK[role] > RANK[member.role] else member.role
        if previous is not None and RANK[previous] > RANK[member.role]:
            member.role = previous
    if grant is None:
        session.add(OidcGrant(user_id=user_id, workspace_id=workspace_id, provider_id=provider.id, role=role,
                              previous_role=previous))
    else:
        grant.role = role


def _take_back(session: Session, member: Member | None, grant: OidcGrant) -> None:
    previous = grant.previous_role
    session.delete(grant)
    if member is None:
        return
    if member.role == "owner" and _owners(session, member.workspace_id) <= 1:
        return  # the last owner stays one
    if previous is None:
        members.drop_membership(session, member)
    else:
        member.role = previous
