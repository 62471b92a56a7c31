"""Events a transaction wants announced once it commits (task queued, cancelled, changed …).

Services only record events on the session; the server publishes them after the commit, so a
daemon is never told about a task it cannot see yet.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session


def emit(session: Session, workspace_id: str, type_: str, **data: Any) -> None:
    session.info.setdefault("events", []).append({"workspace_id": workspace_id, "type": type_, **data})


def take(session: Session) -> list[dict[str, Any]]:
    return session.info.pop("events", [])
