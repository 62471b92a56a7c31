"""`predictorx bean …`: PR-sized work items under an issue (R-HAR-6)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .client import Client, fail, seg
from .output import Output, record, table

app = typer.Typer(help="Beans: PR-sized work items under an issue.", no_args_is_help=True)
OutputOpt = typer.Option(Output.table, "--output", "-o", help="table or json")
COLS = [("title", "TITLE"), ("status", "STATUS"), ("claimed_by", "CLAIMED BY"), ("etag", "ETAG"), ("id", "ID")]
FIELDS = [("title", "title"), ("status", "status"), ("etag", "etag"), ("claimed_by", "claimed by"),
          ("scrap_reason", "scrapped"), ("body", "body"), ("id", "id")]


@app.command("create")
def create(issue: str, title: str, body: str = typer.Option("", "--body"), output: Output = OutputOpt) -> None:
    """Create a bean (the same title under the same issue returns the existing bean)."""
    r = Client().post(f"/api/issues/{seg(issue)}/beans", {"title": title, "body": body})
    if output == Output.json:
        record(r, [], output)
    else:
        typer.echo(f"{'Created' if r['created'] else 'Exists:'} bean “{r['title']}” ({r['status']}, etag {r['etag']}).")


@app.command("list")
def list_(issue: str, output: Output = OutputOpt) -> None:
    """The beans of an issue."""
    table(Client().get(f"/api/issues/{seg(issue)}/beans"), COLS, output, "no beans on this issue")


@app.command("show")
def show(issue: str, bean: str, output: Output = OutputOpt) -> None:
    """One bean with its notes."""
    r = Client().get(f"/api/issues/{seg(issue)}/beans/{seg(bean)}")
    record(r, FIELDS, output)
    if output == Output.table:
        for n in r["notes"]:
            typer.echo(f"  {n['at']} {n.get('by') or ''}: {n['text']}")


def _op(issue: str, bean: str, op: str, text: str | None, if_match: str | None, output: Output) -> None:
    headers = {"If-Match": if_match} if if_match else None
    r = Client().request("POST", f"/api/issues/{seg(issue)}/beans/{seg(bean)}/{op}", json={"text": text},
                         headers=headers)
    record(r, FIELDS, output)


IfMatch = typer.Option(None, "--if-match", help="The etag you read; refused if the bean changed since.")


@app.command("claim")
def claim(issue: str, bean: str, if_match: Optional[str] = IfMatch, output: Output = OutputOpt) -> None:
    """created → in-progress (a bean a running workflow holds: through its steps, or a person with its role)."""
    _op(issue, bean, "claim", None, if_match, output)


@app.command("note")
def note(issue: str, bean: str, text: str, if_match: Optional[str] = IfMatch, output: Output = OutputOpt) -> None:
    """Add a progress note."""
    _op(issue, bean, "note", text, if_match, output)


@app.command("resolve")
def resolve(issue: str, bean: str, if_match: Optional[str] = IfMatch, output: Output = OutputOpt) -> None:
    """→ resolved (a bean a running workflow holds: through its steps, or a person with its role)."""
    _op(issue, bean, "resolve", None, if_match, output)


@app.command("scrap")
def scrap(issue: str, bean: str, reason: str = typer.Option(..., "--reason"), if_match: Optional[str] = IfMatch,
          output: Output = OutputOpt) -> None:
    """→ scrapped, with a reason (a bean a running workflow holds: through its steps, or a person with its role)."""
    _op(issue, bean, "scrap", reason, if_match, output)


@app.command("export")
def export(issue: str, to: Path = typer.Option(Path(".beans"), "--to", help="Folder for the .md files.")) -> None:
    """Write the issue's beans as hmans/beans Markdown files."""
    files = Client().get(f"/api/issues/{seg(issue)}/beans/export")["files"]
    to.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (to / name).write_text(text, encoding="utf-8")
    typer.echo(f"Wrote {len(files)} beans to {to}.")


@app.command("import")
def import_(issue: str, source: Path = typer.Option(Path(".beans"), "--from", help="Folder of .md bean files.")) -> None:
    """Create beans from hmans/beans Markdown files (existing titles are kept, all or nothing)."""
    if not source.is_dir():
        fail(f"{source} is not a folder of .md bean files", 2)
    files = {p.name: p.read_text(encoding="utf-8", errors="replace") for p in sorted(source.glob("*.md"))}
    if not files:
        fail(f"{source} has no .md files", 2)
    r = Client().post(f"/api/issues/{seg(issue)}/beans/import", {"files": files})
    made = sum(1 for b in r["beans"] if b["created"])
    typer.echo(f"Imported {len(r['beans'])} beans ({made} new).")
