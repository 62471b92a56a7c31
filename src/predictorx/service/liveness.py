"""Whether a daemon is online: it sent a heartbeat within PREDICTORX_DAEMON_TIMEOUT (R-EX-6).
The daemon and task services both ask, so the rule lives here, below both."""

from __future__ import annotations

import os
from datetime import timedelta

from ..store.schema import Daemon, utcnow


def daemon_timeout() -> timedelta:
    """How long a daemon may stay silent before it is offline and its tasks are swept (R-EX-6)."""
    return timedelta(seconds=float(os.environ.get("PREDICTORX_DAEMON_TIMEOUT", "30")))


def is_online(d: Daemon) -> bool:
    return d.last_heartbeat_at is not None and utcnow() - d.last_heartbeat_at < daemon_timeout()


def heartbeat_interval() -> timedelta:
    """How often a daemon is asked to heartbeat: a third of the timeout, so two heartbeats may be
    lost before it counts as offline. Each heartbeat is a write on the server, so no more often than
    that (every 5 s was most of an idle server's cost with a 30 s timeout, issue 30)."""
    return daemon_timeout() / 3
