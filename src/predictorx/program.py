"""The `predictorx` program: the thin HTTP commands of `predictorx.cli` plus the commands that
start the server in this process — `server start`, `server nginx-config` and `up`. Those import
the server, so they live here rather than in cli/, which stays thin over HTTP (an import-linter
contract in pyproject.toml). The console script and `python -m predictorx` start here.

People and agents run the CLI all day: this module imports nothing at its top, `predictorx version`
answers without loading the command line's libraries, and the rest loads only the commands it
runs (issue 23, item 9; bench/cli_start.py, tests/test_cli_start.py)."""

import sys  # (no `from __future__ import annotations`: typer reads the nested commands' annotations)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args == ["version"]:
        from . import __version__

        sys.stdout.write(__version__ + "\n")
        return
    from .cli.main import main as cli_main

    _add_in_process_commands()
    _add_oidc_commands()
    cli_main(args)


def _add_oidc_commands() -> None:
    """`server oidc …` (oidc_admin.py: the server's OpenID providers, in its database)."""
    from .cli.main import server_app
    from .oidc_admin import oidc_app

    if not any(g.name == "oidc" for g in server_app.registered_groups):
        server_app.add_typer(oidc_app, name="oidc")


def _add_in_process_commands() -> None:
    """`server start`, `server nginx-config` and `up` (their server imports wait for their call)."""
    from typing import Optional

    from .cli import commandline as typer

    from . import config
    from .apiclient import fail
    from .cli.main import app, server_app

    if any(c.name == "up" for c in app.registered_commands):
        return

    @server_app.command("start")
    def server_start(host: str = typer.Option("127.0.0.1", "--host", help="Loopback by default."),
                     port: int = typer.Option(8484, "--port", min=1, max=65535),
                     workers: int = typer.Option(1, "--workers", min=1, max=64,
                                                 help="Server processes on this port (PostgreSQL only).")) -> None:
        """Run the API and web server in the foreground."""
        import gc

        # The start imports and builds ~220,000 objects that live as long as the process (modules,
        # routes, models, templates); the collector would walk them again and again while they pile
        # up, a quarter of the start's CPU. Off until serve() has built the app (it freezes them).
        gc.disable()
        from .hardening import harden_service
        from .server.run import port_free, serve

        harden_service()  # 0600 database and logs, /proc unreadable to agents (R-SEC-6, R-SEC-7)
        if not port_free(host, port):
            fail(f"port {port} on {host} is in use; pick another with --port")
        typer.echo(f"Predictor X server on http://{host}:{port} (state in {config.state_dir()})", err=True)
        try:
            serve(host, port, workers=workers)
        except ValueError as e:
            fail(str(e))

    @server_app.command("nginx-config")
    def server_nginx_config(upstream: list[str] = typer.Option(..., "--upstream", help="A replica, HOST:PORT; repeat it."),
                            listen: str = typer.Option("8080", "--listen", help="nginx's listen directive value."),
                            prefix: Optional[str] = typer.Option(
                                None, "--prefix", help="A directory for a standalone nginx (pid, logs, temp files); "
                                                       "without it, a file for /etc/nginx/conf.d.")) -> None:
        """Print an nginx configuration for several server replicas (docs/scale.md)."""
        from .server.nginx import render

        try:
            typer.echo(render(upstream, listen=listen, prefix=prefix), nl=False)
        except ValueError as e:
            fail(str(e))

    @server_app.command("rotate-key")
    def server_rotate_key(dry_run: bool = typer.Option(False, "--dry-run", help="Count and check, change nothing.")
                          ) -> None:
        """Re-wrap every stored secret's data key with a new server key, then retire the old (docs/forges.md)."""
        from .service.secretbox import SecretError, rotate, rotation_plan
        from .store.db import Database

        db = Database()
        try:
            db.migrate()
            done = rotation_plan(db.read) if dry_run else rotate(db.write)
        except SecretError as e:
            fail(e.message)
        finally:
            db.dispose()
        typer.echo(done.report())

    @app.command()
    def up(host: str = typer.Option("127.0.0.1", "--host", help="Loopback by default (R-SEC-1)."),
           port: int = typer.Option(8484, "--port", min=1, max=65535),
           no_daemon: bool = typer.Option(False, "--no-daemon", help="Only the server and web UI."),
           demo: bool = typer.Option(True, "--demo/--no-demo", help="On a fresh state dir, create and run the demo."),
           sandbox: Optional[bool] = typer.Option(
               None, "--sandbox/--no-sandbox", help="The local daemon's sandbox (as `daemon start`): --sandbox every "
               "agent, --no-sandbox none; neither: each agent as it says, sandboxed by default.")) -> None:
        """Server + web UI + a local daemon, in one process group, on the embedded SQLite default."""
        from .up import run_up

        run_up(host, port, with_daemon=not no_daemon, demo=demo, sandbox=sandbox)


if __name__ == "__main__":
    main()
