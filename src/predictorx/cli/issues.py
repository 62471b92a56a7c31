"""`predictorx issue …`: file, list, show, comment on, assign issues and see their runs."""

from __future__ import annotations

from typing import Optional

import typer

from .client import Client, seg
from .output import Output, record, table

app = typer.Typer(help="Issues: create, assign to an agent, comment, see runs.", no_args_is_help=True)
OutputOpt = typer.Option(Output.table, "--output", "-o", help="table or json")
ISSUE_COLS = [("number", "#"), ("title", "TITLE"), ("status", "STATUS"), ("priority", "PRIORITY"),
              ("assignee_name", "ASSIGNEE")]
RUN_COLS = [("id", "TASK"), ("agent_name", "AGENT"), ("status", "STATUS"), ("wait_reason", "WAITING FOR"),
            ("failure_reason", "FAILURE"), ("branch_name", "BRANCH"), ("created_at", "CREATED"),
            ("finished_at", "FINISHED")]


@app.command("create")
def create(
    title: str = typer.Option(..., "--title"),
    body: str = typer.Option("", "--body", "--description"),
    project: Optional[str] = typer.Option(None, "--project", help="Project id."),
    assignee: Optional[str] = typer.Option(None, "--assignee", help="An agent's name (queues a task) or a member."),
    priority: str = typer.Option("none", "--priority"),
    status: str = typer.Option("todo", "--status"),
    output: Output = OutputOpt,
) -> None:
    """File an issue; with --assignee <agent> it is queued for that agent at once."""
    i = Client().post("/api/issues", {"title": title, "body": body, "project_id": project, "assignee": assignee,
                                       "priority": priority, "status": status})
    if output == Output.json:
        record(i, [], output)
    else:
        who = f", assigned to {i['assignee_name']}" if i.get("assignee_name") else ""
        typer.echo(f"Created issue #{i['number']} “{i['title']}”{who}.")


@app.command("list")
def list_(project: Optional[str] = typer.Option(None, "--project"),
          status: Optional[str] = typer.Option(None, "--status"), output: Output = OutputOpt) -> None:
    """List issues, newest first."""
    params = {k: v for k, v in (("project", project), ("status", status)) if v}
    table(Client().get("/api/issues", params=params), ISSUE_COLS, output, "no issues yet")


@app.command("get")
def get(issue: str = typer.Argument(..., help="Number (12, #12) or id."), output: Output = OutputOpt) -> None:
    """Show an issue with its comments."""
    i = Client().get(f"/api/issues/{seg(issue)}")
    record(i, [("number", "#"), ("title", "title"), ("status", "status"), ("priority", "priority"),
               ("assignee_name", "assignee"), ("project_id", "project"), ("body", "body")], output)
    if output == Output.table:
        for c in i.get("comments", []):
            typer.echo(f"\n— {c['author_type']} at {c['created_at']}:\n{c['body']}")


@app.command("comment")
def comment(issue: str, text: Optional[str] = typer.Argument(None), body: Optional[str] = typer.Option(None, "--body"),
            output: Output = OutputOpt) -> None:
    """Comment on an issue (agents use this with their task token)."""
    content = body if body is not None else text
    if not content:
        from .client import fail
        fail("give the comment text: `predictorx issue comment 12 \"text\"` or --body", 2)
    c = Client().post(f"/api/issues/{seg(issue)}/comments", {"body": content})
    if output == Output.json:
        record(c, [], output)
    else:
        typer.echo(f"Commented on issue {issue}.")


@app.command("assign")
def assign(issue: str, agent: Optional[str] = typer.Option(None, "--agent", "--to", help="Agent (or member) name; omit to unassign."),
           output: Output = OutputOpt) -> None:
    """Assign an issue to an agent: this queues a task for it."""
    i = Client().post(f"/api/issues/{seg(issue)}/assign", {"assignee": agent})
    if output == Output.json:
        record(i, [], output)
    elif i.get("task"):
        typer.echo(f"Issue #{i['number']} assigned to {i['assignee_name']}; task {i['task']['id']} is {i['task']['status']}.")
    else:
        typer.echo(f"Issue #{i['number']} assigned to {i.get('assignee_name') or 'nobody'}.")


@app.command("status")
def set_status(issue: str, status: str, output: Output = OutputOpt) -> None:
    """Set an issue's status (backlog, todo, in_progress, in_review, done, cancelled)."""
    i = Client().patch(f"/api/issues/{seg(issue)}", {"status": status})
    record(i, [("number", "#"), ("status", "status")], output)


@app.command("edit")
def edit(issue: str, title: Optional[str] = typer.Option(None, "--title"),
         body: Optional[str] = typer.Option(None, "--body", "--description", help="Markdown; '-' reads stdin."),
         priority: Optional[str] = typer.Option(None, "--priority"),
         status: Optional[str] = typer.Option(None, "--status"),
         version: Optional[int] = typer.Option(None, "--version", help="Refuse if someone changed these fields since this version."),
         output: Output = OutputOpt) -> None:
    """Change an issue's title, description, priority or status (only what is given)."""
    if body == "-":
        import sys
        body = sys.stdin.read()
    changes = {k: v for k, v in (("title", title), ("body", body), ("priority", priority), ("status", status),
                                 ("version", version)) if v is not None}
    if not set(changes) - {"version"}:
        from .client import fail
        fail("nothing to change: give --title, --body, --priority or --status", 2)
    i = Client().patch(f"/api/issues/{seg(issue)}", changes)
    if output == Output.json:
        record(i, [], output)
    else:
        typer.echo(f"Issue #{i['number']} “{i['title']}” saved (version {i['version']}).")


@app.command("delete")
def delete(issue: str, yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
           output: Output = OutputOpt) -> None:
    """Delete an issue with its comments, runs and workflows (owners and admins)."""
    client = Client()
    if not yes:
        i = client.get(f"/api/issues/{seg(issue)}")
        typer.confirm(f"Delete issue #{i['number']} “{i['title']}” with its comments, runs and workflows?", abort=True)
    out = client.delete(f"/api/issues/{seg(issue)}")
    if output == Output.json:
        record(out, [], output)
    else:
        typer.echo(f"Deleted issue #{out['number']} “{out['title']}” and {out['what']}.")


@app.command("runs")
def runs(issue: str, output: Output = OutputOpt) -> None:
    """The tasks (runs) of an issue, oldest first."""
    table(Client().get(f"/api/issues/{seg(issue)}/runs"), RUN_COLS, output, "no runs: assign the issue to an agent")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="issue")
