"""The busiest Core statements, run straight on the psycopg connection (PostgreSQL, issue 14).

A daemon's finish-and-claim is six statements in one transaction, thousands a second across a
team. SQLAlchemy's execution layer (execution context, compiled-cache lookup, result metadata and
row objects) cost about as much server CPU as psycopg itself for each of them. Here a statement is
compiled once by SQLAlchemy (so it is still written, reviewed and typed as Core) and then run
with psycopg's cursor on the session's own connection, inside its transaction, with exactly the
parameter and result processing SQLAlchemy would apply (its bind and result processors, built once).

SQLAlchemy's path is kept wherever its extras matter: on SQLite, for a list of parameter sets,
for a statement with expanding parameters, and on a connection with event listeners (tests that
watch or EXPLAIN the statements see every one). A DBAPI error goes through SQLAlchemy's own
handling, so callers see the same exceptions (and a lost connection invalidates the pool) as before.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from sqlalchemy.engine import Connection

# (id(statement), dialect class) → _Compiled. Only statements built once at import or cached by
# their module go through here, so the cache holds a fixed set.
_compiled: dict[tuple[int, type, tuple[str, ...]], _Compiled | None] = {}


class _Compiled:
    __slots__ = ("statement", "compiled", "sql", "bind", "result", "row")

    def __init__(self, statement: Any, compiled: Any):
        self.statement = statement  # kept alive: the cache is keyed by its id
        self.compiled = compiled
        self.sql = compiled.string
        self.bind = compiled._bind_processors
        self.result: list[Any] | None = None  # per column, built at the first execution
        names = [c[0] for c in compiled._result_columns]
        self.row = _row_class(tuple(names)) if names else None

    def params(self, given: dict[str, Any]) -> dict[str, Any]:
        values = self.compiled.construct_params(given, escape_names=False)
        bind = self.bind
        return {k: bind[k](v) if k in bind else v for k, v in values.items()}


def _row_class(names: tuple[str, ...]) -> type:
    """Rows read like SQLAlchemy's: by attribute, by position and through `_mapping`."""
    base = namedtuple("Row", names, rename=True)  # type: ignore[misc]

    class Row(base):  # type: ignore[misc, valid-type]
        __slots__ = ()

        @property
        def _mapping(self) -> dict[str, Any]:
            return dict(zip(names, self))

    return Row


def _prepared(conn: Connection, statement: Any, params: dict[str, Any]) -> _Compiled | None:
    # Keyed like SQLAlchemy's own compiled cache: which parameters are given decides what an
    # INSERT or UPDATE without explicit values sets.
    key = (id(statement), type(conn.dialect), tuple(params))
    try:
        return _compiled[key]
    except KeyError:
        pass
    compiled = statement.compile(dialect=conn.dialect, column_keys=list(params))
    usable = not (compiled.positional or compiled.post_compile_params or compiled.literal_execute_params
                  or compiled.escaped_bind_names or compiled.insert_prefetch or compiled.update_prefetch)
    _compiled[key] = prepared = _Compiled(statement, compiled) if usable else None
    return prepared


def rows(conn: Connection, statement: Any, params: dict[str, Any]) -> list[Any]:
    """Execute `statement` with one set of parameters; its rows (none for a statement without
    RETURNING), as SQLAlchemy's `conn.execute(statement, params).all()` would give them."""
    direct = conn.dialect.name == "postgresql" and not (conn._has_events or conn.engine._has_events)
    prepared = _prepared(conn, statement, params) if direct else None
    if prepared is None:
        result = conn.execute(statement, params)
        return result.all() if result.returns_rows else []
    values = prepared.params(params)
    dbapi_conn = conn.connection.dbapi_connection
    try:
        with dbapi_conn.cursor() as cursor:
            cursor.execute(prepared.sql, values)
            if cursor.description is None or prepared.row is None:
                return []
            raw = cursor.fetchall()
            processors = prepared.result
            if processors is None:
                processors = prepared.result = _result_processors(conn, prepared, cursor.description)
    except conn.dialect.loaded_dbapi.Error as e:
        conn._handle_dbapi_exception(e, prepared.sql, values, None, None)  # raises SQLAlchemy's error
        raise  # not reached
    make = prepared.row._make
    if not any(processors):
        return [make(r) for r in raw]
    return [make([p(v) if p else v for p, v in zip(processors, r)]) for r in raw]


def first(conn: Connection, statement: Any, params: dict[str, Any]) -> Any | None:
    got = rows(conn, statement, params)
    return got[0] if got else None


def _result_processors(conn: Connection, prepared: _Compiled, description: Any) -> list[Any]:
    """Each column's SQLAlchemy result processor, as CursorResult builds them."""
    columns = prepared.compiled._result_columns
    if len(columns) != len(description):
        raise RuntimeError("the statement's columns and the cursor's differ")  # a bug here, not input
    return [col[3]._cached_result_processor(conn.dialect, d[1]) for col, d in zip(columns, description)]
