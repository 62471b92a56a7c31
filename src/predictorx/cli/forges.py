"""`predictorx forge add|list|get|update|remove|test|rotate-webhook-secret` (issue 22 §1).

A token is never an argument: argv is readable by every process on the machine and lands in
shell history. It comes from stdin (`--token-stdin`), from an environment variable named by
`--token-env NAME`, or from a prompt that does not echo.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from .client import Client, fail, seg
from .output import Output, record, table

app = typer.Typer(help="Forge connections: GitHub, GitLab, Gitea, Forgejo (owners and admins).",
                  no_args_is_help=True)
OutputOpt = typer.Option(Output.table, "--output", "-o", help="table or json")
COLUMNS = [("id", "ID"), ("name", "NAME"), ("kind", "KIND"), ("base_url", "URL"), ("credential", "TOKEN"),
           ("members_may_merge", "MEMBERS MERGE")]
FIELDS = [("id", "id"), ("name", "name"), ("kind", "kind"), ("base_url", "base URL"), ("api_url", "API URL"),
          ("credential", "token"), ("members_may_merge", "members may merge"), ("webhook_url", "webhook URL")]
TokenStdin = typer.Option(False, "--token-stdin", help="Read the access token from standard input.")
TokenEnv = typer.Option(None, "--token-env", metavar="NAME",
                        help="Read the access token from the environment variable NAME.")


def read_token(from_stdin: bool, env_name: str | None, *, required: bool) -> str | None:
    """The token from stdin, a named environment variable, or a prompt without echo."""
    if from_stdin and env_name:
        fail("give the token one way: --token-stdin or --token-env, not both", 2)
    if env_name:
        value = os.environ.get(env_name, "").strip()
        if not value:
            fail(f"the environment variable {env_name} is not set or empty", 2)
        return value
    if from_stdin:
        value = sys.stdin.readline().strip()
        if not value:
            fail("no token on standard input", 2)
        return value
    if not required:
        return None
    if not sys.stdin.isatty():
        fail("give the token with --token-stdin (piped) or --token-env NAME; it is never an argument", 2)
    return typer.prompt("Access token", hide_input=True).strip() or fail("no token given", 2)


def _show(row: dict[str, Any], output: Output) -> None:
    record(row, FIELDS, output)


def _show_secret(row: dict[str, Any], output: Output, what: str) -> None:
    if output == Output.json:
        record(row, [], output)
        return
    _show(row, output)
    typer.echo("")
    typer.echo(f"{what} Configure the forge's webhook now — this secret is shown only once:")
    typer.echo(f"  URL:    {row.get('webhook_url', '')}")
    typer.echo(f"  secret: {row['webhook_secret']}")


@app.command("add")
def add(kind: str = typer.Option(..., "--kind", help="github, gitlab, gitea or forgejo."),
        name: str = typer.Option(..., "--name", help="A short name, e.g. gh."),
        url: str = typer.Option(..., "--url", help="The forge's web address, e.g. https://github.com."),
        api_url: Optional[str] = typer.Option(None, "--api-url", help="Only when the API is not where the kind's "
                                              "default puts it."),
        members_may_merge: bool = typer.Option(False, "--members-may-merge/--no-members-may-merge",
                                               help="Let members (not only admins) merge through it."),
        token_stdin: bool = TokenStdin, token_env: Optional[str] = TokenEnv, output: Output = OutputOpt) -> None:
    """Add a forge connection; prints the webhook URL and secret once."""
    body: dict[str, Any] = {"kind": kind, "name": name, "base_url": url, "members_may_merge": members_may_merge,
                            "credential": read_token(token_stdin, token_env, required=True)}
    if api_url:
        body["api_url"] = api_url
    _show_secret(Client().post("/api/forges", body), output, f"Added forge connection {name}.")


@app.command("list")
def list_(output: Output = OutputOpt) -> None:
    """The workspace's forge connections (tokens only as "set, last 4")."""
    table(Client().get("/api/forges"), COLUMNS, output,
          "no forge connections: `predictorx forge add --kind github --name gh --url https://github.com --token-stdin`")


@app.command("get")
def get(connection: str, output: Output = OutputOpt) -> None:
    """One connection, by id or name."""
    _show(Client().get(f"/api/forges/{seg(connection)}"), output)


@app.command("update")
def update(connection: str,
           name: Optional[str] = typer.Option(None, "--name"),
           url: Optional[str] = typer.Option(None, "--url"),
           api_url: Optional[str] = typer.Option(None, "--api-url"),
           members_may_merge: Optional[bool] = typer.Option(None, "--members-may-merge/--no-members-may-merge"),
           token_stdin: bool = TokenStdin, token_env: Optional[str] = TokenEnv, output: Output = OutputOpt) -> None:
    """Change a connection: only what is given changes; a new token replaces the old."""
    body: dict[str, Any] = {k: v for k, v in (("name", name), ("base_url", url), ("api_url", api_url),
                                              ("members_may_merge", members_may_merge)) if v is not None}
    token = read_token(token_stdin, token_env, required=False)
    if token is not None:
        body["credential"] = token
    if not body:
        fail("nothing to change: give --name, --url, --api-url, --members-may-merge, --token-stdin or --token-env", 2)
    row = Client().patch(f"/api/forges/{seg(connection)}", body)
    if output == Output.json:
        record(row, [], output)
    else:
        typer.echo(f"Updated forge connection {row['name']} (token {row['credential']}).")


@app.command("remove")
def remove(connection: str) -> None:
    """Remove a connection (refused while a pushed branch or open pull request uses it)."""
    typer.echo(Client().delete(f"/api/forges/{seg(connection)}")["message"] + ".")


@app.command("test")
def test(connection: str, output: Output = OutputOpt) -> None:
    """Ask the forge who the token is; its refusal is shown as it said it."""
    answer = Client().post(f"/api/forges/{seg(connection)}/test")
    if output == Output.json:
        record(answer, [], output)
    else:
        typer.echo(answer["message"] + ".")


@app.command("rotate-webhook-secret")
def rotate_webhook_secret(connection: str, output: Output = OutputOpt) -> None:
    """Make a new webhook secret (the old one stops working); prints it once."""
    row = Client().post(f"/api/forges/{seg(connection)}/webhook-secret")
    _show_secret(row, output, f"New webhook secret for {row['name']}.")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="forge")
