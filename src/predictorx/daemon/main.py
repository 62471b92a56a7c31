"""The daemon: register this machine, hold the push connection, claim and run tasks (R-EX-1/2/6).

Dispatch is pushed: the server announces work on a server-sent-event stream and the daemon claims
at once. Only while that stream is down does the daemon poll. Heartbeats keep its tasks' leases
and tell it about cancellations it might have missed.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import platform
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from .. import __version__, agents, allowhosts, config, hardening, protocol, resources, secretmask, steptimes
from ..protocol import FINISH_CARRIES, Event
from ..agents import descendants, runcgroup
from ..apiclient import fail
from . import bytecode, forgework, identity, runcheckouts, worktree
from .context import recovery as contextrecovery
from .dirlock import DirLocks
from .gc import GcTimer
from .repocache import RepoCache
from .runner import TaskRun
from .rooms import RoomRun
from .retry import backoff
from . import sandboxmode
from .serverapi import ServerApi, ServerError
from .serverapi import server_urls as split_server_urls
from .uploader import bounded_finish, send_carried

log = logging.getLogger("predictorx.daemon")

#: what its resource types can do here, and that it applies agents' network allowlists (netpolicy.py)
DAEMON_CAPABILITIES = [*resources.daemon_capabilities(), allowhosts.DAEMON_CAPABILITY]


#: heartbeat interval bounds and the default before (or without) the server's answer
DEFAULT_HEARTBEAT_S, MIN_HEARTBEAT_S, MAX_HEARTBEAT_S = 5.0, 0.1, 60.0
#: While the push connection is up, how often a daemon with a free slot claims unasked. Every
#: queued task is announced, a claim that held work back announces it again, and the server
#: announces the whole queue again when its LISTEN reconnects; what this look still finds is work
#: that became claimable without an announcement (a budget's new day) or one lost to a stuck
#: stream. It was every 30 s: a claim (a write on the server) twice a minute for ever, a tenth of
#: an idle daemon's CPU (issue 30).
SAFETY_POLL_S = 300.0


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def probe_runtimes(path: str | None = None) -> list[dict[str, Any]]:
    """One runtime per agent CLI found on PATH, plus `command`, which is always available."""
    found = []
    for provider in agents.known_providers():
        adapter = agents.get(provider)
        if adapter.executable is None:
            found.append({"provider": provider, "version": __version__, "path": None,
                          "capabilities": list(adapter.capabilities)})
            continue
        exe = adapter.locate(path)
        if exe is None:
            continue
        found.append({"provider": provider, "version": adapter.probe(exe), "path": exe,
                      "capabilities": list(adapter.capabilities)})
    return found


class Daemon:
    def __init__(self, api: ServerApi, *, name: str | None = None, max_tasks: int = 4,
                 workspaces_root: Path | None = None, sandbox: bool | None = None):
        self.api = api
        self.daemon_id = identity.daemon_id()
        self.name = name or socket.gethostname()
        self.max_tasks = max_tasks
        #: `daemon start --sandbox` (True: every run), `--no-sandbox` (False: none) or neither (None:
        #: as each agent says, sandboxed by default) — daemon/sandboxmode.py.
        self.sandbox = sandbox
        self.workspaces_root = config.private_dir(workspaces_root or config.workspaces_root())
        self.dir_locks = DirLocks(config.lock_dir())
        self.repo_cache = RepoCache(self.workspaces_root)
        self.runs: dict[str, TaskRun] = {}
        self.busy_slots = 0
        self.task_timeout = _env_float("PREDICTORX_TASK_TIMEOUT", 0) or None
        #: PREDICTORX_HEARTBEAT_INTERVAL if set; else what the server asks for when it registers us
        #: (a third of its daemon timeout: each heartbeat is a write on the server, issue 30)
        self.heartbeat_interval = _env_float("PREDICTORX_HEARTBEAT_INTERVAL", 0) or DEFAULT_HEARTBEAT_S
        self._heartbeat_from_env = bool(_env_float("PREDICTORX_HEARTBEAT_INTERVAL", 0))
        self.poll_interval = _env_float("PREDICTORX_POLL_INTERVAL", 3)
        self.safety_poll_interval = SAFETY_POLL_S
        self.runtimes: list[dict[str, Any]] = []
        self._claim_wakeup = asyncio.Event()
        self._slot_free = asyncio.Event()
        self.unreported: dict[str, dict[str, Any]] = {}  # finishes the server has not acknowledged
        self._push_connected = False
        #: work was announced while every slot was busy: a freed slot looks (see slot_released)
        self._claim_owed = False
        self._stopping = asyncio.Event()
        self._background_jobs: set[asyncio.Task] = set()

    # -- slots ------------------------------------------------------------------------------------
    def slot_released(self, finish_follows: bool = False) -> None:
        """A run gave its slot back: it waits for its folder, or it ends (`finish_follows`: its
        finish claims the next tasks itself, `claim_next`, and `_run_done` looks after it)."""
        self.busy_slots -= 1
        self._slot_free.set()
        if not finish_follows:
            self._look_again_if_owed()

    def _look_again_if_owed(self) -> None:
        """A freed slot asks the server for work only when some may be waiting for it: the last
        claim filled every slot (the server may hold more), or one failed, or the push connection
        is down. Otherwise the pushes announce new work: no empty claim after every run (issue 30)."""
        if self._claim_owed or not self._push_connected:
            self._claim_wakeup.set()

    def _run_done(self, task_id: str) -> None:
        self.runs.pop(task_id, None)
        self._look_again_if_owed()

    async def acquire_slot(self) -> None:
        """For a task that waited for its folder: run only when an execution slot is free."""
        while self.busy_slots >= self.max_tasks:
            self._slot_free.clear()
            await self._slot_free.wait()
        self.busy_slots += 1

    async def release(self, task_id: str) -> None:
        try:
            await self.api.release(task_id)
        except ServerError as e:
            log.warning("task %s: could not hand it back (%s); the server re-queues it later", task_id, e)

    async def report_finish(self, task_id: str, fields: dict[str, Any]) -> None:
        """Report a task's end; if the server cannot be reached, keep it and retry with heartbeats,
        so no task is left running on the server for ever."""
        log.info("task %s: %s", task_id, outcome_line(fields))
        steptimes.mark(task_id, "finish_sending")
        free = 0 if self._stopping.is_set() else max(0, self.max_tasks - self.busy_slots)
        try:
            answer = await self._finish(task_id, fields, free)
        except ServerError as e:
            if 400 <= e.status < 500:
                log.error("task %s: the server refused its end (%s)", task_id, e.detail)
                await send_carried(self.api, task_id, fields)  # (again, if sent already: seqs, one handoff row)
                return
            log.warning("task %s: could not report its end (%s); will retry", task_id, e.detail)
            self.unreported[task_id] = fields
            return
        if (answer or {}).get("forge_push"):  # its project pushes at run end (daemon/forgework.py)
            self._background(forgework.push_task(self, task_id, answer.pop("forge_push")))
        # The same request claimed the next tasks (one round trip per task turned over).
        claimed = (answer or {}).get("claimed", [])
        if len(claimed) < free:  # the server had no more for us
            self._claim_owed = False
        for item in claimed:
            self._start(item)

    async def _finish(self, task_id: str, fields: dict[str, Any], free: int) -> Any:
        """The finish; refused for its body (400/413/422): again without what it carried, sent on
        its own (an older server — a replica not upgraded yet — refuses keys it does not know),
        then with the essentials only: a finished run is never lost to its report (R-SEC-8)."""
        carried = [k for k in FINISH_CARRIES if k in fields]
        bodies = [bounded_finish(fields)]
        if carried:
            bodies.append(bounded_finish({k: v for k, v in fields.items() if k not in carried}))
        bodies.append(bounded_finish(fields, minimal=True))
        for i, body in enumerate(bodies):
            try:
                answer = await self.api.finish(task_id, **body, claim_next=free)
            except ServerError as e:
                if e.status not in (400, 413, 422) or i == len(bodies) - 1:
                    raise
                log.error("task %s: the server refused its end (%s); sending %s", task_id, e.detail,
                          "what it carried on its own" if i == 0 and carried else "a shorter report")
                if i == 0 and carried:
                    await send_carried(self.api, task_id, fields)
                continue
            steptimes.mark(task_id, "finish_answered")
            return answer
        return None  # (not reached: the last refusal is raised)

    def executable_for(self, provider: str) -> list[str] | None:
        for rt in self.runtimes:
            if rt["provider"] == provider and rt.get("path"):
                return [rt["path"]]
        return None

    def room_setup(self, run: RoomRun, env_root: Path, cwd: Path) -> tuple[list[str], dict[str, str], str]:
        """Join the agent to its project's room (R-ROOM-15); see rooms.py."""
        from .rooms import room_setup

        return room_setup(run, env_root, cwd)

    # -- lifecycle --------------------------------------------------------------------------------
    async def register(self) -> None:
        """With this daemon's own token when it has one; otherwise (first start, or its token was
        revoked) once with its owner's token read from the client config just for this call, then
        kept nowhere: the daemon token the server answers goes to its own 0600 file (R-SEC-5)."""
        self.runtimes = await asyncio.to_thread(probe_runtimes)
        payload = protocol.Registration(
            self.daemon_id, self.name, socket.gethostname(), __version__, tuple(DAEMON_CAPABILITIES),
            tuple(protocol.Runtime(r["provider"], r["version"], r["path"], tuple(r["capabilities"]))
                  for r in self.runtimes))
        answer = None
        if self.api.token is not None:
            try:
                answer = await self.api.register(payload)
            except ServerError as e:
                if e.status not in (401, 403, 404):
                    raise
                log.warning("this daemon's own token was refused (%s); registering again with its owner's token",
                            e.detail)
                self.api.token = None
                await asyncio.to_thread(identity.forget_token)
        if answer is None:
            user_token = config.client_config().token
            if not user_token:
                raise ServerError(401, "this daemon's token is no longer valid and no person's token is configured: "
                                       "run `predictorx login --server-url URL --token YOUR_TOKEN`, then start it again")
            answer = await self.api.register(payload, user_token=user_token)
            del user_token
            ws = answer["daemon"].get("workspace_id")
            await asyncio.to_thread(identity.save_token, self.api.server_key, ws, self.api.workspace, self.api.token)
        names = ", ".join(f"{r['provider']} {r['version'] or ''}".strip() for r in self.runtimes)
        log.info("registered daemon %s (%s) with runtimes: %s", self.daemon_id, self.name, names)
        self._heartbeat_as_asked(answer.get("heartbeat_interval_s"))
        return answer

    def _heartbeat_as_asked(self, asked: Any) -> None:
        """The server's heartbeat interval, unless PREDICTORX_HEARTBEAT_INTERVAL says otherwise
        (an older server asks nothing: DEFAULT_HEARTBEAT_S)."""
        if self._heartbeat_from_env or not isinstance(asked, (int, float)) or isinstance(asked, bool):
            return
        self.heartbeat_interval = min(MAX_HEARTBEAT_S, max(MIN_HEARTBEAT_S, float(asked)))

    def recover(self) -> None:
        """Say what a previous run left (locks, worktrees, run cgroups) and finish or clean it."""
        runcgroup.set_owner(self.daemon_id)
        for sentence in runcgroup.recover():  # a killed daemon's runs' escapees end here
            log.info("recovery: %s", sentence)
        for sentence in self.dir_locks.recover():
            log.info("recovery: %s", sentence)
        # Before the worktrees: a crashed task's block must not be committed to its branch.
        for sentence in contextrecovery.recover([self.workspaces_root]):
            log.info("recovery: %s", sentence)
        for sentence in worktree.recover([self.workspaces_root]):
            log.info("recovery: %s", sentence)
        for sentence in runcheckouts.recover([self.workspaces_root], self.repo_cache):
            log.info("recovery: %s", sentence)

    async def run(self) -> None:
        self.recover()
        await self.register()
        from .rooms import start_ahead

        await asyncio.to_thread(start_ahead, self.runtimes)  # agents-room's configuration process
        await asyncio.to_thread(bytecode.ensure)  # the runs' own Python processes start from bytecode
        jobs = [asyncio.create_task(self._push_loop(), name="push"),
                asyncio.create_task(self._claim_loop(), name="claim"),
                asyncio.create_task(self._heartbeat_loop(), name="heartbeat")]
        gc = GcTimer(self.workspaces_root, is_task_active=lambda task_id: task_id in self.runs)
        gc.start()
        try:
            await self._stopping.wait()
        finally:
            for job in jobs:
                job.cancel()
            for r in list(self.runs.values()):
                r.shutdown()
            pending = [r.main for r in self.runs.values() if r.main]
            if pending:
                await asyncio.wait(pending, timeout=10)
            await gc.stop()
            # Cancel until they end: on Python 3.11 a wait_for whose event is set in the same turn
            # as the cancel swallows it (the claim loop then ran on for ever after a stop).
            while not all(job.done() for job in jobs):
                for job in jobs:
                    job.cancel()
                await asyncio.wait(jobs, timeout=1)
            await asyncio.gather(*jobs, return_exceptions=True)
            from .rooms import SERVER

            await asyncio.to_thread(SERVER.stop)  # the agents-room process configuring its runs
            await self.api.close()

    def stop(self) -> None:
        self._stopping.set()

    # -- push connection, with polling only while it is down ----------------------------------
    async def _push_loop(self) -> None:
        """Hold the push connection. A connection that could not be made is retried with backoff
        (daemon/retry.py); one that worked and then dropped is made again at once, through the
        next server URL when there are several (serverapi.py), or the proxy's next replica."""
        while True:
            async for attempt in backoff(None, initial=0.5, maximum=10,
                                         retry_on=lambda e: not isinstance(e, asyncio.CancelledError)):
                with attempt:
                    await self._push_once()
            await asyncio.sleep(0.1)

    async def _push_once(self) -> None:
        connected = False
        try:
            async for event in self.api.events():
                connected = self._push_connected = True
                await self._on_event(event)
            log.warning("push connection closed by the server")
        except ServerError as e:
            if e.status == 401:
                log.warning("the server no longer accepts this daemon's token; registering again")
                try:
                    await self.register()
                except ServerError as again:
                    if 400 <= again.status < 500:  # revoked for good (e.g. its owner left): stop
                        log.error("this daemon may no longer run for this workspace (%s); stopping", again.detail)
                        self.stop()
                        return
            else:
                log.warning("push connection failed: %s", e.detail)
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as e:  # noqa: BLE001 — reconnect on anything
            log.warning("push connection lost: %s", e)
        finally:
            self._push_connected = False
            self._claim_wakeup.set()  # poll at once while reconnecting
        if not connected:
            raise ServerError(0, "the push connection could not be made")

    async def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind in (Event.HELLO, Event.TASK_QUEUED):
            self._claim_wakeup.set()
            if kind == Event.HELLO:  # (re)connected: an answer may have been missed meanwhile
                for each in self.runs.values():
                    each.answer_bell.set()
        elif kind == Event.PERMISSION_ANSWERED and (asked := self.runs.get(event.get("task_id", ""))) is not None:
            asked.answer_bell.set()
        elif kind == Event.TASK_CANCELLED:
            run = self.runs.get(event.get("task_id", ""))
            if run is not None:
                log.info("task %s cancelled", run.id)
                run.cancel()
        elif kind == Event.REQUEST and event.get("op") in forgework.OPS:
            self._background(forgework.handle(self, event))
        elif kind == Event.REQUEST:
            asyncio.create_task(self._answer(event))

    def _background(self, work: Any) -> None:
        """Work that outlives its caller (a push can take minutes, a report retries): kept referenced
        until done (a bare task could be collected)."""
        job = asyncio.create_task(work)
        self._background_jobs.add(job)
        job.add_done_callback(self._background_jobs.discard)

    async def _answer(self, event: dict[str, Any]) -> None:
        # The resource type whose check it is answers it, on this machine (e.g. R-LD-1's path rules).
        answer = await asyncio.to_thread(resources.answer_daemon_check, event)
        if answer is None:
            return
        ok, error = answer
        try:
            await self.api.answer(event["request_id"], ok, error)
        except ServerError as e:
            log.warning("could not answer a %s check: %s", event.get("op"), e)

    # -- claiming ---------------------------------------------------------------------------------
    async def _claim_loop(self) -> None:
        failures = 0
        while True:
            try:
                # Pushed events drive claims; a slow look while connected is only a safety net.
                timeout = self.safety_poll_interval if self._push_connected else self.poll_interval
                await asyncio.wait_for(self._claim_wakeup.wait(), timeout)
            except asyncio.TimeoutError:
                pass
            self._claim_wakeup.clear()
            try:
                await self._claim_available()
                failures = 0
                continue
            except asyncio.CancelledError:
                raise
            except ServerError as e:
                log.warning("claim failed: %s", e.detail)
            except Exception:
                log.exception("claim failed")
            # The work it was woken for is still queued and its announcement spent: look again
            # soon (an idle daemon has no run whose end would), backing off while it keeps failing.
            failures += 1
            await asyncio.sleep(min(10.0, 0.5 * 2 ** min(failures, 5)))
            self._claim_wakeup.set()

    async def _claim_available(self) -> None:
        # A stopping daemon claims nothing: the work its stop hands back is announced again, and a
        # claim loop whose cancel Python 3.11 swallowed would take it straight back.
        # Owed until the server says it has nothing more (full slots, a failed claim: the next
        # freed slot looks again).
        self._claim_owed = True
        while not self._stopping.is_set() and self.busy_slots < self.max_tasks:
            asked = self.max_tasks - self.busy_slots
            claimed = await self.api.claim(asked)
            for item in claimed:
                if self._stopping.is_set():
                    if (task_id := protocol.claimed_task_id(item)) is not None:
                        await self.release(task_id)
                else:
                    self._start(item)
            if len(claimed) < asked:  # the server had no more (what it held back, it announces again)
                self._claim_owed = False
                return

    def _start(self, item: Any) -> None:
        """Run a claimed task; one whose claim cannot be read is reported failed, saying why."""
        try:
            claim = protocol.Claim.from_wire(item)
        except protocol.ProtocolError as e:
            task_id = protocol.claimed_task_id(item)
            log.error("task %s: the server's claim could not be read (%s)", task_id or "?", e)
            if task_id is not None:
                self._background(self.report_finish(task_id, protocol.Finish(protocol.Outcome(
                    "failed", f"the daemon could not read the task's claim ({e}); update Predictor X on the daemon's "
                    "machine or the server so that both speak the same protocol")).to_wire()))
            return
        run = TaskRun(self, claim)
        self.runs[run.id] = run
        self.busy_slots += 1
        log.info("task %s: running %s (%s) on issue #%s", run.id, claim.agent.name, claim.agent.provider,
                 claim.issue.number)

        run.start(lambda: self._run_done(run.id))

    # -- heartbeats -------------------------------------------------------------------------------
    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            try:
                cancelled = await self.api.heartbeat(list(self.runs) + list(self.unreported))
            except asyncio.CancelledError:
                raise
            except ServerError as e:
                log.warning("heartbeat failed: %s", e.detail)
                continue
            for task_id, fields in list(self.unreported.items()):
                del self.unreported[task_id]
                await self.report_finish(task_id, fields)
            for task_id in cancelled:
                run = self.runs.get(task_id)
                if run is not None:
                    run.cancel()


