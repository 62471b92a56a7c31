"""The command line's own reader (cli/commandline.py, typer's API without typer's start-up,
issue 23 item 9): what a command receives from argv, what a mistake prints, and plain tables."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import pytest

from predictorx.cli import commandline as typer
from predictorx.cli.output import Output, table


class Colour(str, Enum):
    red = "red"
    blue = "blue"


def make_app(seen: dict) -> typer.Typer:
    app = typer.Typer(help="Top.", no_args_is_help=True)
    group = typer.Typer(help="A group.", invoke_without_command=True)
    app.add_typer(group, name="grp")

    @app.command("do-it")
    def do_it(name: str, more: Optional[list[Path]] = typer.Argument(None),
              tag: list[str] = typer.Option([], "--tag", help="repeat"),
              allow: Optional[list[str]] = typer.Option(None, "--allow"),
              n: int = typer.Option(2, "--n", min=1, max=3), colour: Colour = typer.Option(Colour.red, "--colour", "-c"),
              sandbox: Optional[bool] = typer.Option(None, "--sandbox/--no-sandbox"),
              force: bool = typer.Option(False, "--force"), need: str = typer.Option(..., "--need")) -> None:
        """Do it.

        At length."""
        seen.update(name=name, more=more, tag=tag, allow=allow, n=n, colour=colour, sandbox=sandbox, force=force,
                    need=need)

    @group.callback()
    def grp(ctx: typer.Context, limit: int = typer.Option(5, "--limit")) -> None:
        seen.update(sub=ctx.invoked_subcommand, limit=limit)

    @group.command()
    def inner_cmd(dry_run: bool = False, times: int = 1) -> None:  # plain defaults: options, as in typer
        seen.update(inner=True, dry_run=dry_run, times=times)
    return app


def run(app: typer.Typer, capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        app(list(args))
    out = capsys.readouterr()
    return int(e.value.code or 0), out.out, out.err


def test_a_command_receives_typed_values(capsys) -> None:
    seen: dict = {}
    app = make_app(seen)
    assert run(app, capsys, "do-it", "x", "a", "b", "--tag", "1", "--tag=2", "-cblue", "--n", "3", "--no-sandbox",
               "--force", "--need", "-v")[0] == 0
    assert seen == {"name": "x", "more": [Path("a"), Path("b")], "tag": ["1", "2"], "allow": None, "n": 3,
                    "colour": Colour.blue, "sandbox": False, "force": True, "need": "-v"}
    assert run(app, capsys, "do-it", "y", "--need", "z")[0] == 0
    assert seen["more"] is None and seen["tag"] == [] and seen["sandbox"] is None and seen["n"] == 2


@pytest.mark.parametrize(("args", "sentence"), [
    (["do-it", "x"], "Missing option '--need'."),
    (["do-it", "--need", "z"], "Missing argument 'NAME'."),
    (["do-it", "x", "--need", "z", "--n", "4"], "Invalid value for '--n': 4 is not in the range x>=1 and x<=3."),
    (["do-it", "x", "--need", "z", "--n", "two"], "Invalid value for '--n': 'two' is not a valid integer."),
    (["do-it", "x", "--need", "z", "-c", "green"], "'green' is not one of 'red', 'blue'."),
    (["do-it", "x", "--need", "z", "--nope"], "No such option: --nope"),
    (["do-it", "x", "--need"], "Option '--need' requires an argument."),
    (["do-it", "x", "--need", "z", "--force=yes"], "Option '--force' does not take a value."),
    (["undo"], "No such command 'undo'."),
    (["--verbose", "do-it"], "No such option: --verbose"),
    (["grp", "--limit", "x"], "Invalid value for '--limit': 'x' is not a valid integer."),
])
def test_a_mistake_is_one_sentence_and_exit_2(capsys, args: list[str], sentence: str) -> None:
    code, out, err = run(make_app({}), capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith("Usage: predictorx") and "--help' for help." in err and sentence in err


def test_help_at_every_level_and_no_arguments_show_help(capsys) -> None:
    app = make_app({})
    code, out, _ = run(app, capsys)
    assert code == 2 and "Top." in out and "do-it" in out and "Do it." in out and "grp" in out
    code, out, _ = run(app, capsys, "do-it", "--help")
    assert code == 0 and "At length." in out and "--sandbox / --no-sandbox" in out and "[range: 1<=x<=3]" in out
    assert "--colour, -c [red|blue]" in out and "[required]" in out


def test_a_group_callback_runs_before_its_command_or_alone(capsys) -> None:
    seen: dict = {}
    app = make_app(seen)
    assert run(app, capsys, "grp", "--limit", "7")[0] == 0 and seen == {"sub": None, "limit": 7}
    assert run(app, capsys, "grp", "inner-cmd")[0] == 0
    assert seen == {"sub": "inner-cmd", "limit": 5, "inner": True, "dry_run": False, "times": 1}
    assert run(app, capsys, "grp", "--limit=1", "inner-cmd", "--dry-run", "--times", "3")[0] == 0
    assert seen == {"sub": "inner-cmd", "limit": 1, "inner": True, "dry_run": True, "times": 3}


def test_confirm_aborts_on_no_and_on_end_of_input(capsys, monkeypatch) -> None:
    import io

    app = typer.Typer()

    @app.command()
    def ask() -> None:
        typer.confirm("Really?", abort=True)
        typer.echo("done")

    @app.command()
    def other() -> None:
        pass
    for answer, code in (("y\n", 0), ("n\n", 1), ("", 1)):
        monkeypatch.setattr("sys.stdin", io.StringIO(answer))
        got, out, err = run(app, capsys, "ask")
        assert got == code and ("done" in out) == (code == 0) and ("Aborted!" in err) == (code == 1)


def test_a_plain_table_lines_up_wide_characters_and_shows_no_control_character(capsys) -> None:
    table([{"n": 1, "t": "日本語"}, {"n": 22, "t": "a\x1b[31mred"}], [("n", "N"), ("t", "TITLE")], Output.table)
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["N   TITLE", "1   日本語", "22  a\ufffd[31mred"]
    table([], [("n", "N")], Output.table, "nothing")
    assert capsys.readouterr().out == "nothing\n"
