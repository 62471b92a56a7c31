"""Command output read like a console (issue 26 §8): an agent's consecutive stdout lines as one
block instead of one message box each, and ANSI colours as spans.

Colours become classes (`a-f1`, `a-b4`, `a-bold` …) that px's stylesheet maps to each theme's
palette; every character of the text is escaped and every other escape sequence (cursor moves,
titles, hyperlinks) is dropped, so output can neither inject markup nor paint the page. A line
redrawn with carriage returns (a progress bar) shows its last state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape

#: A console block longer than this starts folded to its last lines, with "Show all N lines".
FOLD_LINES = 20
#: One line longer than this is cut, saying how much was left out (the raw log has it whole).
LINE_MAX_CHARS = 4000

# CSI (ESC [ … final byte), OSC (ESC ] … BEL or ESC \), any other two-byte escape, a lone ESC.
_ESCAPE = re.compile(r"\x1b\[([0-9;:?<=>]*)[ -/]*([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass
class Style:
    fg: int | None = None
    bg: int | None = None
    bold: bool = False
    dim: bool = False
    italic: bool = False
    underline: bool = False

    def classes(self) -> str:
        names = [f"a-f{self.fg}"] if self.fg is not None else []
        names += [f"a-b{self.bg}"] if self.bg is not None else []
        names += [n for n, on in (("a-bold", self.bold), ("a-dim", self.dim), ("a-it", self.italic),
                                  ("a-ul", self.underline)) if on]
        return " ".join(names)


def _extended(codes: list[int], i: int) -> tuple[int | None, int]:
    """38/48's colour (`5;n` of 256, `2;r;g;b`): the basic 16 kept, others dropped. (colour, next i)."""
    if i + 1 < len(codes) and codes[i + 1] == 5:
        n = codes[i + 2] if i + 2 < len(codes) else None
        return (n if n is not None and n < 16 else None), i + 3
    if i + 1 < len(codes) and codes[i + 1] == 2:
        return None, i + 5
    return None, i + 1


def _apply(style: Style, params: str) -> Style:
    """An SGR sequence's parameters applied to the current style."""
    codes = [int(p) if p.isdigit() else 0 for p in re.split("[;:]", params)] if params else [0]
    i = 0
    while i < len(codes):
        c = codes[i]
        if c == 0:
            style = Style()
        elif c in (1, 2, 3, 4):
            setattr(style, {1: "bold", 2: "dim", 3: "italic", 4: "underline"}[c], True)
        elif c == 22:
            style.bold = style.dim = False
        elif c in (23, 24):
            setattr(style, "italic" if c == 23 else "underline", False)
        elif 30 <= c <= 37 or 90 <= c <= 97:
            style.fg = c - 30 if c < 90 else c - 82
        elif 40 <= c <= 47 or 100 <= c <= 107:
            style.bg = c - 40 if c < 100 else c - 92
        elif c in (39, 49):
            setattr(style, "fg" if c == 39 else "bg", None)
        elif c in (38, 48):
            colour, i = _extended(codes, i)
            setattr(style, "fg" if c == 38 else "bg", colour)
            continue
        i += 1
    return style


def _last_redraw(line: str) -> str:
    """What a terminal shows of a line drawn over with carriage returns."""
    if "\r" not in line:
        return line
    parts = [p for p in line.split("\r") if p]
    return parts[-1] if parts else ""


def ansi_html(text: str) -> Markup:
    """Terminal output as escaped HTML with its colours as spans; everything else as text."""
    lines = [_last_redraw(line) for line in text.split("\n")]
    out: list[str] = []
    style = Style()
    for n, line in enumerate(lines):
        if n:
            out.append("\n")
        pos = 0
        for m in _ESCAPE.finditer(line):
            out.append(_run(line[pos:m.start()], style))
            if m.group(2) == "m":
                style = _apply(Style(**vars(style)), m.group(1) or "")
            pos = m.end()
        out.append(_run(line[pos:], style))
    return Markup("".join(out))


def plain(text: str) -> str:
    """Terminal output without its escape sequences and control characters (a one-line preview)."""
    return _CONTROL.sub("", _ESCAPE.sub("", _last_redraw(text)))


def _run(text: str, style: Style) -> str:
    if not text:
        return ""
    safe = str(escape(_CONTROL.sub("", text)))
    names = style.classes()
    return f'<span class="{names}">{safe}</span>' if names else safe


def clip_line(line: str) -> str:
    if len(line) <= LINE_MAX_CHARS:
        return line
    return f"{line[:LINE_MAX_CHARS]}… ({len(line) - LINE_MAX_CHARS:,} more characters in the run's raw log)"


# -- a transcript's console blocks ---------------------------------------------------------------

@dataclass
class ConsoleBlock:
    """Consecutive output lines of a run, shown as one console. `seq` is its last message's, as a
    message's is (the page asks for messages after the last seq it shows)."""
    first_seq: int
    seq: int
    lines: list[str] = field(default_factory=list)
    kind: str = "console"
    content: dict[str, Any] = field(default_factory=dict)

    @property
    def folded(self) -> bool:
        return len(self.lines) > FOLD_LINES


def output_line(message: Any) -> str | None:
    """The line a message carries when it is raw output: a `command` agent's plain stdout line
    (text marked stream=stdout) or a CLI's non-JSON line (system event `output`); else None."""
    content = message.content if isinstance(message.content, dict) else {}
    if message.kind == "text" and content.get("stream") == "stdout" and isinstance(content.get("text"), str):
        return content["text"]
    if message.kind == "system" and content.get("event") == "output" and isinstance(content.get("text"), str):
        return content["text"]
    return None


def blocks(messages: list[Any]) -> list[Any]:
    """Messages in order, with each run of consecutive output lines as one ConsoleBlock."""
    out: list[Any] = []
    for message in messages:
        line = output_line(message)
        if line is None:
            out.append(message)
            continue
        last = out[-1] if out else None
        if isinstance(last, ConsoleBlock):
            last.lines.append(clip_line(line))
            last.seq = message.seq
        else:
            out.append(ConsoleBlock(first_seq=message.seq, seq=message.seq, lines=[clip_line(line)]))
    return out
