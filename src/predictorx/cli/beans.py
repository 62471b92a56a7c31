"""`predictorx bean …`: PR-sized work items under an issue (R-HAR-6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from .client import Client, fail, seg
from .output import Output, record, table

app = typer.Typer(help="Beans: PR-sized work items under an issue.", no_args_is_help=True)
OutputOpt = typer.Option(Output.table, "--output", "-o", help="table or json")
COLS = [("key", "ID"), ("title", "TITLE"), ("status", "STATUS"), ("type", "TYPE"), ("parent", "PARENT"),
        ("claimed_by", "CLAIMED BY"), ("etag", "ETAG")]
FIELDS = [("key", "id"), ("title", "title"), ("status", "status"), ("etag", "etag"), ("type", "type"),
          ("priority", "priority"), ("tags", "tags"), ("parent", "parent"), ("blocking", "blocking"),
          ("claimed_by", "claimed by"), ("scrap_reason", "scrapped"), ("body", "body")]


@app.command("create")
def create(issue: str, title: str, body: str = typer.Option("", "--body"),
           type_: Optional[str] = typer.Option(None, "--type", help="task, feature, bug, epic, milestone"),
           priority: Optional[str] = typer.Option(None, "--priority", help="critical, high, normal, low, deferred"),
           tag: list[str] = typer.Option([], "--tag", help="A tag (repeat for more)."),
           parent: Optional[str] = typer.Option(None, "--parent", help="The parent bean's id."),
           blocking: list[str] = typer.Option([], "--blocking", help="The id of a bean this one blocks (repeat)."),
           output: Output = OutputOpt) -> None:
    """Create a bean (the same title under the same issue returns the existing bean)."""
    r = Client().post(f"/api/issues/{seg(issue)}/beans", {"title": title, "body": body, "type": type_,
                                                          "priority": priority, "tags": tag, "parent": parent,
                                                          "blocking": blocking})
    if output == Output.json:
        record(r, [], output)
    else:
        typer.echo(f"{'Created' if r['created'] else 'Exists:'} bean {r['key']} “{r['title']}” ({r['status']}, "
                   f"etag {r['etag']}).")


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


ETAGS = ".predictorx-etags.json"  # beside the beans; beans reads only .md files, so it is left alone


def _inside(folder: Path, name: str) -> Path:
    """A path the server named, kept inside the folder (relative, no '..', no dot-folder)."""
    parts = name.split("/")
    if not name.endswith(".md") or name.startswith("/") or "\\" in name or any(
            p in ("", ".", "..") or p.startswith(".") for p in parts[:-1]):
        fail(f"the server named a bean file {name!r} outside the folder; nothing written", 1)
    return folder.joinpath(*parts)


def _write_etags(folder: Path, etags: dict[str, int]) -> None:
    path = folder / ETAGS
    old = {}
    if path.is_file():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            old = {}
    path.write_text(json.dumps({**old, **etags}, indent=1, sort_keys=True) + "\n", encoding="utf-8")


@app.command("export")
def export(issue: str, to: Path = typer.Option(Path(".beans"), "--to", help="The beans folder for the .md files.")) -> None:
    """Write the issue's beans as hmans/beans files (each at the path it came from, else <id>--<slug>.md),
    and their etags in .beans/.predictorx-etags.json for the next import."""
    r = Client().get(f"/api/issues/{seg(issue)}/beans/export")
    targets = {name: _inside(to, name) for name in r["files"]}
    for name, text in r["files"].items():
        targets[name].parent.mkdir(parents=True, exist_ok=True)
        targets[name].write_text(text, encoding="utf-8", newline="")
    _write_etags(to, r["etags"])
    typer.echo(f"Wrote {len(targets)} beans to {to}.")


def _read_folder(source: Path) -> dict[str, str]:
    files = {}
    for p in sorted(source.rglob("*.md")):
        rel = p.relative_to(source)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts[:-1]):  # beans skips dot-folders
            files[rel.as_posix()] = p.read_text(encoding="utf-8", errors="replace")
    return files


@app.command("import")
def import_(issue: str, source: Path = typer.Option(Path(".beans"), "--from", help="The beans folder (.md files, archive/ too)."),
            strict: bool = typer.Option(False, "--strict", help="All files or none: one refused file refuses the import."),
            ignore_etags: bool = typer.Option(False, "--ignore-etags",
                                              help="Overwrite beans changed here since the export."),
            output: Output = OutputOpt) -> None:
    """Create or update beans from hmans/beans files, matched by bean id; each file is answered, the
    valid ones imported. A bean changed here since the folder's export is refused (its etag)."""
    if not source.is_dir():
        fail(f"{source} is not a folder of .md bean files", 2)
    files = _read_folder(source)
    if not files:
        fail(f"{source} has no .md files", 2)
    body: dict = {"files": files, "strict": strict}
    if not ignore_etags and (source / ETAGS).is_file():
        try:
            body["etags"] = {str(k): int(v) for k, v in json.loads((source / ETAGS).read_text(encoding="utf-8")).items()}
        except (ValueError, AttributeError):
            fail(f"{source / ETAGS} is not the etags file an export writes; pass --ignore-etags or export again", 2)
    r = Client().post(f"/api/issues/{seg(issue)}/beans/import", body)
    _write_etags(source, {b["key"]: b["version"] for b in r["beans"]})
    if output == Output.json:
        record(r, [], output)
    else:
        for f in r["files"]:
            if f["result"] in ("created", "updated", "refused") or f.get("warnings"):
                detail = f.get("reason") or ", ".join(f.get("changed", []) + f.get("warnings", []))
                typer.echo(f"  {f['result']:<9} {f['file']}{': ' + detail if detail else ''}")
        c = r["counts"]
        typer.echo(f"Imported {len(files) - c['refused']} of {len(files)} files: {c['created']} new, "
                   f"{c['updated']} updated, {c['unchanged']} unchanged, {c['refused']} refused.")
    if r["counts"]["refused"]:
        fail(f"{r['counts']['refused']} of {len(files)} files were not imported (see above); the others were", 1)
