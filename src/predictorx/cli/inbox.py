"""`predictorx inbox [list|read|unread|done|subscribe|unsubscribe]` (issue 27 §3) and `predictorx
notify …` (§4), thin over `/api/inbox`, `/api/issues/{ref}/subscription` and `/api/notifications`."""

from __future__ import annotations

import sys
from typing import Any, Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from .client import Client, fail, seg
from .output import Output, table

OutputOpt = typer.Option(Output.table, "--output", "-o", help="table or json")
inbox_app = typer.Typer(help="What needs you: failed runs, assignments, reviews, gates, mentions, questions.",
                        invoke_without_command=True)
notify_app = typer.Typer(help="Where your notifications go: signed webhooks and Apprise URLs (Slack, ntfy, e-mail …).",
                         no_args_is_help=True)
ITEM_COLUMNS = [("id", "ID"), ("state", "STATE"), ("kind", "KIND"), ("title", "WHAT"), ("when", "WHEN")]
KINDS = "run_failed, run_budget, assigned, review, step, gate, mention, comment, permission"


def _rows(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**i, "when": (i.get("created_at") or "")[:16].replace("T", " ")} for i in items]


def _list(state: str, limit: int, cursor: Optional[str], output: Output) -> None:
    params: dict[str, Any] = {"state": state, "limit": limit}
    if cursor:
        params["cursor"] = cursor
    answer = Client().get("/api/inbox", params=params)
    if output == Output.json:
        from .client import emit_json

        emit_json(answer)
        return
    table(_rows(answer["items"]), ITEM_COLUMNS, output, f"nothing {'needs you' if state == 'open' else 'here'}")
    if answer.get("next"):
        typer.echo(f"more: predictorx inbox list --state {state} --cursor '{answer['next']}'", err=True)


@inbox_app.callback()
def inbox(ctx: typer.Context, output: Output = OutputOpt) -> None:
    """Your open items (unread and read), newest first."""
    if ctx.invoked_subcommand is None:
        _list("open", 50, None, output)


@inbox_app.command("list")
def inbox_list(state: str = typer.Option("open", "--state", help="open, unread, read, done or all."),
               limit: int = typer.Option(50, "--limit", min=1, max=200),
               cursor: Optional[str] = typer.Option(None, "--cursor", help="The `next` of the previous page."),
               output: Output = OutputOpt) -> None:
    """Your items, newest first, a page at a time."""
    _list(state, limit, cursor, output)


def _set(item_ids: list[str], state: str, all_: bool) -> None:
    if all_:
        answer = Client().post("/api/inbox/mark-all", {"state": "read" if state == "read" else "done",
                                                       "from_state": "unread"})
        typer.echo(f"{answer['changed']} items marked {state}.")
        return
    if not item_ids:
        fail("name the items (their ids, from `predictorx inbox list`), or --all", 2)
    client = Client()
    for item_id in item_ids:
        client.patch(f"/api/inbox/{seg(item_id)}", {"state": state})
    typer.echo(f"{len(item_ids)} item{'s' if len(item_ids) != 1 else ''} marked {state}.")


@inbox_app.command("read")
def inbox_read(item_ids: list[str] = typer.Argument(None), all_: bool = typer.Option(False, "--all")) -> None:
    """Mark items read (--all: every unread one)."""
    _set(item_ids or [], "read", all_)


@inbox_app.command("unread")
def inbox_unread(item_ids: list[str] = typer.Argument(...)) -> None:
    _set(item_ids, "unread", False)


@inbox_app.command("done")
def inbox_done(item_ids: list[str] = typer.Argument(None), all_: bool = typer.Option(False, "--all")) -> None:
    """Mark items done: out of the open list (--all: every unread one)."""
    _set(item_ids or [], "done", all_)


@inbox_app.command("subscribe")
def inbox_subscribe(issue: str) -> None:
    """Hear about an issue: its failed runs, reviews, comments, its workflow's people steps."""
    Client().request("PUT", f"/api/issues/{seg(issue)}/subscription")
    typer.echo(f"Subscribed to issue {issue}.")


@inbox_app.command("unsubscribe")
def inbox_unsubscribe(issue: str) -> None:
    Client().delete(f"/api/issues/{seg(issue)}/subscription")
    typer.echo(f"Unsubscribed from issue {issue}.")


CHANNEL_COLUMNS = [("id", "ID"), ("name", "NAME"), ("scope", "WHOSE"), ("kind", "KIND"), ("label", "WHERE"),
                   ("events_text", "EVENTS"), ("digest", "DIGEST"), ("enabled", "ON")]


