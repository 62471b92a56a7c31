"""The FastAPI application: routes, error answers, and the background jobs of a server process."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, IntegrityError, OperationalError, StatementError
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..errors import ClientError
from ..service import audit, classification, forgeevents, forgerelay, inbox_feed, prflow, pricing, tasks
from ..service.daemons import daemon_timeout
from ..store.db import Database
from .access import enforce
from .bodyguard import BodyGuard, max_body_bytes
from .compression import PageCompression
from . import notifier
from .hub import Hub
from .jobstop import stop_jobs
from .originguard import OriginGuard
from .routes import agents, daemons, issues, members, projects, tasks as task_routes, workspaces
from .routes import beans as bean_routes, classifications, workflow_tasks, roles as role_routes
from .routes import daemon_forge, forge_relay, forges as forge_routes, sso as sso_routes, workflows as workflow_routes
from .routes import forgehooks, pullrequests as pr_routes, usage as usage_routes
from .routes import audit as audit_routes, secrets as secret_routes
from .routes import autopilot_hooks, autopilots as autopilot_routes
from .autopilot_scheduler import Scheduler
from .routes import inbox as inbox_routes, notifications as notification_routes
from .routes import labels as label_routes
from .safejson import SafeJSONResponse
from .secheaders import SecurityHeaders
from .state import AppState
from .streamwatch import StreamWatch
from .taskmasking import TaskSecretMasking

log = logging.getLogger("predictorx.server")


def _error(status: int, message: str) -> JSONResponse:
    return SafeJSONResponse({"detail": message}, status_code=status)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "invalid request — " + "; ".join(parts)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ClientError)  # the one root: services, resource types, the store's lengths
    async def _client(_: Request, exc: ClientError) -> JSONResponse:
        return _error(exc.status, exc.message)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, _validation_message(exc))

    @app.exception_handler(IntegrityError)
    async def _integrity(_: Request, exc: IntegrityError) -> JSONResponse:
        return _error(409, "this conflicts with something that already exists")

    @app.exception_handler(DataError)
    async def _data(_: Request, exc: DataError) -> JSONResponse:
        return _error(400, "a value in the request is not valid for the database (wrong format or size)")

    @app.exception_handler(OperationalError)
    async def _database_down(_: Request, exc: OperationalError) -> JSONResponse:
        # The database restarting or unreachable: say so, and let the caller retry (daemons do).
        log.warning("database unavailable: %s", str(exc.orig or exc).strip().splitlines()[0][:300])
        return JSONResponse({"detail": "the database is unavailable for a moment; retry shortly"},
                            status_code=503, headers={"Retry-After": "1"})

    @app.exception_handler(StatementError)
    async def _statement(_: Request, exc: StatementError) -> JSONResponse:
        return _error(400, "a value in the request could not be used")

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))


async def _sweeper(state: AppState, interval: float) -> None:
    def once() -> None:
        with state.read() as s:  # a read first: nothing due, nothing written
            if not tasks.sweep_due(s, daemon_timeout()):
                return
        with state.write() as s:
            swept = tasks.sweep(s, daemon_timeout())
            for t in swept:
                log.warning("swept task %s: now %s", t.id, t.status)
    while True:
        await asyncio.sleep(interval)
        try:
            await run_in_threadpool(once)
        except Exception:  # the sweeper must outlive a bad moment
            log.exception("sweep failed")


async def _audit_retention(state: AppState, interval: float = 3600.0) -> None:
    """Deletes audit events past PREDICTORX_AUDIT_RETENTION_DAYS (service/audit.py), hourly."""
    def once() -> None:
        with state.read() as s:
            if not audit.prune_due(s):
                return
        with state.write() as s:
            log.info("audit log: %d events past the retention deleted", audit.prune(s))
    while True:
        await asyncio.sleep(interval)
        try:
            await run_in_threadpool(once)
        except Exception:  # the job must outlive a bad moment
            log.exception("audit retention failed")


async def _forge_poller(state: AppState) -> None:
    """Asks forges about open PRs that heard no webhook lately (service/forgeevents.Poller: a
    bounded number of requests per minute per connection, conditional where the client can)."""
    poller = forgeevents.Poller()
    while True:
        await asyncio.sleep(min(poller.interval, 15.0))
        try:
            await run_in_threadpool(poller.once, state)
        except Exception:  # the poller must outlive a forge's bad moment
            log.exception("forge poll failed")


def create_app(db: Database | None = None, *, migrate: bool = True, web: bool = True) -> FastAPI:
    db = db or Database()
    if migrate:
        db.migrate()
    classification.register()  # new issues and @-comments are classified and routed (R-HAR-2)
    inbox_feed.register()  # what a write does puts things in people's inboxes (issue 27 §3)
    hub = Hub()
    state = AppState(db, hub)
    streams = StreamWatch(state)
    scheduler = Scheduler(state)  # cron autopilots (server/autopilot_scheduler.py)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        hub.bind(asyncio.get_running_loop())
        jobs = [asyncio.create_task(_sweeper(state, float(os.environ.get("PREDICTORX_SWEEP_INTERVAL", "5")))),
                asyncio.create_task(streams.every()), asyncio.create_task(_audit_retention(state)),
                asyncio.create_task(scheduler.run()),
                asyncio.create_task(notifier.run(state))]  # outbound notifications (issue 27 §4)
        if forgeevents.poll_interval() > 0:
            jobs.append(asyncio.create_task(_forge_poller(state)))
        prflow.bind(state)  # a push's report opens its PR after the report's transaction
        threading.Thread(target=pricing.warm, name="px-price-table", daemon=True).start()  # off the request path
        if state.postgres:
            url = db.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
            jobs.append(asyncio.create_task(hub.listen_postgres(url)))
        try:
            yield
        finally:
            await stop_jobs(jobs)  # (cancelled again while any is left: server/jobstop.py)
            await forgerelay.close_clients()

    # Every route passes the role matrix first (server/access.py, R-SEC-4).
    app = FastAPI(title="Predictor X", version=__version__, lifespan=lifespan, dependencies=[Depends(enforce)],
                  default_response_class=SafeJSONResponse,
                  description="Coding-agent CLIs as teammates: projects, issues, agents, daemons, tasks.")
    # Outermost last: every answer gets the headers; forgery is refused before a body is read;
    # bodies are bounded and valid text before anything parses or authenticates them (R-SEC-7).
    app.add_middleware(PageCompression)  # pages and static files gzip-compressed; the API not
    app.add_middleware(TaskSecretMasking)  # an agent's own writes lose its secrets (issue 28 §2)
    app.add_middleware(BodyGuard, max_bytes=max_body_bytes())  # a wrong setting fails here, at start
    app.add_middleware(OriginGuard)
    app.add_middleware(SecurityHeaders)
    app.state.px = state
    app.state.autopilot_scheduler = scheduler
    install_error_handlers(app)

    # On the event loop itself (it reads nothing): no thread to wait for, however busy they are.
    @app.get("/api/health", tags=["meta"])
    async def health() -> dict:
        return {"ok": True, "version": __version__, "database": db.engine.dialect.name}

    # The daemons' routes first, then the tasks' (a run's messages), then the issues' (each task
    # is queued by creating or assigning one, and its runs are looked at): a request is matched
    # against the routes in order, router by router, and theirs are the busiest (every task a
    # daemon turns over). No two routes share a path, so order is free.
    for module in (daemons, task_routes, issues, workspaces, members, projects, agents, workflow_routes,
                   bean_routes, classifications, role_routes, workflow_tasks, forge_routes, forgehooks,
                   pr_routes, daemon_forge, forge_relay, sso_routes,
                   secret_routes, audit_routes, usage_routes, autopilot_routes, autopilot_hooks, inbox_routes,
                   notification_routes, label_routes):
        app.include_router(module.router)
    if web:
        from .web import router as web_router, mount_static

        app.include_router(web_router)
        mount_static(app)
    return app
