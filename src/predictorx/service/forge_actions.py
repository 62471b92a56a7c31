"""The forge-connection use cases as `/api/forges` and Settings → Forges both call them (issue 22
§1): each opens its own transaction (service/transactions.py) and answers a plain dict. No answer
carries a credential; the webhook secret is in the answer to add and to rotate only.
"""

from __future__ import annotations

from typing import Any

from . import audit
from . import forges as svc
from .transactions import Transactions


def _with_secret(described: dict, secret: str) -> dict:
    return {**described, "webhook_secret": secret,
            "webhook_secret_note": "shown once: paste it into the forge's webhook settings now, with the "
                                   "webhook_url; `predictorx forge rotate-webhook-secret` makes a new one"}


def list_connections(tx: Transactions, workspace_id: str, base: str | None) -> list[dict]:
    with tx.read() as s:
        return [svc.describe(row, base) for row in svc.list_connections(s, workspace_id)]


def describe_connection(tx: Transactions, workspace_id: str, ref: str, base: str | None) -> dict:
    with tx.read() as s:
        return svc.describe(svc.get_connection(s, workspace_id, ref), base)


def _audit(s: Any, row: Any, action: str, actor_id: str | None, address: str | None, detail: dict | None = None) -> None:
    audit.record(s, workspace_id=row.workspace_id, actor_id=actor_id, action=action, target=f"forge {row.name}",
                 detail={"kind": row.kind, "base_url": row.base_url, **(detail or {})}, address=address)


def add_connection(tx: Transactions, workspace_id: str, user_id: str | None, fields: dict[str, Any],
                   base: str, *, address: str | None = None) -> dict:
    with tx.write() as s:
        row, secret = svc.add_connection(s, workspace_id, user_id, **fields)
        _audit(s, row, "forge.add", user_id, address, {"members_may_merge": bool(row.members_may_merge)})
        return _with_secret(svc.describe(row, base), secret)


def update_connection(tx: Transactions, workspace_id: str, ref: str, changes: dict[str, Any], base: str, *,
                      actor_id: str | None = None, address: str | None = None) -> dict:
    with tx.write() as s:
        row = svc.get_connection(s, workspace_id, ref)
        svc.update_connection(s, row, **changes)
        # What changed, by name: a new credential is said to be new, never shown.
        _audit(s, row, "forge.update", actor_id, address, {"changed": sorted(changes)})
        return svc.describe(row, base)


def remove_connection(tx: Transactions, workspace_id: str, ref: str, *, actor_id: str | None = None,
                      address: str | None = None) -> dict:
    with tx.write() as s:
        row = svc.get_connection(s, workspace_id, ref)
        name = row.name
        _audit(s, row, "forge.remove", actor_id, address)
        finished = svc.remove_connection(s, row)
    said = f"; with it the records of {finished} finished pull request(s)" if finished else ""
    return {"removed": name, "finished_pull_requests_removed": finished,
            "message": f"removed forge connection {name}{said}"}


def check_connection(tx: Transactions, workspace_id: str, ref: str) -> dict:
    with tx.read() as s:  # the token is opened after the session ends: no transaction waits on a forge
        row = svc.get_connection(s, workspace_id, ref)
        kind, name = row.kind, row.name
        conn = svc.connection_of(row)
    account = svc.check_connection(kind, conn)
    return {"ok": True, "name": name, "kind": kind, "account": account,
            "message": f"{name}: the token works; it acts as {account}"}


def rotate_webhook_secret(tx: Transactions, workspace_id: str, ref: str, base: str, *, actor_id: str | None = None,
                          address: str | None = None) -> dict:
    with tx.write() as s:
        row = svc.get_connection(s, workspace_id, ref)
        secret = svc.rotate_webhook_secret(s, row)
        _audit(s, row, "forge.webhook_secret", actor_id, address)
        return _with_secret(svc.describe(row, base), secret)
