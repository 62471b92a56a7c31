"""The sqlite3 API as agents-room uses it, without the `sqlite3` package around it.

`sqlite3` is `sqlite3.dbapi2` re-exporting the C module `_sqlite3`, after importing datetime and
collections.abc for its default date and time adapters: ~4 ms of CPU at every start of a hook or
an MCP front, which Claude Code starts around every Read, Edit and Write of an in-place run (issue
30). agents-room binds only text, numbers, bytes and None, so it never needs those adapters, and
the C module is the same objects (`connect`, `Row`, `Connection`, the errors). Where a Python
build has no `_sqlite3` of its own name, the package.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time (as in queries.py)
if TYPE_CHECKING:
    import sqlite3
else:
    try:
        import _sqlite3 as sqlite3
    except ImportError:  # pragma: no cover — every CPython 3.11–3.13 has it
        import sqlite3

__all__ = ["sqlite3"]
