"""`predictorx issue …`: file, list, show, comment on, assign issues and see their runs."""

from __future__ import annotations

from typing import Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

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
def list_(project: list[str] = typer.Option([], "--project", help="Project id or title; 'none': no project."),
          status: list[str] = typer.Option([], "--status", help="backlog, todo, in_progress, in_review, done, cancelled"),
          priority: list[str] = typer.Option([], "--priority", help="none, low, medium, high, urgent"),
          assignee: list[str] = typer.Option([], "--assignee", help="Agent or member name, 'me' or 'none'."),
          label: list[str] = typer.Option([], "--label", help="Label name (repeat: issues with all of them)."),
          search: Optional[str] = typer.Option(None, "--search", "-s", help="Words in the issue or its comments."),
          sort: Optional[str] = typer.Option(None, "--sort", help="newest, oldest, updated, priority, title"),
          limit: int = typer.Option(200, "--limit"), output: Output = OutputOpt) -> None:
    """List issues, newest first; each filter takes a value more than once (or `a,b`) for any of them."""
    params = {"project": project, "status": status, "priority": priority, "assignee": assignee, "label": label,
              "search": search, "sort": sort, "limit": limit}
    rows = Client().get("/api/issues", params={k: v for k, v in params.items() if v})
    for r in rows:
        r["label_names"] = ", ".join(x["name"] for x in r.get("labels", []))
    table(rows, ISSUE_COLS + [("label_names", "LABELS")], output, "no issues match" if search or any(
        (project, status, priority, assignee, label)) else "no issues yet")


@app.command("label")
def label_issue(issue: str = typer.Argument(..., help="Number (12, #12) or id."),
                labels: list[str] = typer.Argument(..., help="Label names; a new name makes the label."),
                remove: bool = typer.Option(False, "--remove", help="Take these labels off instead."),
                output: Output = OutputOpt) -> None:
    """Put labels on an issue (or take them off with --remove)."""
    client = Client()
    now: list[dict] = []
    for name in labels:
        if remove:
            now = client.delete(f"/api/issues/{seg(issue)}/labels/{seg(name)}") or []
        else:
            now = client.post(f"/api/issues/{seg(issue)}/labels", {"label": name})
    if output == Output.json:
        record({"labels": now}, [], output)
    else:
        typer.echo(f"Issue {issue}: " + (", ".join(x["name"] for x in now) or "no labels") + ".")


labels_app = typer.Typer(help="A workspace's labels: list, create, change, delete.", no_args_is_help=True)
LABEL_COLS = [("name", "NAME"), ("color", "COLOUR"), ("id", "ID")]


@labels_app.command("list")
def list_labels(output: Output = OutputOpt) -> None:
    """The workspace's labels."""
    table(Client().get("/api/labels"), LABEL_COLS, output, "no labels yet: `predictorx label create NAME`")


@labels_app.command("create")
def create_label(name: str, color: Optional[str] = typer.Option(None, "--color", "--colour", help="#rrggbb"),
                 output: Output = OutputOpt) -> None:
    """Make a label (a colour is picked if none is given)."""
    record(Client().post("/api/labels", {"name": name, "color": color}), LABEL_COLS, output)


@labels_app.command("update")
def update_label(label: str, name: Optional[str] = typer.Option(None, "--name"),
                 color: Optional[str] = typer.Option(None, "--color", "--colour"), output: Output = OutputOpt) -> None:
    """Rename a label or change its colour."""
    body = {k: v for k, v in (("name", name), ("color", color)) if v is not None}
    record(Client().patch(f"/api/labels/{seg(label)}", body), LABEL_COLS, output)


@labels_app.command("delete")
def delete_label(label: str) -> None:
    """Delete a label; every issue carrying it loses it."""
    Client().delete(f"/api/labels/{seg(label)}")
    typer.echo(f"Deleted label {label}.")


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
    root.add_typer(labels_app, name="label")
