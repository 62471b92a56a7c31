"""An agent's environment and secrets (issue 28 §2; docs/security.md "Agent secrets").

Variables an agent's runs get in their environment: the agent's own, set by its owner (the person
whose machines run it), and workspace secrets that owners and admins keep and grant to agents by
name. Every value is stored sealed (service/secretbox.py: AES-256-GCM bound to its row; rotated by
`predictorx server rotate-key` with every other `*_sealed` column). A secret is write-only: it is
listed by name and, when long enough not to give much away, its last four characters; a plain
variable (`secret=False`) is shown as it is and not masked.

Values leave the server in one place only: `for_claim`, inside the claim answer for a run of the
agent, to a daemon of the agent's own owner (the claim hands an agent's tasks to no other daemon;
this checks it again). The daemon puts them into the agent's environment and masks the secrets in
all it uploads (daemon/secretmask.py). Setting, unsetting, granting and revoking are audited
(service/audit.py), never with a value.

A workspace secret never has the name of a runtime setting (envnames.py: NODE_OPTIONS,
ANTHROPIC_BASE_URL, a model, a proxy …): an admin grants it, and what runs on a member's machine
only the member decides. Only the agent's owner sets one, as the agent's own variable; a grant of
one made before this check is left out of the claim.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from .. import envnames
from ..store.schema import Agent, Daemon, EnvGrant, EnvVar, new_id
from . import audit, secretbox, tasks
from .errors import Forbidden, Invalid, NotFound

WORKSPACE = "workspace"
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
MAX_VALUE = 64 * 1024
#: A secret shorter than this cannot be masked without wrecking the agent's output.
MIN_SECRET = 4
#: Only a secret at least this long shows its last four characters.
SHOW_LAST4_FROM = 12


def check_name(name: str) -> str:
    if not NAME_RE.fullmatch(name or ""):
        raise Invalid(f"{name!r} is not an environment variable name: letters, digits and _, not starting with a digit")
    if envnames.reserved(name):
        raise Invalid(f"{name} is set by Predictor X itself (or changes how the sandbox starts); pick another name")
    return name


def check_grantable(name: str) -> str:
    """A workspace secret's name: no runtime setting (envnames.py), which only an agent's owner sets."""
    check_name(name)
    if envnames.runtime_setting(name):
        raise Invalid(f"{name} changes how an agent's runtime or CLI behaves (what it runs, which model, where its "
                      "key goes), so it cannot be a workspace secret or be granted: it belongs in the agent's own "
                      f"configuration, which only its owner changes (`predictorx agent env set AGENT {name}=…`)")
    return name


def _check_value(name: str, value: str, secret: bool) -> None:
    if "\0" in value:
        raise Invalid(f"the value of {name} holds a NUL character, which no environment variable can")
    if len(value.encode()) > MAX_VALUE:
        raise Invalid(f"the value of {name} is over {MAX_VALUE // 1024} KiB")
    if secret and len(value) < MIN_SECRET:
        raise Invalid(f"a secret of under {MIN_SECRET} characters cannot be masked in the agent's output; "
                      f"set {name} as a plain variable if it is not secret")


def _last4(value: str, secret: bool) -> str:
    if not secret:
        return ""
    return value[-4:] if len(value) >= SHOW_LAST4_FROM else ""


def describe(var: EnvVar, *, granted: bool = False) -> dict[str, Any]:
    """What anyone is ever shown of a variable: a secret's value never."""
    out: dict[str, Any] = {"name": var.name, "secret": bool(var.secret), "scope": "workspace" if var.agent_id is None
                           else "agent", "granted": granted, "updated_at": var.updated_at.isoformat()}
    if var.secret:
        out["last4"] = var.last4 or None
    else:
        out["value"] = secretbox.unseal_from(var, "value_sealed")
    return out


# -- who may ----------------------------------------------------------------------------------------

def _require_agent_owner(agent: Agent, actor_id: str | None) -> None:
    if agent.owner_id is None or agent.owner_id != actor_id:
        raise Forbidden(f"agent {agent.name} is another member's: only its owner sets its variables and secrets")


def _require_owner_or_admin(agent: Agent, actor_id: str | None, role: str | None) -> None:
    if role not in ("owner", "admin") and (agent.owner_id is None or agent.owner_id != actor_id):
        raise Forbidden(f"agent {agent.name} is another member's: only its owner or a workspace admin sees or "
                        "removes its variables")


def _require_admin(role: str | None) -> None:
    if role not in ("owner", "admin"):
        raise Forbidden("only a workspace owner or admin manages workspace secrets and grants them to agents")


# -- an agent's own -------------------------------------------------------------------------------

def _own(session: Session, agent: Agent, name: str) -> EnvVar | None:
    return session.scalar(select(EnvVar).where(EnvVar.workspace_id == agent.workspace_id, EnvVar.scope == agent.id,
                                               EnvVar.name == name))


def _granted(session: Session, agent: Agent) -> list[EnvVar]:
    return list(session.scalars(select(EnvVar).join(EnvGrant, EnvGrant.env_var_id == EnvVar.id)
                                .where(EnvGrant.agent_id == agent.id).order_by(EnvVar.name)))