def outcome_line(fields: dict[str, Any]) -> str:
    """How a task ended, in the daemon's log: 'completed · branch agent/x/1 · 3 files +10 -2'."""
    parts = [str(fields.get("status") or "finished")]
    if fields.get("status") != "completed" and fields.get("failure_reason"):
        parts.append(str(fields["failure_reason"])[:300])
    review_ = fields.get("review") or {}
    if fields.get("branch_name"):
        parts.append(f"branch {fields['branch_name']}")
    if review_:
        if review_.get("changed"):
            parts.append(f"{len(review_.get('files') or [])} files +{review_.get('added', 0)} -{review_.get('removed', 0)}")
        else:
            parts.append("no changes")
    return " · ".join(parts)


def _server_key(server_url: str) -> str:
    """The key a saved daemon token is filed under: the server URL(s), as ServerApi normalises them."""
    return ",".join(split_server_urls(server_url))


def start(*, foreground: bool, name: str | None, max_tasks: int, server_urls: list[str] | None = None,
          sandbox: bool | None = None) -> None:
    """`predictorx daemon start`: refuse a second daemon on this state dir, then run."""
    hardening.harden_service()  # before anything is read or written: 0600 files, no /proc to read
    pid = identity.running_pid()
    if pid is not None:
        fail(f"a daemon for this state dir is already running (pid {pid}); stop it first or set PREDICTORX_HOME")
    cfg = config.client_config()
    if server_urls:  # several: failover in this order (serverapi.py); PREDICTORX_SERVER_URL may list them too
        cfg = config.ClientConfig(",".join(server_urls), cfg.token, cfg.workspace_id)
    if not cfg.server_url or not (cfg.token or identity.saved_token(_server_key(cfg.server_url), cfg.workspace_id)):
        fail("no server configured: start one with `predictorx up`, or run `predictorx login --server-url URL --token TOKEN`")
    said, refusal = sandboxmode.at_start(sandbox)
    if refusal:
        fail(refusal)
    for line in said:
        print(line, file=sys.stderr, flush=True)
    if not foreground:
        _detach()
    logging.basicConfig(level=os.environ.get("PREDICTORX_LOG_LEVEL", "INFO"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one line per request drowns the log
    secretmask.install_log_masking()  # an agent's secret never reaches this log (issue 28 §2)
    # Until the loop's handlers are in place, SIGTERM unwinds like Ctrl-C (the pid file is cleared).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if not identity.write_pid():
        fail(f"a daemon for this state dir is already running (pid {identity.running_pid()}); stop it first")
    # Orphans of agents come to us, not to init, so they end with their task (finding 13).
    hardening.child_subreaper()
    # What the start imported and built lives as long as the daemon: frozen, the collector's full
    # passes walk only what its tasks allocate, not all of it again (~45 ms of CPU over 20 tasks
    # before, ~10 after; issue 30). As the server does (server/run.py collect_from_now_on).
    gc.freeze()
    try:
        asyncio.run(_main(cfg, name, max_tasks, sandbox))
    except KeyboardInterrupt:
        pass
    finally:
        identity.clear_pid()


async def _main(cfg: config.ClientConfig, name: str | None, max_tasks: int, sandbox: bool | None = None) -> None:
    # Its own token only (R-SEC-5); a person's token is read just for a first registration.
    api = ServerApi(cfg.server_url, None, cfg.workspace_id)
    api.token = identity.saved_token(api.server_key, cfg.workspace_id)
    daemon = Daemon(api, name=name, max_tasks=max_tasks, sandbox=sandbox)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, daemon.stop)
    descendants.install_orphan_reaper(loop)  # the agents' orphans come to us (child_subreaper)
    try:
        await daemon.run()
    except ServerError as e:
        fail(f"the daemon could not talk to the server at {cfg.server_url}: {e.detail}")


def _detach() -> None:
    """Run in the background, logging to <state dir>/daemon.log."""
    if platform.system() == "Windows":
        fail("run `predictorx daemon start --foreground` on Windows")
    if os.fork() > 0:
        log_path = config.state_dir() / "daemon.log"
        print(f"daemon started in the background; log: {log_path}")
        os._exit(0)
    os.setsid()
    log_fd = os.open(config.state_dir() / "daemon.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    config.private_file(config.state_dir() / "daemon.log")
    log_file = os.fdopen(log_fd, "a", buffering=1)
    os.dup2(log_file.fileno(), sys.stdout.fileno())
    os.dup2(log_file.fileno(), sys.stderr.fileno())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, sys.stdin.fileno())
