"""`predictorx agent mcp add|list|remove` (issue 28 §3): an agent's own MCP servers, added to its
runs beside agents-room and `predictorx mcp` (Claude Code, Codex, ACP agents). A secret is never
a value here: `--env-var NAME`, `--env-header H=NAME` and `--bearer-env NAME` name one of the
agent's secrets (`predictorx agent secret set`), which the CLI reads from its environment."""

from __future__ import annotations

from typing import Any, Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from .client import Client, fail, seg
from .output import Output, table

app = typer.Typer(help="An agent's own MCP servers (stdio command or HTTP URL).", no_args_is_help=True)


def _pairs(values: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"{what} takes KEY=VALUE, not {item!r}", 2)
        out[key] = value
    return out


def _servers(agent: str) -> list[dict[str, Any]]:
    return Client().get(f"/api/agents/{seg(agent)}").get("mcp_servers") or []


@app.command("add")
def add(agent: str = typer.Argument(..., help="Agent name or id."),
        name: str = typer.Argument(..., help="The server's name in the agent's MCP configuration."),
        command: Optional[str] = typer.Option(None, "--command", help="stdio: the program to start."),
        arg: list[str] = typer.Option([], "--arg", help="stdio: one argument; repeat for each."),
        env: list[str] = typer.Option([], "--env", help="stdio: KEY=VALUE, a plain (not secret) variable."),
        env_var: list[str] = typer.Option([], "--env-var", help="stdio: NAME of a variable of the agent (a secret) "
                                          "the server gets; repeat for each."),
        url: Optional[str] = typer.Option(None, "--url", help="HTTP: the server's URL."),
        header: list[str] = typer.Option([], "--header", help="HTTP: H=VALUE, a plain header."),
        env_header: list[str] = typer.Option([], "--env-header", help="HTTP: H=NAME, a header carrying the "
                                             "agent's variable NAME (a secret)."),
        bearer_env: Optional[str] = typer.Option(None, "--bearer-env", help="HTTP: NAME of the agent's variable "
                                                 "sent as `Authorization: Bearer …`.")) -> None:
    """Add (or replace) an MCP server of an agent you own."""
    if bool(command) == bool(url):
        fail("give --command (a stdio server) or --url (an HTTP server)", 2)
    server: dict[str, Any] = {"name": name}
    if command:
        server.update(command=command, args=arg, env=_pairs(env, "--env"), env_vars=env_var)
    else:
        server.update(url=url, headers=_pairs(header, "--header"), env_headers=_pairs(env_header, "--env-header"),
                      bearer_env=bearer_env)
    servers = [s for s in _servers(agent) if s.get("name") != name] + [server]
    Client().patch(f"/api/agents/{seg(agent)}", {"mcp_servers": servers})
    typer.echo(f"Added MCP server {name} to agent {agent}: its next runs get it.")


@app.command("list")
def list_(agent: str = typer.Argument(...), output: Output = typer.Option(Output.table, "--output", "-o")) -> None:
    """An agent's MCP servers."""
    rows = [{**s, "where": s.get("url") or " ".join([s.get("command", ""), *s.get("args", [])]),
             "secrets": ", ".join([*(s.get("env_vars") or []), *(s.get("env_headers") or {}).values(),
                                   *([s["bearer_env"]] if s.get("bearer_env") else [])])} for s in _servers(agent)]
    table(rows, [("name", "NAME"), ("where", "COMMAND / URL"), ("secrets", "SECRETS")], output,
          f"agent {agent} has no MCP servers of its own")


@app.command("remove")
def remove(agent: str = typer.Argument(...), name: str = typer.Argument(...)) -> None:
    """Remove one of an agent's MCP servers."""
    servers = _servers(agent)
    if not any(s.get("name") == name for s in servers):
        fail(f"agent {agent} has no MCP server {name}", 1)
    Client().patch(f"/api/agents/{seg(agent)}", {"mcp_servers": [s for s in servers if s.get("name") != name]})
    typer.echo(f"Removed MCP server {name} from agent {agent}.")