def list_for_agent(session: Session, agent: Agent, *, actor_id: str | None, role: str | None) -> list[dict[str, Any]]:
    _require_owner_or_admin(agent, actor_id, role)
    own = session.scalars(select(EnvVar).where(EnvVar.scope == agent.id, EnvVar.workspace_id == agent.workspace_id)
                          .order_by(EnvVar.name))
    return [describe(v) for v in own] + [{**describe(v, granted=True), "withheld": envnames.runtime_setting(v.name)}
                                         for v in _granted(session, agent)]


def _recount(session: Session, agent_ids: list[str]) -> None:
    session.flush()
    for agent_id in agent_ids:
        own = session.scalar(select(func.count()).select_from(EnvVar).where(EnvVar.agent_id == agent_id)) or 0
        granted = session.scalar(select(func.count()).select_from(EnvGrant).where(EnvGrant.agent_id == agent_id)) or 0
        agent = session.get(Agent, agent_id)
        if agent is not None:
            agent.env_count = own + granted
    session.flush()


def _store(session: Session, workspace_id: str, scope: str, agent_id: str | None, name: str, value: str,
           secret: bool, actor_id: str | None) -> tuple[EnvVar, bool]:
    """(the row, whether it is new)."""
    _check_value(name, value, secret)
    var = session.scalar(select(EnvVar).where(EnvVar.workspace_id == workspace_id, EnvVar.scope == scope,
                                              EnvVar.name == name).with_for_update())
    created = var is None
    if var is None:
        var = EnvVar(id=new_id(), workspace_id=workspace_id, scope=scope, agent_id=agent_id, name=name,
                     created_by=actor_id)
        session.add(var)
    var.secret, var.last4, var.updated_by = secret, _last4(value, secret), actor_id
    secretbox.seal_into(var, "value_sealed", value)
    session.flush()
    return var, created


def set_for_agent(session: Session, agent: Agent, *, actor_id: str | None, name: str, value: str, secret: bool,
                  address: str | None = None) -> dict[str, Any]:
    """Set (or replace) one of the agent's variables. Only its owner may: the value goes to their machines."""
    _require_agent_owner(agent, actor_id)
    check_name(name)
    var, created = _store(session, agent.workspace_id, agent.id, agent.id, name, value, secret, actor_id)
    _recount(session, [agent.id])
    audit.record(session, workspace_id=agent.workspace_id, actor_id=actor_id, action="secret.set",
                 target=f"agent {agent.name}: {name}",
                 detail={"agent": agent.name, "name": name, "secret": secret, "new": created}, address=address)
    return describe(var)


def unset_for_agent(session: Session, agent: Agent, *, actor_id: str | None, role: str | None, name: str,
                    address: str | None = None) -> None:
    _require_owner_or_admin(agent, actor_id, role)
    var = _own(session, agent, name)
    if var is None:
        raise NotFound(f"agent {agent.name} has no variable {name}")
    session.delete(var)
    _recount(session, [agent.id])
    audit.record(session, workspace_id=agent.workspace_id, actor_id=actor_id, action="secret.unset",
                 target=f"agent {agent.name}: {name}", detail={"agent": agent.name, "name": name}, address=address)


# -- workspace secrets and grants ---------------------------------------------------------------------

def _workspace_var(session: Session, workspace_id: str, name: str) -> EnvVar:
    var = session.scalar(select(EnvVar).where(EnvVar.workspace_id == workspace_id, EnvVar.scope == WORKSPACE,
                                              EnvVar.name == name))
    if var is None:
        raise NotFound(f"no workspace secret {name}")
    return var


def list_workspace(session: Session, workspace_id: str, *, role: str | None) -> list[dict[str, Any]]:
    _require_admin(role)
    rows = session.scalars(select(EnvVar).where(EnvVar.workspace_id == workspace_id, EnvVar.scope == WORKSPACE)
                           .order_by(EnvVar.name))
    out = []
    for var in rows:
        agents = session.scalars(select(Agent.name).join(EnvGrant, EnvGrant.agent_id == Agent.id)
                                 .where(EnvGrant.env_var_id == var.id).order_by(Agent.name))
        # (not grantable: a runtime setting stored before `check_grantable`, left out of every claim)
        out.append({**describe(var), "agents": list(agents), "grantable": not envnames.runtime_setting(var.name)})
    return out


def set_workspace(session: Session, workspace_id: str, *, actor_id: str | None, role: str | None, name: str,
                  value: str, secret: bool = True, address: str | None = None) -> dict[str, Any]:
    _require_admin(role)
    check_grantable(name)
    var, created = _store(session, workspace_id, WORKSPACE, None, name, value, secret, actor_id)
    audit.record(session, workspace_id=workspace_id, actor_id=actor_id, action="secret.set",
                 target=f"workspace: {name}", detail={"name": name, "secret": secret, "new": created}, address=address)
    return describe(var)


