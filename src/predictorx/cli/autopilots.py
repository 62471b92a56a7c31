"""`predictorx autopilot create|list|show|pause|resume|remove|fire|replay|rotate-url` (issue 27 §5),
thin over `/api/autopilots`."""

from __future__ import annotations

from typing import Any, Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from .client import Client, emit_json, fail, seg
from .output import Output, record, table

OutputOpt = typer.Option(Output.table, "--output", "-o", help="table or json")
autopilot_app = typer.Typer(help="Issues filed and runs started by a cron schedule or a signed webhook.",
                            no_args_is_help=True)
LIST_COLUMNS = [("name", "NAME"), ("triggers", "TRIGGERS"), ("assignee", "ASSIGNEE"), ("next_due_at", "NEXT DUE (UTC)"),
                ("state", "STATE")]
FIRING_COLUMNS = [("id", "FIRING"), ("fired_at", "FIRED"), ("due_at", "DUE"), ("trigger", "TRIGGER"),
                  ("issue", "ISSUE"), ("outcome", "OUTCOME"), ("detail", "DETAIL")]
SHOWN = [("name", "name"), ("id", "id"), ("owner", "owner"), ("state", "state"), ("title", "issue title"),
         ("assignee", "assignee"), ("workflow", "workflow"), ("project_id", "project"), ("schedule", "schedule"),
         ("next_due_at", "next due (UTC)"), ("webhook_url", "webhook URL"), ("filter", "filter"),
         ("failures_of", "failures in a row")]


def _row(a: dict[str, Any]) -> dict[str, Any]:
    triggers = [f"{a['cron']} ({a['timezone']})"] if a.get("cron") else []
    if a.get("webhook_url"):
        triggers.append("webhook")
    state = f"paused: {a['pause_reason']}" if a["paused"] else "active"
    return {**a, "triggers": ", ".join(triggers), "state": state,
            "schedule": f"{a['cron']} in {a['timezone']}" if a.get("cron") else None,
            "failures_of": f"{a['failures']} of {a['failure_limit']}"}


def _firing_row(f: dict[str, Any]) -> dict[str, Any]:
    trigger = f["trigger"] + (f" of {f['replay_of'][:8]}" if f.get("replay_of") else "")
    return {**f, "trigger": trigger, "issue": f"#{f['issue_number']}" if f.get("issue_number") else "",
            "fired_at": (f["fired_at"] or "")[:19], "due_at": (f["due_at"] or "")[:19]}


def _secret_note(answer: dict[str, Any]) -> None:
    if answer.get("signing_secret"):
        typer.echo(f"Webhook URL: {answer['webhook_url']}")
        typer.echo(f"Signing secret (shown once): {answer['signing_secret']}")
        typer.echo('Sign each delivery: X-Delivery-Key: <unique key>, X-Signature-256: sha256=<hex HMAC-SHA256 '
                   'of "<key>.<body>" under the secret>', err=True)


@autopilot_app.command("create")
def create(name: str = typer.Option(..., "--name", help="Unique in the workspace."),
           title: str = typer.Option(..., "--title", help="The issue's title; placeholders {{date}}, {{due}}, …"),
           description: str = typer.Option("", "--description", help="The issue's description ({{payload}}: the delivery)."),
           assignee: Optional[str] = typer.Option(None, "--assignee", help="An agent (name or id)."),
           role: Optional[str] = typer.Option(None, "--role", help="A role, resolved in --project at each firing."),
           project: Optional[str] = typer.Option(None, "--project", help="The project of the issues (id)."),
           workflow: Optional[str] = typer.Option(None, "--workflow", help="A workflow to start on each issue."),
           cron: Optional[str] = typer.Option(None, "--cron", help="Five cron fields, e.g. '0 9 * * 1-5'."),
           tz: str = typer.Option("UTC", "--tz", help="The cron's time zone (IANA), e.g. Europe/Berlin."),
           webhook: bool = typer.Option(False, "--webhook", help="Also (or only) fire on signed webhook deliveries."),
           filter_: Optional[str] = typer.Option(None, "--filter", help="Fire a delivery only if PATH=VALUE holds."),
           failure_limit: int = typer.Option(5, "--failure-limit", help="Pause after this many failures in a row."),
           output: Output = OutputOpt) -> None:
    """Make an autopilot (owners and admins). A webhook's signing secret is printed this once."""
    if assignee and role:
        fail("give --assignee (an agent) or --role, not both", 2)
    body = {"name": name, "title": title, "description": description, "assignee": f"role:{role}" if role else assignee,
            "project": project, "workflow": workflow, "cron": cron, "timezone": tz, "webhook": webhook,
            "filter": filter_, "failure_limit": failure_limit}
    answer = Client().post("/api/autopilots", {k: v for k, v in body.items() if v is not None})
    if output == Output.json:
        emit_json(answer)
        return
    record(_row(answer), SHOWN, output)
    _secret_note(answer)


