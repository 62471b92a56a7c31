"""Rows to the JSON the API answers with (one place, so the CLI and web read one shape)."""

from __future__ import annotations

from typing import Any

from ..store import schema as s
from ..store.label_schema import Label
from .forgepolicy import policy_of


def _ts(value) -> str | None:
    return value.isoformat() if value is not None else None


def workspace(w: s.Workspace) -> dict[str, Any]:
    return {"id": w.id, "name": w.name, "slug": w.slug, "repos": list(w.repos or []),
            "created_at": _ts(w.created_at)}


def resource(r: s.ProjectResource) -> dict[str, Any]:
    return {"id": r.id, "project_id": r.project_id, "resource_type": r.resource_type,
            "resource_ref": r.resource_ref, "label": r.label, "position": r.position,
            "created_at": _ts(r.created_at), "created_by": r.created_by}


def project(p: s.Project, resources: list[s.ProjectResource] | None = None) -> dict[str, Any]:
    out = {"id": p.id, "workspace_id": p.workspace_id, "title": p.title, "description": p.description,
           "status": p.status, "priority": p.priority, "lead_id": p.lead_id,
           "forge_policy": policy_of(p), "created_at": _ts(p.created_at), "updated_at": _ts(p.updated_at)}
    if resources is not None:
        out["resources"] = [resource(r) for r in resources]
    return out


def issue(i: s.Issue, assignee_name: str | None = None) -> dict[str, Any]:
    return {"id": i.id, "workspace_id": i.workspace_id, "number": i.number, "title": i.title,
            "body": i.body, "status": i.status, "priority": i.priority, "project_id": i.project_id,
            "assignee_type": i.assignee_type, "assignee_id": i.assignee_id,
            "assignee_name": assignee_name, "created_at": _ts(i.created_at),
            "updated_at": _ts(i.updated_at), "version": i.version}


def label(x: Label) -> dict[str, Any]:
    return {"id": x.id, "name": x.name, "color": x.color}


def comment(c: s.Comment) -> dict[str, Any]:
    return {"id": c.id, "issue_id": c.issue_id, "author_type": c.author_type,
            "author_id": c.author_id, "body": c.body, "created_at": _ts(c.created_at)}


def agent(a: s.Agent) -> dict[str, Any]:
    return {"id": a.id, "workspace_id": a.workspace_id, "name": a.name, "provider": a.provider,
            "model": a.model, "instructions": a.instructions, "command": a.command,
            "max_concurrent_tasks": a.max_concurrent_tasks, "runtime_id": a.runtime_id, "sandbox": bool(a.sandbox),
            "network": a.network or "open", "allow_hosts": list(a.allow_hosts or []),
            "permissions": getattr(a, "permissions", None) or "allow",
            "ask_timeout_s": getattr(a, "ask_timeout_s", None),
            "owner_id": a.owner_id, "env_count": getattr(a, "env_count", 0) or 0,
            "mcp_servers": list(getattr(a, "mcp_servers", None) or []),
            "created_at": _ts(a.created_at), "archived": a.archived_at is not None,
            "archived_at": _ts(a.archived_at) if a.archived_at else None}


def runtime(r: s.Runtime, *, with_path: bool = True) -> dict[str, Any]:
    return {"id": r.id, "daemon_id": r.daemon_id, "provider": r.provider, "version": r.version,
            "path": r.path if with_path else None, "capabilities": list(r.capabilities or [])}


def daemon(d: s.Daemon, runtimes: list[s.Runtime], online: bool, *, viewer_id: str | None = None) -> dict[str, Any]:
    """What members need to pick a runtime or a machine for a folder. Knowing a daemon id no
    longer lets anyone act as it (bound to its owner, R-SEC-5); paths on the machine are its
    owner's business only."""
    mine = viewer_id is not None and viewer_id == d.owner_id
    return {"id": d.id, "workspace_id": d.workspace_id, "name": d.name, "hostname": d.hostname,
            "owner_id": d.owner_id, "mine": mine,
            "version": d.version, "capabilities": list(d.capabilities or []),
            "last_heartbeat_at": _ts(d.last_heartbeat_at), "online": online,
            "runtimes": [runtime(r, with_path=mine) for r in runtimes]}


def task(t: s.Task, agent_name: str | None = None, issue_number: int | None = None) -> dict[str, Any]:
    return {"id": t.id, "workspace_id": t.workspace_id, "issue_id": t.issue_id,
            "issue_number": issue_number, "agent_id": t.agent_id, "agent_name": agent_name,
            "project_id": t.project_id, "status": t.status, "wait_reason": t.wait_reason,
            "failure_reason": t.failure_reason, "branch_name": t.branch_name, "result": t.result,
            "session_id": t.session_id, "prompt": t.prompt, "daemon_id": t.daemon_id, "runtime_id": t.runtime_id,
            "attempt": t.attempt, "cancel_requested": t.cancel_requested, "pull_request_id": t.pull_request_id,
            "permission_answers": getattr(t, "permission_answers", None) or {},
            "created_at": _ts(t.created_at), "dispatched_at": _ts(t.dispatched_at),
            "started_at": _ts(t.started_at), "finished_at": _ts(t.finished_at)}


def message(m: s.TaskMessage) -> dict[str, Any]:
    return {"seq": m.seq, "kind": m.kind, "content": m.content, "created_at": _ts(m.created_at)}
