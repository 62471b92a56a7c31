"""`predictorx project …` and `predictorx project resource …` (the seeds' commands, exactly)."""

from __future__ import annotations

from typing import Any, Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from .client import Client, fail, seg
from .output import Output, record, table
from .resourceflags import WithFieldFlags, payload

app = typer.Typer(help="Projects and their resources.", no_args_is_help=True)
resource_app = typer.Typer(help="A project's typed resources (repos, local folders, …).", no_args_is_help=True)
app.add_typer(resource_app, name="resource")

OutputOpt = typer.Option(Output.table, "--output", "-o", help="table or json")
PROJECT_COLS = [("id", "ID"), ("title", "TITLE"), ("status", "STATUS"), ("priority", "PRIORITY")]
RESOURCE_COLS = [("id", "ID"), ("position", "POS"), ("resource_type", "TYPE"), ("label", "LABEL"),
                 ("resource_ref", "REF")]


@app.command("create")
def create(
    title: str = typer.Option(..., "--title", help="Project title."),
    description: str = typer.Option("", "--description"),
    repo: list[str] = typer.Option([], "--repo", help="A git URL; repeat for several. A bad one aborts the whole creation."),
    status: str = typer.Option("planned", "--status"),
    priority: str = typer.Option("none", "--priority"),
    output: Output = OutputOpt,
) -> None:
    """Create a project, with its repos, in one transaction."""
    body = {"title": title, "description": description, "status": status, "priority": priority,
            "resources": [{"resource_type": "github_repo", "resource_ref": {"url": u}} for u in repo]}
    p = Client().post("/api/projects", body)
    if output == Output.json:
        record(p, [], output)
        return
    typer.echo(f"Created project {p['id']} “{p['title']}” with {len(p['resources'])} resource(s).")


@app.command("list")
def list_(output: Output = OutputOpt) -> None:
    """List the workspace's projects."""
    table(Client().get("/api/projects"), PROJECT_COLS, output, "no projects yet: `predictorx project create --title …`")


@app.command("get")
def get(project_id: str, output: Output = OutputOpt) -> None:
    """Show a project and its resources."""
    p = Client().get(f"/api/projects/{seg(project_id)}")
    if output == Output.json:
        record(p, [], output)
        return
    record(p, [("id", "id"), ("title", "title"), ("description", "description"), ("status", "status"),
               ("priority", "priority"), ("forge_policy", "forge policy")], output)
    typer.echo("")
    table(p["resources"], RESOURCE_COLS, output, "no resources")


@app.command("update")
def update(
    project_id: str,
    title: Optional[str] = typer.Option(None, "--title"),
    description: Optional[str] = typer.Option(None, "--description"),
    status: Optional[str] = typer.Option(None, "--status"),
    priority: Optional[str] = typer.Option(None, "--priority"),
    auto_push: Optional[bool] = typer.Option(None, "--auto-push/--no-auto-push",
                                             help="Push an agent's branch to the forge when its run ends."),
    auto_pr: Optional[bool] = typer.Option(None, "--auto-pr/--no-auto-pr",
                                           help="Open a pull request for a pushed branch by itself."),
    draft: Optional[bool] = typer.Option(None, "--draft/--no-draft", help="Open pull requests as drafts."),
    max_followups: Optional[int] = typer.Option(None, "--max-followups",
                                                help="Automatic follow-ups per pull request (reviews, failed checks)."),
    on_merge: Optional[str] = typer.Option(None, "--on-merge", help="done or in_review: where a merged PR's issue goes."),
    output: Output = OutputOpt,
) -> None:
    """Change a project: only the options given change (the forge policy included)."""
    body: dict[str, Any] = {k: v for k, v in (("title", title), ("description", description), ("status", status),
                                              ("priority", priority)) if v is not None}
    policy = {k: v for k, v in (("auto_push", auto_push), ("auto_pr", auto_pr), ("draft", draft),
                                ("max_followups", max_followups), ("on_merge", on_merge)) if v is not None}
    if policy:
        body["forge_policy"] = policy
    if not body:
        fail("nothing to change: give --title, --status, --auto-push/--no-auto-push, --max-followups, … (see --help)", 2)
    p = Client().patch(f"/api/projects/{seg(project_id)}", body)
    if output == Output.json:
        record(p, [], output)
        return
    fp = p.get("forge_policy") or {}
    typer.echo(f"Updated project {p['id']} “{p['title']}”; forge policy: "
               + ", ".join(f"{k}={v}" for k, v in fp.items()) + ".")


@resource_app.command("list")
def resource_list(project_id: str, output: Output = OutputOpt) -> None:
    """List a project's resources in order."""
    table(Client().get(f"/api/projects/{seg(project_id)}/resources"), RESOURCE_COLS, output, "no resources")


@resource_app.command("add")
@WithFieldFlags
def resource_add(
    project_id: str,
    type_: str = typer.Option(..., "--type", help="The resource type: github_repo, or any other registered type (its fields are the flags below)."),
    ref: Optional[str] = typer.Option(None, "--ref", help="github_repo: branch/tag/commit; or a JSON payload '{…}' for any type."),
    ref_label: Optional[str] = typer.Option(None, "--ref-label", "--label", help="A label shown to people and agents."),
    position: Optional[int] = typer.Option(None, "--position", min=0),
    output: Output = OutputOpt,
    fields: Optional[dict] = None,
) -> None:
    """Add a resource to a project."""
    body: dict[str, Any] = {"resource_type": type_,
                            "resource_ref": payload(ref, fields or {})}
    if ref_label is not None:
        body["label"] = ref_label
    if position is not None:
        body["position"] = position
    r = Client().post(f"/api/projects/{seg(project_id)}/resources", body)
    if output == Output.json:
        record(r, [], output)
    else:
        typer.echo(f"Added {r['resource_type']} {r['id']}.")


@resource_app.command("update")
@WithFieldFlags
def resource_update(
    project_id: str,
    resource_id: str,
    ref: Optional[str] = typer.Option(None, "--ref"),
    ref_label: Optional[str] = typer.Option(None, "--ref-label", "--label"),
    position: Optional[int] = typer.Option(None, "--position", min=0),
    clear: list[str] = typer.Option([], "--clear", help="Clear a field (e.g. --clear ref, --clear label)."),
    output: Output = OutputOpt,
    fields: Optional[dict] = None,
) -> None:
    """Change a resource: only the fields given change; --clear FIELD empties one."""
    ref_patch = payload(ref, fields or {})
    body: dict[str, Any] = {}
    for field in clear:
        if field == "label":
            body["label"] = None
        else:
            ref_patch[field] = None
    if ref_patch:
        body["resource_ref"] = ref_patch
    if ref_label is not None:
        body["label"] = ref_label
    if position is not None:
        body["position"] = position
    if not body:
        fail("nothing to change: give at least one of --url, --ref, --local-path, --execution-mode, --ref-label, …", 2)
    r = Client().patch(f"/api/projects/{seg(project_id)}/resources/{seg(resource_id)}", body)
    if output == Output.json:
        record(r, [], output)
    else:
        typer.echo(f"Updated {r['resource_type']} {r['id']}.")


@resource_app.command("remove")
def resource_remove(project_id: str, resource_id: str) -> None:
    """Remove a resource from a project."""
    Client().delete(f"/api/projects/{seg(project_id)}/resources/{seg(resource_id)}")
    typer.echo(f"Removed resource {resource_id}.")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="project")
