"""`--help` of a group or a command, and the usage line of an error (commandline.py), as plain text."""

from __future__ import annotations

import inspect
import shutil
import textwrap
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any

from .declare import command_name
from .parameters import Param

if TYPE_CHECKING:
    from .commandline import Typer


def usage_line(path: list[str], params: list[Param] | None) -> str:
    if params is None:
        return f"Usage: {' '.join(path)} [OPTIONS] COMMAND [ARGS]..."
    arguments = [(f"[{p.label}]" if not p.required else p.label) + ("..." if p.many else "")
                 for p in params if p.is_argument]
    return " ".join(["Usage:", *path, "[OPTIONS]", *arguments])


def group_help(group: Typer, path: list[str]) -> str:
    from .parameters import parameters

    params = parameters(group.registered_callback) if group.registered_callback is not None else []
    text = group.help or (inspect.cleandoc(group.registered_callback.__doc__ or "")
                          if group.registered_callback is not None else "")
    usage = usage_line(path, None) if not group.invoke_without_command else \
        f"Usage: {' '.join(path)} [OPTIONS] [COMMAND] [ARGS]..."
    rows = [(command_name(c), _first_paragraph(c.callback.__doc__)) for c in group.registered_commands]
    rows += [(g.name, _first_paragraph(g.typer_instance.summary())) for g in group.registered_groups]
    return "\n".join([usage, "", *_paragraphs(text), *_options(params), "Commands:",
                      *_rows(rows), ""])


def command_help(callback: Callable[..., Any], params: list[Param], path: list[str]) -> str:
    arguments = [(p.label, p.help or "") for p in params if p.is_argument]
    return "\n".join([usage_line(path, params), "", *_paragraphs(inspect.cleandoc(callback.__doc__ or "")),
                      *(["Arguments:", *_rows(arguments), ""] if arguments else []), *_options(params), ""])


def _options(params: list[Param]) -> list[str]:
    rows = [(_option_names(p), _option_help(p)) for p in params if p.decls]
    return ["Options:", *_rows([*rows, ("--help", "Show this message and exit.")]), ""]


def _option_names(p: Param) -> str:
    names = ", ".join(p.decls) + "".join(f" / {n}" for n in p.negations)
    if p.is_flag:
        return names
    if isinstance(p.kind, type) and issubclass(p.kind, Enum):
        return f"{names} [{'|'.join(str(c.value) for c in p.kind)}]"
    return f"{names} {p.metavar or {int: 'INTEGER', float: 'FLOAT'}.get(p.kind, 'TEXT')}"


def _option_help(p: Param) -> str:
    notes = []
    if p.required:
        notes.append("required")
    elif p.default not in (None, [], False, ""):
        notes.append(f"default: {p.default.value if isinstance(p.default, Enum) else p.default}")
    if p.min is not None or p.max is not None:
        notes.append("range: " + "<=".join(str(b) for b in (p.min, "x", p.max) if b is not None))
    if p.many:
        notes.append("repeatable")
    return " ".join([p.help or "", *(f"[{n}]" for n in notes)]).strip()


def _first_paragraph(text: str | None) -> str:
    return " ".join(inspect.cleandoc(text or "").split("\n\n")[0].split())


def _paragraphs(text: str) -> list[str]:
    width = min(shutil.get_terminal_size().columns, 100) - 2
    out = []
    for paragraph in text.split("\n\n") if text else []:
        out += [*textwrap.wrap(" ".join(paragraph.split()), width, initial_indent="  ", subsequent_indent="  "), ""]
    return out


def _rows(rows: list[tuple[str, str]]) -> list[str]:
    if not rows:
        return []
    left = min(max(len(name) for name, _ in rows), 32)
    width = max(min(shutil.get_terminal_size().columns, 100) - left - 6, 30)
    out = []
    for name, text in rows:
        lines = textwrap.wrap(text, width) or [""]
        if len(name) > left:
            out += [f"  {name}", *(f"  {'':{left}}  {line}" for line in lines)]
        else:
            out += [f"  {name:{left}}  {lines[0]}", *(f"  {'':{left}}  {line}" for line in lines[1:])]
    return out
