"""Who may send the agent work through a forge: only people with write access to the repository.

On a public repository anyone can review or comment on the agent's PR; without this, anyone
could put text into the agent's prompt (prompt injection) and spend the team's agent runs. The
forge is asked (`Forge.author_may_write`) outside any transaction, and its answer, yes or no, is
kept in this process for `TTL` seconds per (connection, repository, author), so a busy PR does
not cost a request per comment. A forge that cannot be asked counts as "no" (and is not kept):
the comment is recorded as ignored, and the person can ask again from the PR panel.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Iterable

from ..forges import base as forge_api

log = logging.getLogger("predictorx.forges")

TTL = 300.0
_LIMIT = 5000  # entries kept; the oldest half goes when full

_lock = threading.Lock()
_answers: dict[tuple[str, str, str], tuple[float, bool]] = {}


def writers(connection_id: str, forge: forge_api.Forge, conn: forge_api.Connection, repo_path: str,
            authors: Iterable[tuple[str, str]], now: float | None = None) -> frozenset[str]:
    """The names among `authors` ((name, forge id) pairs) with write access to `repo_path`."""
    allowed = set()
    for name, author_id in set(authors):
        if name and may_write(connection_id, forge, conn, repo_path, name, author_id, now):
            allowed.add(name)
    return frozenset(allowed)


def may_write(connection_id: str, forge: forge_api.Forge, conn: forge_api.Connection, repo_path: str,
              author: str, author_id: str = "", now: float | None = None) -> bool:
    now = time.monotonic() if now is None else now
    key = (connection_id, repo_path, author)
    with _lock:
        kept = _answers.get(key)
    if kept is not None and now - kept[0] < TTL:
        return kept[1]
    try:
        answer = bool(forge.author_may_write(conn, forge_api.RepoRef(repo_path), author, author_id))
    except forge_api.ForgeError as e:
        log.warning("could not ask whether %s may write to %s: %s", author, repo_path, e)
        return False
    with _lock:
        if len(_answers) >= _LIMIT:
            for old in sorted(_answers, key=lambda k: _answers[k][0])[: _LIMIT // 2]:
                del _answers[old]
        _answers[key] = (now, answer)
    return answer


def forget() -> None:
    """Drop every kept answer (a connection's credential changed; tests)."""
    with _lock:
        _answers.clear()
