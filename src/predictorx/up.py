"""`predictorx up`: server + web UI + a local daemon, one process group, embedded SQLite default (R-SC-1).

It listens on loopback unless --host says otherwise (R-SEC-1)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
from types import FrameType

import uvicorn

from . import config, hardening
from .apiclient import fail
from .server.app import create_app
from .server.bodyguard import max_body_bytes
from .server.connguard import uvicorn_options
from .server.quietserver import QuietServer
from .server.web.pagework import page_threads
from .server.web.render import compile_templates
from .server.run import bootstrap, port_free
from .store.db import Database

log = logging.getLogger("predictorx.up")


def run_up(host: str, port: int, *, with_daemon: bool, demo: bool, sandbox: bool | None = None) -> None:
    hardening.harden_service()  # 0600 database and logs, /proc unreadable to agents (R-SEC-6, R-SEC-7)
    if not port_free(host, port):
        fail(f"port {port} on {host} is in use (is `predictorx up` already running?); pick another with --port")
    if with_daemon and sandbox:  # refused before anything starts; the daemon says the other modes itself
        from .daemon.sandbox import bwrap_problem

        problem = bwrap_problem()
        if problem:
            fail(f"--sandbox was asked for but {problem}; install it with `apt-get install bubblewrap`, "
                 "or start without --sandbox")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    logging.getLogger("alembic").setLevel(logging.WARNING)  # its INFO lines mean nothing to a person
    db = Database()
    db.migrate()
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
    fresh = bootstrap(db, url) is not None
    try:
        max_body_bytes()  # a wrong setting is one sentence, not a traceback
        connections = uvicorn_options()
        page_threads()
    except ValueError as e:
        fail(str(e))
    app = create_app(db, migrate=False)
    compile_templates()
    server = _UpServer(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                                      **connections))
    # SIGTERM ends `up` like Ctrl-C does, through the code that stops the daemon: uvicorn re-raises
    # the signal it caught once it has shut down, and the default action would end this process
    # before that code ran, leaving the daemon looping "server unreachable" (finding 13).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        asyncio.run(_serve(server, url, with_daemon=with_daemon, demo=demo and fresh, sandbox=sandbox))
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it handled; _serve already said so
        pass


class _UpServer(QuietServer):
    """uvicorn's server, stopping the local daemon first on Ctrl-C or SIGTERM: a stopping daemon hands
    its work back over HTTP and closes its push connection, so it needs the server still up."""

    daemon: subprocess.Popen | None = None
    _stopping_daemon = False

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        daemon = self.daemon
        if daemon is None or daemon.poll() is not None or self._stopping_daemon or self.should_exit:
            super().handle_exit(sig, frame)  # a second Ctrl-C still forces uvicorn's exit
            return
        self._stopping_daemon = True
        loop = asyncio.get_event_loop()
        loop.call_soon_threadsafe(lambda: setattr(self, "_stop_job", loop.create_task(self._daemon_then_server(sig))))

    async def _daemon_then_server(self, sig: int) -> None:
        try:
            await asyncio.to_thread(_stop_daemon, self.daemon)
        finally:
            super().handle_exit(sig, None)


def _sandbox_flag(sandbox: bool | None) -> list[str]:
    """`up --sandbox/--no-sandbox` passed on to the daemon; neither: each agent as it says."""
    return [] if sandbox is None else ["--sandbox" if sandbox else "--no-sandbox"]


async def _serve(server: uvicorn.Server, url: str, *, with_daemon: bool, demo: bool, sandbox: bool | None = None) -> None:
    serving = asyncio.create_task(server.serve())
    while not server.started:
        if serving.done():
            await serving
            return
        await asyncio.sleep(0.05)
    px = config.cli_command()
    print(f"\nPredictor X is up at {url}", flush=True)
    print(f"  web UI:    {await asyncio.to_thread(_login_link, url)}  (open it, press Sign in)", flush=True)
    print(f"  state dir: {config.state_dir()}", flush=True)
    print(f"  CLI:       {px} issue list   (no login needed in this state dir)", flush=True)
    print("  stop:      Ctrl-C\n", flush=True)
    daemon = None
    if with_daemon:
        # Same process group as this one: Ctrl-C or a kill of the group stops both.
        # It also dies with this process, however this one ends (kill -9 included).
        daemon = subprocess.Popen([sys.executable, "-m", "predictorx", "daemon", "start", "--foreground",
                                   *_sandbox_flag(sandbox)],
                                  env=os.environ.copy(), preexec_fn=_daemon_dies_with_up)
        if isinstance(server, _UpServer):
            server.daemon = daemon
    demo_job = asyncio.create_task(asyncio.to_thread(_demo)) if demo and with_daemon else None
    watch = asyncio.create_task(_watch_daemon(daemon, server)) if daemon is not None else None
    try:
        await serving
    finally:
        for job in (demo_job, watch):
            if job is not None:
                job.cancel()
        if daemon is not None:
            _stop_daemon(daemon)
        print("\nPredictor X stopped (server and local daemon).", flush=True)


def _daemon_dies_with_up() -> None:
    hardening.die_with_parent(signal.SIGTERM)


def _stop_daemon(daemon: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after 15 s; synchronous, so it also runs while the loop is unwinding."""
    if daemon.poll() is not None:
        return
    daemon.send_signal(signal.SIGTERM)
    try:
        daemon.wait(15)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait(5)


async def _watch_daemon(daemon: subprocess.Popen, server: uvicorn.Server) -> None:
    """Say so when the local daemon dies: the server keeps serving, but nothing runs here."""
    code = await asyncio.to_thread(daemon.wait)
    if server.should_exit or getattr(server, "_stopping_daemon", False):
        return  # stopped on purpose, as `up` ends
    print(f"\npredictorx up: the local daemon exited (code {code}); tasks will not run on this machine. "
          f"Its log is above; restart with `{config.cli_command()} daemon start --foreground`.", file=sys.stderr, flush=True)


def _login_link(url: str) -> str:
    """A single-use sign-in link (the owner's token itself is never printed)."""
    from .apiclient import Client, CliError

    try:
        return Client(server_url=url).post("/api/login-link")["url"]
    except CliError as e:
        return f"{url} (sign-in link unavailable: {e.message}; run `{config.cli_command()} web`)"


def _demo() -> None:
    from .apiclient import CliError
    from .demo import run_demo

    try:
        run_demo()
    except CliError as e:
        print(f"demo: {e.message}", file=sys.stderr)
