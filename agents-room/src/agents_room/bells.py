"""Doorbells: files a hook's shell tests before it starts Python (issue 30).

A headless run's hooks (``run-config``) start a Python process only when there may be something for
them to do. Beside the store, in ``bells/`` (0700; files 0600, empty):

* ``<session>`` — the session may have something due: an unread delivery (a tool event offers it on
  every call until it is read), a held lease not yet told of its expiry, a Stop hold to let through,
  a wake waiter to stand down. Its PostToolUse (``*``) and Stop hooks run only when it exists.
* ``<session>.read`` — the session has recorded a read: its PreToolUse may find a file changed since.
* ``.leases`` — some session may hold a live lease: a PreToolUse may find one on the file.

Writers ring after their transaction commits (:class:`agents_room.store.immediate` rings what a
transaction asked for once it has committed). A bell is silenced only inside a write transaction
that finds nothing due (:func:`settle_bell`): no writer can commit in between, and one that
commits later rings later, so a bell is never absent while something is due — except between a
writer's commit and its ring, which is the same as that writer coming a moment later. A failure
leaves a bell rung: one Python start too many, never a nudge lost.
"""

from __future__ import annotations

import os

from .store import immediate

TYPE_CHECKING = False  # typing stays off the hooks' path
if TYPE_CHECKING:
    from collections.abc import Callable

    from .queries import RoomBase

FOLDER = "bells"
LEASES = ".leases"
READ_SUFFIX = ".read"
FOLDER_MODE = 0o700
FILE_MODE = 0o600


def folder_of(db_file: str | None) -> str | None:
    """The bells folder beside the store file, or None (an in-memory store has none)."""
    if not db_file or db_file == ":memory:":
        return None
    return os.path.join(os.path.dirname(db_file), FOLDER)


def path(folder: str, name: str) -> str:
    return os.path.join(folder, name)


def ring(folder: str, name: str) -> None:
    """Create the bell ``name`` (and its folder); a failure is silent (the hook then finds none)."""
    if not name or "/" in name or name in (".", ".."):
        return
    target = os.path.join(folder, name)
    for _ in range(2):
        try:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), FILE_MODE))
            return
        except FileNotFoundError:
            try:
                os.mkdir(folder, FOLDER_MODE)
            except FileExistsError:
                pass
            except OSError:
                return
        except OSError:
            return


def ready(folder: str | None) -> bool:
    """Make the bells folder (0700) if it is not there; whether bells can be rung in it. A run's hooks
    are gated only when they can: a bell that cannot ring would lose every nudge."""
    if folder is None:
        return False
    try:
        os.mkdir(folder, FOLDER_MODE)
    except FileExistsError:
        pass
    except OSError:
        return False
    return os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK)


def silence(target: str) -> None:
    try:
        os.unlink(target)
    except OSError:
        pass


def bell_due(room: RoomBase, session: str) -> bool:
    """Is anything due for ``session`` that its PostToolUse or Stop hook acts on? (See
    :meth:`~agents_room.delivery.Delivery.pending`, ``stop_check``, ``tool_seen`` and
    ``_lease_notices``.)"""
    now = room.clock()
    if room.conn.execute(room._PENDING_SQL + " LIMIT 1", (session, now)).fetchone() is not None:
        return True
    if room.conn.execute("SELECT 1 FROM leases WHERE session_id=? AND notified=0 LIMIT 1", (session,)).fetchone():
        return True
    row = room.conn.execute("SELECT stop_block_pending, wake_waiter FROM sessions WHERE id=?", (session,)).fetchone()
    return row is not None and (bool(row[0]) or row[1] is not None)


def settle_bell(room: RoomBase, session: str) -> None:
    """Silence ``session``'s bell if nothing is due, deciding inside a write transaction."""
    _settle(room, session, lambda: bell_due(room, session))


def settle_leases_bell(room: RoomBase) -> None:
    """Silence ``.leases`` if no session holds a live lease, deciding inside a write transaction."""
    _settle(room, LEASES, lambda: room.conn.execute(
        "SELECT 1 FROM leases WHERE expires_at>? LIMIT 1", (room.clock(),)).fetchone() is not None)


def _settle(room: RoomBase, name: str, due: Callable[[], bool]) -> None:
    """Silence the bell ``name`` if ``due()`` says nothing is, asked inside a write transaction (no
    writer commits in between; one that commits later rings later)."""
    folder = room.bell_folder()
    if folder is None:
        return
    target = path(folder, name)
    if not os.path.exists(target):
        return
    with immediate(room.conn):
        if not due():
            silence(target)


def prune_bells(room: RoomBase) -> int:
    """Silence the bells of sessions that are gone from the store or have nothing due; the
    ``.read`` marks of sessions no longer in it. Returns how many were removed."""
    folder = room.bell_folder()
    if folder is None:
        return 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    removed = 0
    with immediate(room.conn):
        known = {r[0] for r in room.conn.execute("SELECT id FROM sessions")}
        for name in names:
            sid = name[: -len(READ_SUFFIX)] if name.endswith(READ_SUFFIX) else name
            if name == LEASES or (sid in known and (name != sid or bell_due(room, sid))):
                continue
            silence(path(folder, name))
            removed += 1
    return removed
