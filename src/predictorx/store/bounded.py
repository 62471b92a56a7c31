"""String columns hold to their length on SQLite as they do on PostgreSQL (R-SEC-8, R-SC-2).

SQLite stores text of any length in a VARCHAR(n); PostgreSQL refuses it with a DataError. So a
value that passed every SQLite test failed in production on PostgreSQL (a 250-character session
id in a 200-character column lost a finished run). Every flush checks what the ORM is about to
write against the declared lengths and raises `ValueTooLong` before any statement runs, on both
backends alike; the transaction then rolls back. Only writes are checked: looking a row up by a
long id is still just "not found".
"""

from __future__ import annotations

from sqlalchemy import String, event, inspect
from sqlalchemy.orm import Session

from ..errors import ClientError


class ValueTooLong(ClientError, ValueError):
    status = 422

    def __init__(self, table: str, column: str, length: int, limit: int):
        super().__init__(f"invalid request — {column} is {length} characters long; at most {limit} fit "
                         f"({table}.{column})")
        self.table, self.column, self.limit = table, column, limit


_LIMITS: dict = {}


def _limits(mapper) -> list[tuple[str, str, int]]:
    cached = _LIMITS.get(mapper)
    if cached is None:
        cached = _LIMITS[mapper] = [(attr.key, col.name, col.type.length)
                                    for attr in mapper.column_attrs for col in attr.columns
                                    if isinstance(col.type, String) and col.type.length]
    return cached


@event.listens_for(Session, "before_flush")
def _check_lengths(session: Session, _context, _instances) -> None:
    for obj in (*session.new, *session.dirty):
        mapper = inspect(obj).mapper
        for key, column, limit in _limits(mapper):
            value = obj.__dict__.get(key)
            if isinstance(value, str) and len(value) > limit:
                raise ValueTooLong(mapper.local_table.name, column, len(value), limit)
