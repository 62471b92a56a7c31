"""What a command line is declared with: `Option`, `Argument`, a group's `Context`, the commands
of a group, and the exceptions a command raises — the names of typer's API that cli/commandline.py
offers (it runs them; parameters.py reads them; commandhelp.py shows them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .commandline import Typer


class Exit(Exception):
    """Leave the command with this exit code."""

    def __init__(self, code: int = 0) -> None:
        super().__init__(code)
        self.exit_code = code


class Abort(Exception):
    """The person declined (or stdin ended at) a confirmation: "Aborted!", exit 1."""


class BadParameter(Exception):
    """A value the command cannot use: a usage error (exit 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Context:
    """What a group's callback learns: the subcommand named after it, if any."""

    def __init__(self, invoked_subcommand: str | None) -> None:
        self.invoked_subcommand = invoked_subcommand


class ParameterInfo:
    def __init__(self, default: Any, decls: tuple[str, ...], help: str | None, min: float | None,
                 max: float | None, metavar: str | None) -> None:
        self.default, self.decls, self.help = default, decls, help
        self.min, self.max, self.metavar = min, max, metavar


class OptionInfo(ParameterInfo):
    pass


class ArgumentInfo(ParameterInfo):
    pass


def Option(default: Any = ..., *param_decls: str, help: str | None = None, min: float | None = None,
           max: float | None = None, metavar: str | None = None) -> Any:
    """An option (`--name VALUE` or a flag); `...` as the default makes it required."""
    return OptionInfo(default, param_decls, help, min, max, metavar)


def Argument(default: Any = ..., *, help: str | None = None, min: float | None = None,
             max: float | None = None, metavar: str | None = None) -> Any:
    """A positional argument; `...` (or no default at all) makes it required."""
    return ArgumentInfo(default, (), help, min, max, metavar)


class CommandInfo(NamedTuple):
    name: str | None
    callback: Callable[..., Any]


class GroupInfo(NamedTuple):
    name: str
    typer_instance: Typer




def command_name(command: CommandInfo) -> str:
    return command.name or command.callback.__name__.replace("_", "-")
