"""`predictorx check workflow-refs` and `predictorx prov qaqc` (R-HAR-4, R-HAR-5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from .client import Client, fail, seg

check_app = typer.Typer(help="Static checks of the shipped and configured workflows.", no_args_is_help=True)
prov_app = typer.Typer(help="The PROV-O execution record.", no_args_is_help=True)


def _roots(paths: list[Path] | None) -> list[Path]:
    from ..workflows.library import library_roots

    roots = list(paths or library_roots())
    for p in roots:
        if not p.exists():
            fail(f"{p} does not exist; give a folder of .bpmn files or a .bpmn file", 2)
    return roots


@check_app.command("workflow-refs")
def workflow_refs(paths: Optional[list[Path]] = typer.Argument(None, help="Folders or .bpmn files (default: "
                                                                     "the shipped processes and PREDICTORX_PROCESSES)."),
                  as_json: bool = typer.Option(False, "--json", help="Print JSON."),
                  strict: bool = typer.Option(False, "--strict", help="Uncovered activities are errors too.")) -> None:
    """Per diagram: computed / judgement / undeclared gateways, dangling refs, uncovered activities."""
    from ..workflows import refs

    result = refs.check(_roots(paths), strict=strict)
    typer.echo(refs.to_json(result) if as_json else refs.to_text(result), nl=False)
    if not result["ok"]:
        raise typer.Exit(1)


def fetch_record(issue: str | None, page_size: int | None = None) -> list[dict]:
    """The whole record, page after page; an instance cut between pages is joined again."""
    records: dict[str, dict] = {}
    client, cursor = Client(), None
    while True:
        params = {"issue": issue} if issue else {}
        if cursor:
            params["cursor"] = cursor
        if page_size:
            params["limit"] = page_size
        page = client.get("/api/workflows/record", params=params)
        for rec in page["records"]:
            known = records.get(rec["instance"]["id"])
            if known is None:
                records[rec["instance"]["id"]] = rec
            else:
                known["steps"].extend(rec["steps"])
        cursor = page.get("next")
        if not cursor:
            return list(records.values())


@prov_app.command("qaqc")
def qaqc_cmd(issue: Optional[str] = typer.Option(None, "--issue", help="Only this issue's instances."),
             source: Optional[Path] = typer.Option(None, "--from", help="A record file (JSON from "
                                                   "`GET /api/workflows/record`) instead of the server."),
             diagrams: Optional[list[Path]] = typer.Option(None, "--diagrams", help="Check against these diagrams."),
             out: Optional[Path] = typer.Option(None, "--out", help="Write qaqc.md and qaqc.json into this folder."),
             as_json: bool = typer.Option(False, "--json", help="Print the JSON report instead of Markdown.")) -> None:
    """Re-check every recorded step against the policies and the current diagrams."""
    from ..workflows import qaqc
    from ..workflows.library import load_library
    from ..workflows.loader import DiagramError

    if source is not None:
        try:
            records = json.loads(source.read_text(encoding="utf-8"))["records"]
        except (OSError, ValueError, KeyError, TypeError):
            fail(f"{source} is not a record file; write one with `predictorx prov record > FILE`", 2)
    else:
        records = fetch_record(issue)
    try:
        lib = load_library(_roots(diagrams))
    except DiagramError as e:
        fail(str(e))
    rep = qaqc.report(lib, records)
    md, js = qaqc.to_markdown(rep), qaqc.to_json(rep)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "qaqc.md").write_text(md, encoding="utf-8")
        (out / "qaqc.json").write_text(js, encoding="utf-8")
        typer.echo(f"{rep['steps']} steps, {len(rep['findings'])} findings: {out / 'qaqc.md'}, {out / 'qaqc.json'}")
    else:
        typer.echo(js if as_json else md, nl=False)


@prov_app.command("record")
def record_cmd(issue: Optional[str] = typer.Option(None, "--issue"),
               page_size: Optional[int] = typer.Option(None, "--page-size", min=1, max=10_000,
                                                       help="Steps per request (the server's default: 1000).")) -> None:
    """Print the recorded history (input of `prov qaqc --from`), read a page at a time."""
    typer.echo(json.dumps({"records": fetch_record(issue, page_size)}, indent=2, sort_keys=True))


@prov_app.command("show")
def show(issue: str, process: str) -> None:
    """Print an instance's PROV-O JSON-LD document."""
    typer.echo(json.dumps(Client().get(f"/api/issues/{seg(issue)}/workflows/{seg(process)}/prov"),
                          indent=2, sort_keys=True))