def unset_workspace(session: Session, workspace_id: str, *, actor_id: str | None, role: str | None, name: str,
                    address: str | None = None) -> None:
    _require_admin(role)
    var = _workspace_var(session, workspace_id, name)
    granted = list(session.scalars(select(EnvGrant.agent_id).where(EnvGrant.env_var_id == var.id)))
    for grant in session.scalars(select(EnvGrant).where(EnvGrant.env_var_id == var.id)):
        session.delete(grant)
    session.delete(var)
    _recount(session, granted)
    audit.record(session, workspace_id=workspace_id, actor_id=actor_id, action="secret.unset",
                 target=f"workspace: {name}", detail={"name": name, "agents_granted": len(granted)}, address=address)


def grant(session: Session, agent: Agent, *, actor_id: str | None, role: str | None, name: str,
          address: str | None = None) -> None:
    _require_admin(role)
    check_grantable(name)
    var = _workspace_var(session, agent.workspace_id, name)
    if _own(session, agent, name) is not None:
        raise Invalid(f"agent {agent.name} has a variable {name} of its own; unset it first")
    if session.get(EnvGrant, (agent.id, var.id)) is None:
        session.add(EnvGrant(agent_id=agent.id, env_var_id=var.id, created_by=actor_id))
        _recount(session, [agent.id])
        audit.record(session, workspace_id=agent.workspace_id, actor_id=actor_id, action="secret.grant",
                     target=f"agent {agent.name}: {name}", detail={"agent": agent.name, "name": name}, address=address)


def revoke(session: Session, agent: Agent, *, actor_id: str | None, role: str | None, name: str,
           address: str | None = None) -> None:
    _require_admin(role)
    var = _workspace_var(session, agent.workspace_id, name)
    row = session.get(EnvGrant, (agent.id, var.id))
    if row is None:
        raise NotFound(f"workspace secret {name} is not granted to agent {agent.name}")
    session.delete(row)
    _recount(session, [agent.id])
    audit.record(session, workspace_id=agent.workspace_id, actor_id=actor_id, action="secret.revoke",
                 target=f"agent {agent.name}: {name}", detail={"agent": agent.name, "name": name}, address=address)


# -- the claim --------------------------------------------------------------------------------------

def secret_values(session: Session, agent_id: str | None) -> list[str]:
    """The values of the secrets a run of `agent_id` receives (its own and those granted to it),
    for masking what the agent sends back; none without a query for an agent with no variables."""
    agent = session.get(Agent, agent_id) if agent_id else None
    if agent is None or not agent.env_count:
        return []
    rows = list(session.scalars(select(EnvVar).where(EnvVar.agent_id == agent.id, EnvVar.secret.is_(True))))
    rows += session.scalars(select(EnvVar).join(EnvGrant, EnvGrant.env_var_id == EnvVar.id)
                            .where(EnvGrant.agent_id == agent.id, EnvVar.secret.is_(True)))
    values = []
    for row in rows:
        try:
            values.append(secretbox.unseal_from(row, "value_sealed"))
        except secretbox.SecretError:
            continue  # (cannot be opened here: its runs are refused, so it never reached the agent)
    return values


def with_env(session: Session, daemon_id: str | None, claimed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The claim's tasks, each with its agent's variables (`env`, when it has some). A task whose
    variables cannot be opened (a key this server lacks, a damaged value) is not run without
    them: it ends cancelled, saying why, and the claim's other tasks go ahead."""
    kept = []
    for c in claimed:
        try:
            env = for_claim(session, daemon_id, c["agent"])
        except secretbox.SecretError as e:
            tasks.refuse_claimed(session, c["task"].id, f"the variables of agent {c['agent'].name} cannot be opened "
                                 f"({e.message}); set them again, or give this server its key")
            continue
        kept.append({**c, "env": env} if env else c)
    return kept


def for_claim(session: Session, daemon_id: str | None, agent: Any) -> list[dict[str, Any]] | None:
    """The variables of a run of `agent` claimed by `daemon_id`: [{name, value, secret, scope}], or
    None when it has none (the usual claim: no query at all). Only to a daemon of the agent's owner;
    a grant of a runtime setting (made before `check_grantable`) is left out."""
    if not getattr(agent, "env_count", 0):
        return None
    owner = session.scalar(select(Daemon.owner_id).where(Daemon.id == daemon_id))
    if owner is None or owner != agent.owner_id:
        return None
    own = list(session.scalars(select(EnvVar).where(EnvVar.agent_id == agent.id)))
    granted = list(session.scalars(select(EnvVar).join(EnvGrant, EnvGrant.env_var_id == EnvVar.id)
                                   .where(EnvGrant.agent_id == agent.id, EnvVar.workspace_id == agent.workspace_id)))
    names = {v.name for v in own}
    out = [{"name": v.name, "value": secretbox.unseal_from(v, "value_sealed"), "secret": bool(v.secret),
            "scope": "agent"} for v in own]
    out += [{"name": g.name, "value": secretbox.unseal_from(g, "value_sealed"), "secret": bool(g.secret),
             "scope": WORKSPACE} for g in granted if g.name not in names and not envnames.runtime_setting(g.name)]
    return out or None
