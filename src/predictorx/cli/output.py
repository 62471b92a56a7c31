"""Tables for people, JSON for scripts (`--output json` on every listing and getter)."""

from __future__ import annotations

import sys
import unicodedata
from enum import Enum
from typing import Any

from .client import emit_json


# Control characters other than newline and tab would move a terminal's cursor or start an escape
# sequence from a title or a git message: shown as U+FFFD instead.
_CONTROLS = {c: "\ufffd" for c in [*range(0x20), 0x7f] if c not in (0x09, 0x0a)}


class Output(str, Enum):
    table = "table"
    json = "json"


def table(rows: list[dict[str, Any]], columns: list[tuple[str, str]], output: Output,
          empty: str = "nothing here yet") -> None:
    """Columns two spaces apart, each as wide as its widest cell; a cell's own lines stay in its
    column. Plain text (bold titles on a terminal): titles, reasons and git output are data, and a
    table needs no library (rich took a third of a command's start)."""
    if output == Output.json:
        emit_json(rows)
        return
    if not rows:
        sys.stdout.write(_style(empty, "2") + "\n")
        return
    cells = [[title for _, title in columns]] + [[_cell(row.get(key)) for key, _ in columns] for row in rows]
    widths = [max(_width(line) for r in cells for line in r[i].split("\n")) for i in range(len(columns))]
    out = []
    for n, r in enumerate(cells):
        lines = [c.split("\n") for c in r]
        for k in range(max(len(c) for c in lines)):
            parts = [_pad(c[k] if k < len(c) else "", w) for c, w in zip(lines, widths)]
            line = "  ".join(parts).rstrip()
            out.append(_style(line, "1") if n == 0 else line)
    sys.stdout.write("\n".join(out) + "\n")


def record(data: dict[str, Any], fields: list[tuple[str, str]], output: Output) -> None:
    if output == Output.json:
        emit_json(data)
        return
    width = max(len(title) for _, title in fields)
    for key, title in fields:
        value = data.get(key)
        if value not in (None, "", []):
            sys.stdout.write(f"{_style(title.ljust(width), '1')}  {_cell(value)}\n")


def _style(text: str, sgr: str) -> str:
    """Bold (1) or dim (2) on a terminal; piped output stays plain for the scripts that read it."""
    return f"\x1b[{sgr}m{text}\x1b[0m" if sys.stdout.isatty() else text


def _width(text: str) -> int:
    """Terminal columns: wide (East Asian) characters take two, combining marks none."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * (width - _width(text))


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={_cell(v)}" for k, v in value.items() if v not in (None, ""))
    return str(value).translate(_CONTROLS)
