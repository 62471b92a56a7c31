"""Start a server process: migrate, bootstrap the first owner, record the URL, serve."""

from __future__ import annotations

import gc
import logging
import os
import socket

import uvicorn

from .. import config
from ..service import auth
from ..store.db import Database
from ..apiclient import fail
from .app import create_app
from .bodyguard import max_body_bytes
from .connguard import uvicorn_options
from . import quietserver
from .web.pagework import page_threads
from .web.render import compile_templates

log = logging.getLogger("predictorx.server")


def bootstrap(db: Database, server_url: str) -> str | None:
    """First start: create the owner and its token; the plain token lives only in config.json (0600).
    Returns the new token, or None when the owner already existed."""
    with db.write() as s:
        made = auth.bootstrap_owner(s)
    cfg = config.read_config()
    if made is not None:
        token, ws, _user = made
        config.write_config(server_url=server_url, token=token, workspace_id=ws.id)
        return token
    if cfg.get("token"):
        config.write_config(server_url=server_url)
    return None


def port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def serve(host: str = "127.0.0.1", port: int = 8484, *, db_url: str | None = None, workers: int = 1) -> None:
    """Serve on host:port. `workers` > 1: that many processes on the one port (uvicorn's
    supervisor restarts one that dies); they share nothing but the database, so PostgreSQL only."""
    try:
        max_body_bytes()  # a wrong setting is one sentence here, not a crash loop of every worker
        connections = uvicorn_options()
        page_threads()
    except ValueError as e:
        fail(str(e))
    db = Database(db_url)
    if workers > 1 and db.sqlite:
        db.dispose()
        raise ValueError("--workers above 1 needs PostgreSQL (PREDICTORX_DATABASE_URL): SQLite is one "
                         "process's database, and wake-ups cross processes only through PostgreSQL")
    db.migrate()
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else shown}:{port}"
    bootstrap(db, url)
    if workers > 1:
        collect_from_now_on()
        db.dispose()
        os.environ["PREDICTORX_DATABASE_URL"] = db_url or config.database_url()  # for the workers
        uvicorn.run("predictorx.server.run:worker_app", factory=True, host=host, port=port, workers=workers,
                    log_level="warning", access_log=False, timeout_graceful_shutdown=10, **connections)
        return
    app = create_app(db, migrate=False)
    compile_templates()
    collect_from_now_on()
    quietserver.serve(app, host=host, port=port, log_level="warning", access_log=False, timeout_graceful_shutdown=10,
                      **connections)


def collect_from_now_on() -> None:
    """The garbage collector on again (`server start` turns it off while the server is built),
    with what exists now frozen: collections then walk only what the requests allocate, not the
    whole app again. Frozen without a collection first (0.2 s of CPU): the little garbage of the
    start (a first migration's, ~20,000 objects, once) stays."""
    gc.freeze()
    gc.enable()


def worker_app():  # uvicorn's factory for each worker process (migrated by the parent)
    from ..hardening import harden_service

    harden_service()  # a spawned worker is a fresh exec: dumpable again, umask as inherited (R-SEC-6/7)
    logging.basicConfig(level=os.environ.get("PREDICTORX_LOG_LEVEL", "WARNING"))
    app = create_app(Database(), migrate=False)
    compile_templates()
    return app
