"""Tables for people, JSON for scripts (`--output json` on every listing and getter)."""

from __future__ import annotations

import sys
from enum import Enum
from functools import cache
from typing import TYPE_CHECKING, Any

from .client import emit_json

if TYPE_CHECKING:
    from rich.console import Console


@cache
def console() -> Console:
    """rich, imported for a table only: `--output json` and most commands never pay for it."""
    from rich.console import Console

    # Piped output is read by scripts and people alike: never fold it to a pretend 80 columns.
    # markup=False: titles, reasons and git output are data; "[/]" in a title must print, not crash.
    return Console(highlight=False, soft_wrap=True, markup=False, width=None if sys.stdout.isatty() else 400)


class Output(str, Enum):
    table = "table"
    json = "json"


def table(rows: list[dict[str, Any]], columns: list[tuple[str, str]], output: Output,
          empty: str = "nothing here yet") -> None:
    if output == Output.json:
        emit_json(rows)
        return
    from rich.table import Table
    from rich.text import Text

    if not rows:
        console().print(Text(empty, style="dim"))
        return
    t = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for _key, title in columns:
        t.add_column(title, overflow="fold")
    for row in rows:
        t.add_row(*[Text(_cell(row.get(key))) for key, _ in columns])
    console().print(t)


def record(data: dict[str, Any], fields: list[tuple[str, str]], output: Output) -> None:
    if output == Output.json:
        emit_json(data)
        return
    from rich.text import Text

    width = max(len(title) for _, title in fields)
    for key, title in fields:
        value = data.get(key)
        if value not in (None, "", []):
            console().print(Text.assemble((title.ljust(width), "bold"), "  ", _cell(value)))


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={_cell(v)}" for k, v in value.items() if v not in (None, ""))
    return str(value)
