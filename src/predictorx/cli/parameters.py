"""A command's parameters, read from its signature (commandline.py's `Option`/`Argument`
defaults and the annotations), and a command line's words read into their values."""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

from .declare import ArgumentInfo, BadParameter, Context, OptionInfo


class Param:
    """One parameter: an option (it has `decls`), a positional argument, or the group's Context.
    (A plain class: dataclasses imports inspect, a tenth of the CLI's start.)"""

    def __init__(self, name: str, *, kind: Any = str, many: bool = False, default: Any = None,
                 required: bool = False, help: str | None = None, min: float | None = None,
                 max: float | None = None, metavar: str | None = None, is_context: bool = False) -> None:
        self.name = name  # the callback's parameter
        self.decls: tuple[str, ...] = ()  # an option's names; empty for an argument
        self.negations: tuple[str, ...] = ()  # "--no-x" of a "--x/--no-x" flag
        self.kind = kind  # str, int, float, Path, bool or an Enum
        self.many = many  # list[X]: a repeated option, or the argument that takes the rest
        self.default, self.required, self.help = default, required, help
        self.min, self.max, self.metavar = min, max, metavar
        self.is_flag = False
        self.is_context = is_context

    @property
    def is_argument(self) -> bool:
        return not self.decls and not self.is_context

    @property
    def label(self) -> str:
        return self.decls[0] if self.decls else (self.metavar or self.name.upper())

    def convert(self, word: str) -> Any:
        kind = self.kind
        if isinstance(kind, type) and issubclass(kind, Enum):
            choices = [str(c.value) for c in kind]
            if word not in choices:
                raise BadParameter(f"Invalid value for '{self.label}': '{word}' is not one of "
                                   f"{', '.join(repr(c) for c in choices)}.")
            return kind(word)
        try:
            value = kind(word)
        except ValueError:
            raise BadParameter(f"Invalid value for '{self.label}': '{word}' is not a valid "
                               f"{'integer' if kind is int else kind.__name__}.") from None
        if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
            bounds = " and ".join(b for b in (self.min is not None and f"x>={self.min}",
                                              self.max is not None and f"x<={self.max}") if b)
            raise BadParameter(f"Invalid value for '{self.label}': {word} is not in the range {bounds}.")
        return value


def parameters(callback: Callable[..., Any]) -> list[Param]:
    """The callback's parameters in order (read from its code object: inspect is slow to import),
    or from its `__signature__` where it makes its own (resourceflags.WithFieldFlags)."""
    signature = getattr(callback, "__signature__", None)
    if signature is not None:
        return [_param(p.name, ... if p.default is p.empty else p.default, p.annotation)
                for p in signature.parameters.values()]
    hints = typing.get_type_hints(callback)
    code = callback.__code__
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    positional_defaults = callback.__defaults__ or ()
    defaults = dict(zip(names[code.co_argcount - len(positional_defaults):code.co_argcount], positional_defaults))
    defaults.update(callback.__kwdefaults__ or {})
    return [_param(name, defaults.get(name, ...), hints.get(name, str)) for name in names]


def _param(name: str, default: Any, hint: Any) -> Param:
    if hint is Context:
        return Param(name, is_context=True)
    kind, optional, many = _unwrap(hint)
    # As in typer: a parameter without a default is an argument, one with a plain default an option.
    info = default if isinstance(default, (OptionInfo, ArgumentInfo)) else \
        ArgumentInfo(default, (), None, None, None, None) if default is ... else \
        OptionInfo(default, (), None, None, None, None)
    out = Param(name, kind=kind, many=many, help=info.help, min=info.min, max=info.max, metavar=info.metavar,
                required=info.default is ..., default=None if info.default is ... else info.default)
    if isinstance(info, OptionInfo):
        dashed = name.replace("_", "-")
        decls = info.decls or (f"--{dashed}" + (f"/--no-{dashed}" if kind is bool else ""),)
        names = [n for d in decls for n in d.split("/")[:1]]
        out.negations = tuple(d.split("/")[1] for d in decls if "/" in d)
        out.decls, out.is_flag = tuple(names), kind is bool
    if many and out.default is None and not optional and not out.required:
        out.default = []
    return out


def _unwrap(hint: Any) -> tuple[Any, bool, bool]:
    """(the value's type, Optional, list) of an annotation like Optional[list[Path]]."""
    optional = False
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        optional = True
        hint = next(a for a in args if a is not type(None))
    if typing.get_origin(hint) is list:
        return typing.get_args(hint)[0], optional, True
    return (hint if hint in (str, int, float, bool, Path) or (isinstance(hint, type) and issubclass(hint, Enum))
            else str), optional, False


def parse(params: list[Param], words: list[str]) -> dict[str, Any]:
    """The values of `params` that `words` give (defaults for the rest); BadParameter if they don't fit."""
    values: dict[str, Any] = {p.name: (list(p.default) if p.many and p.default is not None else p.default)
                              for p in params if not p.is_context}
    by_name = {n: p for p in params for n in (*p.decls, *p.negations)}
    given: set[str] = set()
    repeated: set[str] = set()
    positional: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            positional += words[i:]
            break
        if not word.startswith("-") or word == "-":
            positional.append(word)
            continue
        name, has_value, value = (word.partition("=") if word.startswith("--")
                                  else (word[:2], len(word) > 2, word[2:]))
        p = by_name.get(name)
        if p is None:
            raise BadParameter(f"No such option: {name}")
        given.add(p.name)
        if p.is_flag:
            if has_value:
                raise BadParameter(f"Option '{name}' does not take a value.")
            values[p.name] = name not in p.negations
            continue
        if not has_value:
            if i >= len(words):
                raise BadParameter(f"Option '{name}' requires an argument.")
            value, i = words[i], i + 1
        if p.many:
            if p.name not in repeated:  # the first one given replaces the default
                repeated.add(p.name)
                values[p.name] = []
            values[p.name].append(p.convert(value))
        else:
            values[p.name] = p.convert(value)
    _place_arguments([p for p in params if p.is_argument], positional, values)
    missing = next((p for p in params if p.required and not p.is_argument and p.name not in given), None)
    if missing is not None:
        raise BadParameter(f"Missing option '{missing.decls[0]}'.")
    return values


def _place_arguments(arguments: list[Param], words: list[str], values: dict[str, Any]) -> None:
    for n, p in enumerate(arguments):
        if p.many:
            rest = len(arguments) - n - 1
            taken, words = words[:len(words) - rest], words[len(words) - rest:]
            values[p.name] = [p.convert(w) for w in taken] if taken else p.default
        elif words:
            values[p.name], words = p.convert(words[0]), words[1:]
        elif p.required:
            raise BadParameter(f"Missing argument '{p.label}'.")
    if words:
        raise BadParameter(f"Got unexpected extra argument{'s' if len(words) > 1 else ''} ({' '.join(words)})")
