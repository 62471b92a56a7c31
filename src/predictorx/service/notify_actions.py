"""The notification use cases as `/api/notifications/…`, the Notifications page and `predictorx
notify` call them (issue 27 §4): a person's own channels, the workspace's (owners and admins
change them), a test message, the delivery log and redelivery. Adding, changing and removing a
channel is audited (never its URL or secret)."""

from __future__ import annotations

from typing import Any

from ..store.schema import utcnow
from . import audit, notify_channels as channels, notify_deliveries as deliveries
from .transactions import Transactions


def list_channels(tx: Transactions, workspace_id: str, user_id: str) -> list[dict[str, Any]]:
    with tx.read() as s:
        return [channels.describe(c) for c in channels.visible(s, workspace_id, user_id)]


def add_channel(tx: Transactions, workspace_id: str, user_id: str, role: str | None, fields: dict[str, Any], *,
                address: str | None = None) -> dict[str, Any]:
    """The channel; with `secret` once when the server made the webhook's signing secret."""
    with tx.write() as s:
        row, made = channels.add(s, workspace_id, user_id, role, **fields)
        out = channels.describe(row)
        audit.record(s, workspace_id=workspace_id, actor_id=user_id, action="notify.add", target=f"notify:{row.id}",
                     detail={k: out[k] for k in ("scope", "kind", "name", "label")}, address=address)
        return {**out, **({"secret": made} if made else {})}


def update_channel(tx: Transactions, workspace_id: str, user_id: str, role: str | None, channel_id: str,
                   fields: dict[str, Any], *, address: str | None = None) -> dict[str, Any]:
    with tx.write() as s:
        row = channels.update(s, channels.editable(s, workspace_id, user_id, role, channel_id), **fields)
        out = channels.describe(row)
        audit.record(s, workspace_id=workspace_id, actor_id=user_id, action="notify.update",
                     target=f"notify:{row.id}", detail={k: out[k] for k in ("scope", "name", "events", "digest",
                                                                            "enabled")}, address=address)
        return out


def remove_channel(tx: Transactions, workspace_id: str, user_id: str, role: str | None, channel_id: str, *,
                   address: str | None = None) -> dict[str, Any]:
    with tx.write() as s:
        row = channels.editable(s, workspace_id, user_id, role, channel_id)
        out = channels.describe(row)
        s.delete(row)
        audit.record(s, workspace_id=workspace_id, actor_id=user_id, action="notify.remove",
                     target=f"notify:{row.id}", detail={k: out[k] for k in ("scope", "kind", "name")}, address=address)
        return {"removed": row.id}


def test_channel(tx: Transactions, workspace_id: str, user_id: str, role: str | None,
                 channel_id: str) -> dict[str, Any]:
    """Queue a test message at once (a digest channel's too): see it in the delivery log."""
    with tx.write() as s:
        row = channels.editable(s, workspace_id, user_id, role, channel_id)
        now = utcnow()
        payload = {"event": "test", "workspace_id": workspace_id, "at": now.isoformat(),
                   "item": {"kind": "test", "title": f"a test of channel {row.name!r}", "detail": "", "link": "/"}}
        delivery = deliveries.enqueue(s, row, "test", payload, now=now)
        delivery.next_at = now
        return deliveries.describe(delivery)


def channel_log(tx: Transactions, workspace_id: str, user_id: str, channel_id: str) -> dict[str, Any]:
    with tx.read() as s:
        row = channels.get(s, workspace_id, user_id, channel_id)
        return {"channel": channels.describe(row), "deliveries": deliveries.of_channel(s, row)}


def redeliver(tx: Transactions, workspace_id: str, user_id: str, role: str | None,
              delivery_id: str) -> dict[str, Any]:
    with tx.write() as s:
        mine = {c.id for c in channels.visible(s, workspace_id, user_id)}
        row = deliveries.get(s, mine, delivery_id)
        channels.editable(s, workspace_id, user_id, role, row.channel_id)
        return deliveries.describe(deliveries.redeliver(s, row))
