"""`predictorx`: the platform's command line. Thin: every command is one or two HTTP calls.

The commands that start the server in this process (`server start`, `server nginx-config`, `up`)
import the server, so they are added by `predictorx.program`, the console script's entry point;
this package imports nothing from server/, service/ or store/ (import-linter, pyproject.toml)."""

from __future__ import annotations

import sys
from typing import Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from .. import __version__, config
from .client import Client, CliError, fail, seg
from .output import Output, record, table

app = typer.Typer(
    help="Predictor X — coding-agent CLIs as teammates. Start with `predictorx up`.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
)
server_app = typer.Typer(help="Run the server.", no_args_is_help=True)
daemon_app = typer.Typer(help="The daemon that runs agents on this machine.", no_args_is_help=True)
repo_app = typer.Typer(help="Repositories, for agents inside a task.", no_args_is_help=True)

app.add_typer(server_app, name="server")
app.add_typer(daemon_app, name="daemon")
app.add_typer(repo_app, name="repo")
OutputOpt = typer.Option(Output.table, "--output", "-o", help="table or json")


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)


@app.command()
def login(server_url: Optional[str] = typer.Option(None, "--server-url", help="Defaults to the one configured."),
          token: Optional[str] = typer.Option(None, "--token"),
          sso: bool = typer.Option(False, "--sso", help="Sign in through the server's OpenID provider instead of a "
                                   "token (the device grant where it offers one, else your browser)."),
          provider: Optional[str] = typer.Option(None, "--provider", help="With --sso: the provider's name."),
          browser: bool = typer.Option(True, "--browser/--no-browser", help="With --sso: open the browser."),
          loopback: bool = typer.Option(False, "--loopback", help="With --sso: through this machine's browser and "
                                        "its loopback address even where the provider offers the device grant."),
          workspace: Optional[str] = typer.Option(None, "--workspace", help="Workspace id or slug.")) -> None:
    """Remember a (remote) server and your token in the state dir (0600)."""
    server_url = server_url or config.client_config().server_url
    if not server_url:
        fail("name the server with --server-url URL")
    if sso == bool(token):
        fail("give either --token TOKEN or --sso")
    if sso:
        from .sso import sign_in

        token = sign_in(server_url, provider, open_browser=browser, loopback=loopback)
    me = Client(server_url=server_url, token=token, workspace=workspace).get("/api/me")
    if me["kind"] != "user":
        fail("that token is not a user token; ask for a personal token")
    ws = workspace or (me["workspace_ids"][0] if me["workspace_ids"] else None)
    path = config.write_config(server_url=server_url.rstrip("/"), token=token, workspace_id=ws)
    typer.echo(f"Logged in to {server_url} as {me['user']['name']}; saved in {path}.")


@daemon_app.command("start")
def daemon_start(foreground: bool = typer.Option(False, "--foreground", help="Stay attached (logs to stderr)."),
                 name: Optional[str] = typer.Option(None, "--name", help="Shown in `daemon list`; defaults to the hostname."),
                 max_tasks: int = typer.Option(4, "--max-tasks", min=1, max=64, help="Execution slots."),
                 server_url: Optional[list[str]] = typer.Option(
                     None, "--server-url", help="Server (or proxy) URL; repeat it to fail over between several."),
                 sandbox: Optional[bool] = typer.Option(
                     None, "--sandbox/--no-sandbox", help="--sandbox: every agent in the bubblewrap sandbox, even one "
                     "its owner turned it off for; --no-sandbox: every agent unconfined, reaching all its user can "
                     "(also where bubblewrap is missing). Neither: each agent as it says, sandboxed by default.")) -> None:
    """Register this machine, then claim and run tasks (R-EX-1)."""
    from ..daemon.main import start

    start(foreground=foreground, name=name, max_tasks=max_tasks, server_urls=server_url, sandbox=sandbox)


@daemon_app.command("status")
def daemon_status(output: Output = OutputOpt) -> None:
    """This machine's daemon: id, whether it is running, its runtimes."""
    from ..daemon.identity import daemon_id, running_pid

    did = daemon_id()
    pid = running_pid()
    info = {"daemon_id": did, "running": pid is not None, "pid": pid, "state_dir": str(config.state_dir())}
    try:
        remote = Client().get(f"/api/daemons/{seg(did)}")
        info.update(online=remote["online"], name=remote["name"],
                    runtimes=[f"{r['provider']} {r['version'] or ''}".strip() for r in remote["runtimes"]])
    except CliError as e:
        info["server"] = e.message
    record(info, [(k, k) for k in info], output)


@daemon_app.command("list")
def daemon_list(output: Output = OutputOpt) -> None:
    """Daemons of the workspace: id, name, runtimes, online."""
    rows = Client().get("/api/daemons")
    for d in rows:
        d["runtime_names"] = [f"{r['provider']} {r['version'] or ''}".strip() for r in d["runtimes"]]
    table(rows, [("id", "ID"), ("name", "NAME"), ("runtime_names", "RUNTIMES"), ("online", "ONLINE"),
                 ("last_heartbeat_at", "LAST SEEN")], output, "no daemons: run `predictorx daemon start`")


@repo_app.command("checkout")
def repo_checkout(url: str, ref: Optional[str] = typer.Option(None, "--ref", help="Branch, tag or commit.")) -> None:
    """Inside a task: check a repository out into the task's working directory (R-CTX-4)."""
    from ..daemon.checkout import checkout_for_task

    path = checkout_for_task(url, ref)
    typer.echo(str(path))


@app.command()
def web() -> None:
    """Print a single-use sign-in link for the web UI (valid 15 minutes): open it, press Sign in."""
    link = Client().post("/api/login-link")
    typer.echo(link["url"])
    typer.echo("Open it in your browser and press Sign in (single use, valid 15 minutes).", err=True)


@app.command()
def demo() -> None:
    """Create a sample project over a small local git repo, a command agent, an issue, and run it."""
    from ..demo import run_demo

    run_demo()


# The other commands, by module: only the one a command line names is imported (the CLI starts in
# tens of milliseconds; `project` alone loads the resource types). Help and typos load them all.
GROUPS = {"projects": ["project"], "issues": ["issue", "label"], "small": ["agent", "task", "workspace", "token"],
          "workflow_commands": ["workflow", "bean", "check", "prov", "classify", "classify-rules", "mcp"], "forges": ["forge"],
          "secrets": ["secret"], "audit": ["audit"],
          "usage": ["usage", "budget"], "autopilots": ["autopilot"], "inbox": ["inbox", "notify"]}
_added: set[str] = set()


def add_commands(argv: list[str]) -> None:
    """Add the command groups `argv` needs to the app (all of them unless it names one)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    wanted = [m for m, names in GROUPS.items() if first in names]
    known = {typer.command_name(c) for c in app.registered_commands} | {g.name for g in app.registered_groups}
    if not wanted and first not in known:
        wanted = list(GROUPS)
    for module_name in wanted:
        if module_name not in _added:
            _added.add(module_name)
            # (an import statement's path, not importlib's: `python -X importtime` sees it, tests/test_cli_start.py)
            __import__(f"{__package__}.{module_name}", fromlist=["register"]).register(app)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    add_commands(args)
    try:
        app(args=args, standalone_mode=True)
    except CliError as e:
        sys.stderr.write(f"predictorx: {e.message}\n")
        sys.exit(e.code)


if __name__ == "__main__":
    main()
