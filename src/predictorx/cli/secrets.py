"""`predictorx agent secret|env …` and `predictorx secret …` (issue 28 §2).

An agent's secrets and plain variables, given to its runs in their environment. A secret's value
is never an argument (argv is readable by every process on the machine and lands in shell
history): it comes from stdin (`--value-stdin`), from an environment variable named by
`--value-env NAME`, or from a prompt that does not echo. A plain variable is no secret:
`agent env set AGENT NAME=VALUE`. Secrets are listed by name and last four characters only.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from .client import Client, fail, seg
from .output import Output, table

OutputOpt = typer.Option(Output.table, "--output", "-o", help="table or json")
ValueStdin = typer.Option(False, "--value-stdin", help="Read the value from standard input (one line).")
ValueEnv = typer.Option(None, "--value-env", metavar="VAR", help="Read the value from this environment variable.")
COLUMNS = [("name", "NAME"), ("kind", "KIND"), ("shown", "VALUE"), ("scope", "FROM"), ("updated_at", "UPDATED")]

secret_app = typer.Typer(help="An agent's secrets: in its runs' environment, masked in what they upload "
                         "(its owner sets them).", no_args_is_help=True)
env_app = typer.Typer(help="An agent's plain environment variables (not secret: shown as they are).",
                      no_args_is_help=True)
workspace_secret_app = typer.Typer(help="Workspace secrets, granted to agents by name (owners and admins).",
                                   no_args_is_help=True)


def read_value(from_stdin: bool, env_name: str | None) -> str:
    """The value from stdin, a named environment variable, or a prompt without echo."""
    if from_stdin and env_name:
        fail("give the value one way: --value-stdin or --value-env, not both", 2)
    if env_name:
        value = os.environ.get(env_name, "")
        if not value:
            fail(f"the environment variable {env_name} is not set or empty", 2)
        return value
    if from_stdin:
        value = sys.stdin.readline().rstrip("\r\n")
        if not value:
            fail("no value on standard input", 2)
        return value
    if not sys.stdin.isatty():
        fail("give the value with --value-stdin (piped) or --value-env VAR; a secret is never an argument", 2)
    return typer.prompt("Value", hide_input=True) or fail("no value given", 2)


def _rows(rows: list[dict]) -> list[dict]:
    for r in rows:
        r["kind"] = "secret" if r["secret"] else "variable"
        r["shown"] = (f"…{r['last4']}" if r.get("last4") else "(hidden)") if r["secret"] else r.get("value", "")
        r["scope"] = "workspace (granted)" if r.get("granted") else r["scope"]
    return rows


def _list(agent: str, output: Output) -> None:
    table(_rows(Client().get(f"/api/agents/{seg(agent)}/env")), COLUMNS, output,
          f"agent {agent} has no variables: `predictorx agent secret set {agent} NAME`")


@secret_app.command("set")
def secret_set(agent: str = typer.Argument(..., help="Agent name or id."),
               name: str = typer.Argument(..., help="The environment variable's name, e.g. OPENAI_API_KEY."),
               value_stdin: bool = ValueStdin, value_env: Optional[str] = ValueEnv) -> None:
    """Set (or replace) a secret of an agent you own."""
    r = Client().put(f"/api/agents/{seg(agent)}/env/{seg(name)}",
                     {"value": read_value(value_stdin, value_env), "secret": True})
    typer.echo(f"Set secret {r['name']} of agent {agent}" + (f" (…{r['last4']})." if r.get("last4") else "."))


@secret_app.command("list")
def secret_list(agent: str = typer.Argument(..., help="Agent name or id."), output: Output = OutputOpt) -> None:
    """An agent's secrets and variables: names, never a secret's value."""
    _list(agent, output)


@secret_app.command("unset")
def secret_unset(agent: str = typer.Argument(...), name: str = typer.Argument(...)) -> None:
    """Remove one of an agent's secrets or variables."""
    Client().delete(f"/api/agents/{seg(agent)}/env/{seg(name)}")
    typer.echo(f"Removed {name} from agent {agent}.")


@secret_app.command("grant")
def secret_grant(agent: str = typer.Argument(...), name: str = typer.Argument(..., help="A workspace secret.")) -> None:
    """Give a workspace secret to an agent's runs (owners and admins)."""
    Client().post(f"/api/agents/{seg(agent)}/grants", {"name": name})
    typer.echo(f"Granted workspace secret {name} to agent {agent}.")


@secret_app.command("revoke")
def secret_revoke(agent: str = typer.Argument(...), name: str = typer.Argument(...)) -> None:
    """Take a workspace secret back from an agent (owners and admins)."""
    Client().delete(f"/api/agents/{seg(agent)}/grants/{seg(name)}")
    typer.echo(f"Revoked workspace secret {name} from agent {agent}.")


@env_app.command("set")
def env_set(agent: str = typer.Argument(..., help="Agent name or id."),
            assignment: str = typer.Argument(..., metavar="NAME=VALUE", help="Not for secrets: argv is public.")) -> None:
    """Set (or replace) a plain variable of an agent you own."""
    name, sep, value = assignment.partition("=")
    if not sep:
        fail("give NAME=VALUE", 2)
    Client().put(f"/api/agents/{seg(agent)}/env/{seg(name)}", {"value": value, "secret": False})
    typer.echo(f"Set {name} for agent {agent}.")


@env_app.command("list")
def env_list(agent: str = typer.Argument(...), output: Output = OutputOpt) -> None:
    """An agent's variables and secrets (secrets by name only)."""
    _list(agent, output)


@env_app.command("unset")
def env_unset(agent: str = typer.Argument(...), name: str = typer.Argument(...)) -> None:
    """Remove one of an agent's variables."""
    secret_unset(agent, name)


@workspace_secret_app.command("set")
def workspace_set(name: str = typer.Argument(...), value_stdin: bool = ValueStdin,
                  value_env: Optional[str] = ValueEnv) -> None:
    """Set (or replace) a workspace secret; `agent secret grant` gives it to an agent."""
    r = Client().put(f"/api/secrets/{seg(name)}", {"value": read_value(value_stdin, value_env)})
    typer.echo(f"Set workspace secret {r['name']}" + (f" (…{r['last4']})." if r.get("last4") else "."))


@workspace_secret_app.command("list")
def workspace_list(output: Output = OutputOpt) -> None:
    """The workspace's secrets and the agents they are granted to."""
    rows = _rows(Client().get("/api/secrets"))
    table(rows, [("name", "NAME"), ("shown", "VALUE"), ("agents", "AGENTS"), ("updated_at", "UPDATED")], output,
          "no workspace secrets: `predictorx secret set NAME`")


@workspace_secret_app.command("unset")
def workspace_unset(name: str = typer.Argument(...)) -> None:
    """Remove a workspace secret (and every grant of it)."""
    Client().delete(f"/api/secrets/{seg(name)}")
    typer.echo(f"Removed workspace secret {name}.")


def register(root: typer.Typer) -> None:
    root.add_typer(workspace_secret_app, name="secret")
