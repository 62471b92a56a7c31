"""The command line's declarations, read and run: the part of typer's API the CLI uses
(`Typer`, `Option`, `Argument`, `echo`, `Exit`, …), so the command modules read as typer code
(`from . import commandline as typer`), without typer's start-up.

Why not typer itself: people and agents run `predictorx` all day, and typer 0.29 imports pydantic
and builds a pydantic TypeAdapter for every parameter of every command it knows before it runs
one — over 100 ms of a one-request command's ~170 ms of CPU (issue 23, item 9). This module
imports nothing but the standard library's lightest modules; a command's parameters are read from
its signature only when that command runs (or its help is asked for).

What it understands is what the commands use: options with a value, repeated options (`list[X]`),
flags (`--x`, `--x/--no-x`), positional arguments (one may be a `list[X]` that takes the rest),
`str`, `int`, `float`, `Path`, `bool` and `Enum` values, `min=`/`max=`, required ones (`...`), group
callbacks with `invoke_without_command`, and `--help` at every level. A usage error prints as
click did (`Usage: …`, `Try '… --help' for help.`, `Error: …`) and exits 2.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from .declare import (  # noqa: F401  (typer's names, for the command modules: `typer.Option`, …)
    Abort,
    Argument,
    ArgumentInfo,
    BadParameter,
    CommandInfo,
    Context,
    Exit,
    GroupInfo,
    Option,
    OptionInfo,
    command_name,
)

PROG = "predictorx"


class UsageError(Exception):
    """A command line that does not fit: of the group at `path`, or of its command (with `params`)."""

    def __init__(self, message: str, path: list[str], params: list[Any] | None = None) -> None:
        super().__init__(message)
        self.message, self.path, self.params = message, path, params


class Typer:
    """A group of commands (and groups); calling it runs the command line `args` names."""

    def __init__(self, *, help: str | None = None, no_args_is_help: bool = False,
                 invoke_without_command: bool = False, add_completion: bool = False,
                 pretty_exceptions_enable: bool = False) -> None:
        self.help, self.no_args_is_help = help, no_args_is_help
        self.invoke_without_command = invoke_without_command
        self.registered_commands: list[CommandInfo] = []
        self.registered_groups: list[GroupInfo] = []
        self.registered_callback: Callable[..., Any] | None = None

    def command(self, name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(callback: Callable[..., Any]) -> Callable[..., Any]:
            self.registered_commands.append(CommandInfo(name, callback))
            return callback
        return register

    def callback(self, invoke_without_command: bool | None = None
                 ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(callback: Callable[..., Any]) -> Callable[..., Any]:
            self.registered_callback = callback
            if invoke_without_command is not None:
                self.invoke_without_command = invoke_without_command
            return callback
        return register

    def add_typer(self, group: Typer, *, name: str) -> None:
        self.registered_groups.append(GroupInfo(name, group))

    def find(self, name: str) -> Callable[..., Any] | Typer | None:
        for command in self.registered_commands:
            if command_name(command) == name:
                return command.callback
        return next((g.typer_instance for g in self.registered_groups if g.name == name), None)

    def summary(self) -> str:
        return self.help or _doc(self.registered_callback)

    def __call__(self, args: list[str] | None = None, standalone_mode: bool = True) -> None:
        """Run the command line, then leave as click did: SystemExit(0) after a command that returned."""
        try:
            _run_group(self, [PROG], list(sys.argv[1:] if args is None else args))
            if standalone_mode:
                sys.exit(0)
        except UsageError as e:
            from .commandhelp import usage_line

            sys.stderr.write(f"{usage_line(e.path, e.params)}\nTry '{' '.join(e.path)} --help' for help.\n\n"
                             f"Error: {e.message}\n")
            sys.exit(2)
        except Exit as e:
            sys.exit(e.exit_code)
        except (Abort, KeyboardInterrupt, EOFError):
            sys.stderr.write("\nAborted!\n")
            sys.exit(1)


def _doc(callback: Callable[..., Any] | None) -> str:
    import inspect

    return inspect.cleandoc(callback.__doc__) if callback is not None and callback.__doc__ else ""


def _run_group(group: Typer, path: list[str], tokens: list[str]) -> None:
    """Run the group's callback with the options before the subcommand, then the subcommand."""
    from .parameters import parameters

    callback = group.registered_callback
    params = parameters(callback) if callback is not None else []
    split = _options_end(params, tokens, group, path)
    head, rest = tokens[:split], tokens[split:]
    if head and callback is None:
        raise UsageError(f"No such option: {head[0].partition('=')[0]}", path)
    if not rest:
        if callback is not None and group.invoke_without_command:
            _call(callback, params, head, path, Context(None))
            return
        from .commandhelp import group_help

        if head:
            raise UsageError("Missing command.", path)
        sys.stdout.write(group_help(group, path))
        raise Exit(2)
    target = group.find(rest[0])
    if target is None:
        raise UsageError(f"No such command '{rest[0]}'.", path)
    if callback is not None:
        _call(callback, params, head, path, Context(rest[0]))
    if isinstance(target, Typer):
        _run_group(target, [*path, rest[0]], rest[1:])
    else:
        _call(target, parameters(target), rest[1:], [*path, rest[0]], None)


def _options_end(params: list[Any], tokens: list[str], group: Typer, path: list[str]) -> int:
    """Where the group's own options end and the subcommand's name begins."""
    takes_value = {d for p in params if not p.is_flag for d in p.decls}
    i = 0
    while i < len(tokens) and tokens[i].startswith("-") and tokens[i] != "-":
        if tokens[i] == "--help":
            from .commandhelp import group_help

            sys.stdout.write(group_help(group, path))
            raise Exit(0)
        i += 2 if tokens[i] in takes_value else 1
    return min(i, len(tokens))


def _call(callback: Callable[..., Any], params: list[Any], tokens: list[str], path: list[str],
          context: Context | None) -> None:
    from .parameters import parse

    if "--help" in tokens[:tokens.index("--") if "--" in tokens else len(tokens)]:
        from .commandhelp import command_help

        sys.stdout.write(command_help(callback, params, path))
        raise Exit(0)
    try:
        values = parse(params, tokens)
    except BadParameter as e:
        raise UsageError(e.message, path, params) from None
    if context is not None:
        values.update({p.name: context for p in params if p.is_context})
    try:
        callback(**values)
    except BadParameter as e:
        raise UsageError(f"Invalid value: {e.message}", path, params) from None


def echo(message: object = "", *, err: bool = False, nl: bool = True) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(f"{message}\n" if nl else str(message))
    stream.flush()


def confirm(text: str, *, default: bool = False, abort: bool = False) -> bool:
    """Ask yes or no on stdin; `abort=True` leaves with "Aborted!" (exit 1) on no."""
    while True:
        sys.stdout.write(f"{text} [{'Y/n' if default else 'y/N'}]: ")
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            raise Abort()
        answer = line.strip().lower()
        if answer in ("y", "yes", "n", "no", ""):
            yes = default if answer == "" else answer.startswith("y")
            if abort and not yes:
                raise Abort()
            return yes
        sys.stdout.write("Error: invalid input\n")


def prompt(text: str, *, hide_input: bool = False) -> str:
    """A line from the person: unechoed on a terminal with `hide_input`, else read from stdin."""
    if hide_input and sys.stdin.isatty():
        import getpass

        return getpass.getpass(f"{text}: ")
    sys.stdout.write(f"{text}: ")
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        raise Abort()
    return line.rstrip("\n")