@autopilot_app.command("list")
def list_(output: Output = OutputOpt) -> None:
    rows = Client().get("/api/autopilots")
    table(rows if output == Output.json else [_row(a) for a in rows], LIST_COLUMNS, output,
          "no autopilots: `predictorx autopilot create --name N --title T --cron '0 9 * * *' --assignee AGENT`")


@autopilot_app.command("show")
def show(autopilot: str = typer.Argument(..., help="Name or id."), output: Output = OutputOpt) -> None:
    """The autopilot, why it is paused if it is, and its latest firings."""
    answer = Client().get(f"/api/autopilots/{seg(autopilot)}")
    if output == Output.json:
        emit_json(answer)
        return
    record(_row(answer), SHOWN, output)
    typer.echo("")
    table([_firing_row(f) for f in answer["firings"]], FIRING_COLUMNS, output, "it has not fired yet")


def _changed(path: str, said: str, output: Output) -> None:
    answer = Client().post(path)
    if output == Output.json:
        emit_json(answer)
        return
    typer.echo(said.format(**answer))


@autopilot_app.command("pause")
def pause(autopilot: str, output: Output = OutputOpt) -> None:
    _changed(f"/api/autopilots/{seg(autopilot)}/pause", "Paused {name}.", output)


@autopilot_app.command("resume")
def resume(autopilot: str, output: Output = OutputOpt) -> None:
    """Run again from now on (due times that passed while paused are not fired); failures reset."""
    _changed(f"/api/autopilots/{seg(autopilot)}/resume", "Resumed {name}; next due {next_due_at}.", output)


@autopilot_app.command("remove")
def remove(autopilot: str) -> None:
    answer = Client().delete(f"/api/autopilots/{seg(autopilot)}")
    typer.echo(f"Removed autopilot {answer['removed']} and its history.")


@autopilot_app.command("fire")
def fire(autopilot: str, output: Output = OutputOpt) -> None:
    """Fire it now, by hand: a firing of its own in the history."""
    _changed(f"/api/autopilots/{seg(autopilot)}/fire", "Firing {id}: {outcome} — {detail}", output)


@autopilot_app.command("replay")
def replay(firing: str = typer.Argument(..., help="A firing's id (`autopilot show` lists them)."),
           output: Output = OutputOpt) -> None:
    """Fire again as that firing did (its due time, its webhook payload): a new firing and issue."""
    _changed(f"/api/autopilot-firings/{seg(firing)}/replay", "Firing {id} replays {replay_of}: {outcome} — {detail}",
             output)


@autopilot_app.command("rotate-url")
def rotate_url(autopilot: str, output: Output = OutputOpt) -> None:
    """A new webhook URL and signing secret; the old URL answers 404 from now on."""
    answer = Client().post(f"/api/autopilots/{seg(autopilot)}/rotate-url")
    if output == Output.json:
        emit_json(answer)
        return
    _secret_note(answer)


def register(root: typer.Typer) -> None:
    root.add_typer(autopilot_app, name="autopilot")