@notify_app.command("list")
def notify_list(output: Output = OutputOpt) -> None:
    """Your channels and the workspace's (never a URL or secret)."""
    rows = Client().get("/api/notifications/channels")
    table(rows if output == Output.json else [{**r, "events_text": ",".join(r["events"])} for r in rows],
          CHANNEL_COLUMNS, output, "no channels: `predictorx notify add NAME --webhook --url-stdin`")


@notify_app.command("add")
def notify_add(name: str, apprise: bool = typer.Option(False, "--apprise", help="An Apprise URL (default: a webhook)."),
               workspace: bool = typer.Option(False, "--workspace", help="The workspace's (owners and admins)."),
               events: Optional[str] = typer.Option(None, "--events", help=f"Comma-separated, of: {KINDS}."),
               digest: str = typer.Option("off", "--digest", help="off, hourly or daily."),
               secret_stdin: bool = typer.Option(False, "--secret-stdin",
                                                 help="Read the signing secret after the URL, on stdin's 2nd line."),
               output: Output = OutputOpt) -> None:
    """Add a channel. Its URL (it may hold a token) is read from stdin, never from the command line."""
    lines = sys.stdin.read().splitlines()
    if not lines or not lines[0].strip():
        fail("give the channel's URL on stdin (e.g. `echo ntfy://topic | predictorx notify add phone --apprise`)", 2)
    body: dict[str, Any] = {"name": name, "kind": "apprise" if apprise else "webhook", "url": lines[0].strip(),
                            "scope": "workspace" if workspace else "me", "digest": digest}
    if events:
        body["events"] = [e.strip() for e in events.split(",") if e.strip()]
    if secret_stdin:
        if len(lines) < 2 or not lines[1].strip():
            fail("--secret-stdin: the secret is the second line of stdin", 2)
        body["secret"] = lines[1].strip()
    row = Client().post("/api/notifications/channels", body)
    if output == Output.json:
        from .client import emit_json

        emit_json(row)
        return
    typer.echo(f"Added {row['name']} ({row['id']}).")
    if row.get("secret"):
        typer.echo(f"Signing secret (shown once): {row['secret']}")


@notify_app.command("set")
def notify_set(channel_id: str, events: Optional[str] = typer.Option(None, "--events"),
               digest: Optional[str] = typer.Option(None, "--digest"),
               enabled: Optional[bool] = typer.Option(None, "--enabled/--disabled")) -> None:
    """Change what a channel hears, its digest, or turn it off and on."""
    body: dict[str, Any] = {}
    if events:
        body["events"] = [e.strip() for e in events.split(",") if e.strip()]
    if digest:
        body["digest"] = digest
    if enabled is not None:
        body["enabled"] = enabled
    Client().patch(f"/api/notifications/channels/{seg(channel_id)}", body)
    typer.echo(f"Changed {channel_id}.")


@notify_app.command("remove")
def notify_remove(channel_id: str) -> None:
    Client().delete(f"/api/notifications/channels/{seg(channel_id)}")
    typer.echo(f"Removed {channel_id}.")


@notify_app.command("test")
def notify_test(channel_id: str) -> None:
    """Send a test message now (see `predictorx notify log`)."""
    d = Client().post(f"/api/notifications/channels/{seg(channel_id)}/test")
    typer.echo(f"Queued test delivery {d['id']}.")


@notify_app.command("log")
def notify_log(channel_id: str, output: Output = OutputOpt) -> None:
    """The channel's latest deliveries: status, attempts, the receiver's answer."""
    answer = Client().get(f"/api/notifications/channels/{seg(channel_id)}/deliveries")
    rows = answer["deliveries"]
    if output != Output.json:
        rows = [{**d, "answer": (d["log"][-1]["excerpt"] if d["log"] else "")[:60],
                 "code": d["last_status"] or ""} for d in rows]
    table(rows, [("id", "ID"), ("event", "EVENT"), ("status", "STATUS"), ("attempts", "ATTEMPTS"), ("code", "HTTP"),
                 ("answer", "ANSWER")], output, "nothing sent yet")


@notify_app.command("redeliver")
def notify_redeliver(delivery_id: str) -> None:
    d = Client().post(f"/api/notifications/deliveries/{seg(delivery_id)}/redeliver")
    typer.echo(f"Queued {d['id']} (again {delivery_id}).")


def register(root: typer.Typer) -> None:
    root.add_typer(inbox_app, name="inbox")
    root.add_typer(notify_app, name="notify")
