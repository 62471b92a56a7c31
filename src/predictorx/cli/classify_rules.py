"""`predictorx classify-rules …`: a workspace's own classification rules (issue 24 §6). The table
is data: TOML rule files (the format: workflows/classify_table.py, docs/workflows.md), added after
the shipped English and Russian ones. `add` is refused with the entry's sentence if the file does
not load; `try` shows what the workspace's table makes of a request."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from .client import Client, emit_json, fail, seg
from .output import Output, record, table

app = typer.Typer(help="The workspace's own classification rules (TOML files added to the shipped table).",
                  no_args_is_help=True)
OutputOpt = typer.Option(Output.table, "--output", "-o", help="table or json")
COLS = [("name", "NAME"), ("bytes", "BYTES"), ("updated_by", "UPDATED BY"), ("updated_at", "UPDATED")]


@app.command("list")
def list_(output: Output = OutputOpt) -> None:
    """The workspace's rule files."""
    table(Client().get("/api/classification/rules"), COLS, output)


@app.command("add")
def add(file: Path = typer.Argument(..., help="A TOML rules file (see docs/workflows.md, Classification)."),
        name: Optional[str] = typer.Option(None, "--name", help="Default: the file's name without .toml. "
                                           "Adding a name again replaces it."),
        output: Output = OutputOpt) -> None:
    """Add (or replace) a rules file; admins only. Refused with the reason if it does not load."""
    try:
        source = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        fail(f"cannot read {file}: {e.__class__.__name__}", 2)
    r = Client().request("PUT", f"/api/classification/rules/{seg(name or file.stem)}", json={"source": source})
    record(r, COLS, output)


@app.command("show")
def show(name: str, output: Output = OutputOpt) -> None:
    """Print a rules file as stored."""
    r = Client().get(f"/api/classification/rules/{seg(name)}")
    if output == Output.json:
        emit_json(r)
    else:
        typer.echo(r["source"], nl=not r["source"].endswith("\n"))


@app.command("remove")
def remove(name: str) -> None:
    """Remove a rules file; admins only."""
    Client().delete(f"/api/classification/rules/{seg(name)}")
    typer.echo(f"removed {name}")
