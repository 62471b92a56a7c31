"""What a use case needs to open its own transactions: `read()` and `write()`, each a context
manager yielding a session (server/state.AppState is one; so is store.db.Database). A use case that
writes twice — a refused step recorded after the step's own transaction rolled back — or that asks
a daemon between a read and a write takes this instead of one session."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from sqlalchemy.orm import Session


class Transactions(Protocol):
    def read(self) -> AbstractContextManager[Session]: ...

    def write(self) -> AbstractContextManager[Session]: ...
