"""`predictorx audit`: the workspace's audit log, for owners and admins (issue 28 §4)."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any, Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from .client import Client
from .output import Output, table


class AuditOutput(str, Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"


COLUMNS = [("at", "WHEN"), ("actor", "WHO"), ("action", "WHAT"), ("target", "TARGET"), ("address", "FROM"),
           ("detail", "DETAIL")]


audit_app = typer.Typer(help="The workspace's audit log (owners and admins).")


@audit_app.callback(invoke_without_command=True)
def audit(ctx: typer.Context,
          since: Optional[str] = typer.Option(None, "--since", help="Only events at or after this ISO time "
                                              "(e.g. 2026-12-01 or 2026-12-01T09:00:00Z)."),
          actor: Optional[str] = typer.Option(None, "--actor", help="Only this member's (name or user id)."),
          action: Optional[str] = typer.Option(None, "--action", help="Only this action or family, e.g. secret."),
          limit: int = typer.Option(100, "--limit", min=1, help="At most this many events (newest first)."),
          every: bool = typer.Option(False, "--all", help="Every matching event, page by page."),
          output: AuditOutput = typer.Option(AuditOutput.table, "--output", "-o",
                                             help="table, json, or jsonl (JSON Lines: the export)")) -> None:
    """Who did what, when, from where: sign-ins, tokens, members and roles, forges, secrets,
    agent sandboxes, merges (owners and admins). `predictorx audit retention` shows or sets how
    long they are kept."""
    if ctx.invoked_subcommand is not None:
        return
    params: dict[str, Any] = {k: v for k, v in (("since", since), ("actor", actor), ("action", action)) if v}
    events: list[dict[str, Any]] = []
    before = None
    while True:
        want = min(500, limit - len(events)) if not every else 500
        page = Client().get("/api/audit", params={**params, "limit": want, **({"before": before} if before else {})})
        events += page["events"]
        before = page["next_before"]
        if before is None or (not every and len(events) >= limit):
            break
    if output == AuditOutput.jsonl:
        for event in events:
            typer.echo(json.dumps(event, ensure_ascii=False))
        return
    table(events, COLUMNS, Output(output.value), "no audit events")


@audit_app.command("retention")
def retention(days: Optional[int] = typer.Argument(None, min=0, help="Keep events this many days (0: for ever)."),
              server_default: bool = typer.Option(False, "--server-default",
                                                  help="Use the server's retention again.")) -> None:
    """Show how long this workspace's events are kept, or (owners) set it."""
    if days is not None and server_default:
        typer.echo("give either a number of days or --server-default, not both", err=True)
        raise typer.Exit(2)
    if days is None and not server_default:
        r = Client().get("/api/audit/retention")
    else:
        r = Client().put("/api/audit/retention", {"days": days})
    kept = f"{r['days']} days" if r["days"] else "for ever"
    whose = "this workspace's setting" if r["source"] == "workspace" else "the server's default"
    typer.echo(f"Audit events are kept {kept} ({whose}; at least {r['minimum_days']} days may be set).")


def register(root: typer.Typer) -> None:
    root.add_typer(audit_app, name="audit")
