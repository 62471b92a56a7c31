"""The one place agent processes are started, read, logged and stopped (R-EX-3, R-EX-5).

- The agent runs in its own session, hence its own process group, so one signal reaches
  everything it started.
- Stdout is read in chunks and split into lines by hand: asyncio's `readline` gives up on lines
  over its 64 KiB limit, and agents print whole files as one JSON line.
- Stdout is kept verbatim in `<logs>/<provider>.stream.jsonl`, stderr in
  `<logs>/<provider>.stderr.log`; the tail of stderr is kept in memory for the failure reason.
- Cancel or timeout: SIGTERM to the group, SIGKILL after a grace; all of it within
  `STOP_BUDGET_S`. On a normal exit, whatever the agent left running in its group is stopped too,
  and so is every descendant that left the group (`descendants.py`; a cgroup per run where the
  daemon can make one, `runcgroup.py`).
- Nothing is polled while the agent runs: its end, its output, a cancel and the timeout are all
  awaited on events (the child watcher's exit notice, the pipes, the cancel event, one timer for
  the timeout). An agent waiting on its model costs the daemon nothing.
- The leader's exit is noticed from the child watcher's `process_exited`, not from
  `Process.wait()`, which on some Python versions also waits for the pipes — and a grandchild
  holding stdout would keep it waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from .. import hardening
from ..secretmask import Masker, MaskingWriter
from . import descendants
from .runcgroup import RunCgroup

log = logging.getLogger(__name__)

CHUNK_SIZE = 64 * 1024
#: After SIGTERM, how long the group gets to exit before SIGKILL.
TERM_GRACE_S = 2.0
#: After SIGKILL, how long we wait for the leader to be reaped.
KILL_WAIT_S = 1.5
#: After the group is gone, how long we keep reading what is left in the pipes.
DRAIN_TIMEOUT_S = 1.0
#: Output that keeps flowing after the group ended (from an escaped process) is read this long at most.
DRAIN_MAX_S = 30.0
#: Cancel reaches a stopped group within this (TERM grace + KILL wait + drain).
STOP_BUDGET_S = 5.0
STDERR_TAIL_BYTES = 8 * 1024
#: Lines read ahead of the handler; past this the reader waits (and so, in the end, the agent).
LINE_QUEUE_SIZE = 1000
#: How long the handler may take to finish the lines already read once the process has ended.
HANDLER_FINISH_S = 60.0


@dataclass
class ProcessRequest:
    argv: list[str]
    cwd: Path
    env: dict[str, str]
    #: Written to stdin, which is then closed; None: stdin is /dev/null. An awaitable is awaited
    #: once the process has started (its start overlaps what the bytes wait for); if it fails,
    #: stdin is closed with nothing written.
    stdin_data: bytes | Awaitable[bytes] | None
    stream_log: Path
    stderr_log: Path
    timeout_s: float | None = None
    #: Instead of `stdin_data`: a conversation over stdin (ACP). It gets the agent's stdin once
    #: the process has started and keeps it open until it returns; then stdin is closed.
    stdin_session: Callable[[asyncio.StreamWriter], Awaitable[None]] | None = None
    #: The run's secrets: never written to the raw logs as they are (secretmask.py).
    secrets: tuple[str, ...] = ()
    #: Open fds the process gets at the same numbers (the sandbox's seccomp filter, spec.sandboxed);
    #: the caller's to close once the run is over.
    pass_fds: tuple[int, ...] = ()
    #: The program makes itself die with its parent (the sandbox: `bwrap --die-with-parent`): no
    #: setpriv is started before it to do the same (~1.5 ms of CPU a run, issue 30).
    dies_with_parent: bool = False


@dataclass
class ProcessOutcome:
    exit_code: int | None
    cancelled: bool = False
    timed_out: bool = False
    #: Set when the process could not be started at all.
    spawn_error: str | None = None
    stderr_tail: str = ""
    pid: int | None = None


LineHandler = Callable[[str], Awaitable[None]]


def _die_with_parent() -> None:
    """In the child, before exec: if the daemon dies, the kernel kills the agent too (Linux).

    Otherwise a crashed daemon would leave an agent working in a folder whose lock died with the
    daemon, and a restarted daemon would start the next task beside it."""
    hardening.die_with_parent(signal.SIGKILL)
    os.umask(_AGENT_UMASK)  # the daemon's own files are 0600; the agent's are the person's kind


_AGENT_UMASK = 0o022
#: util-linux's setpriv sets the same parent-death signal and then execs the agent, so the daemon
#: needs no preexec_fn, which would make Python fork the whole daemon (~10 ms at 70 MB, on every
#: task's start) instead of using vfork. Without it (not Linux) the preexec_fn does it.
_SETPRIV = shutil.which("setpriv") if sys.platform.startswith("linux") else None


def _launch(request: ProcessRequest) -> tuple[list[str], dict]:
    """(argv, what else create_subprocess_exec gets) for an agent that dies with the daemon and
    creates files with the person's umask. FileNotFoundError when its executable is not found (as
    an exec would raise it; under setpriv the exec is setpriv's)."""
    if _SETPRIV is None:
        return list(request.argv), {"preexec_fn": _die_with_parent}
    name = request.argv[0]
    if os.sep in name and not os.path.isabs(name):  # an exec resolves it in the agent's folder
        name = os.path.join(request.cwd, name)
    exe = shutil.which(name, path=os.pathsep.join(os.get_exec_path(request.env)))
    if exe is None:
        if os.sep in name and os.path.exists(name):
            raise PermissionError(13, "Permission denied", request.argv[0])
        raise FileNotFoundError(request.argv[0])
    if request.dies_with_parent:
        return [exe, *request.argv[1:]], {"umask": _AGENT_UMASK}
    return [_SETPRIV, "--pdeathsig", "KILL", "--", exe, *request.argv[1:]], {"umask": _AGENT_UMASK}


async def run_process(request: ProcessRequest, on_line: LineHandler, cancel: asyncio.Event) -> ProcessOutcome:
    """Run one agent process to its end; `on_line` gets every stdout line, in order."""
    global _AGENT_UMASK
    _AGENT_UMASK = hardening.person_umask()  # read here: os.umask is not for a child before exec
    request.stream_log.parent.mkdir(parents=True, exist_ok=True)
    request.stderr_log.parent.mkdir(parents=True, exist_ok=True)
    with open(request.stream_log, "ab") as stream_file, open(request.stderr_log, "ab") as stderr_file:
        masker = Masker(request.secrets)
        stream_log: Any = MaskingWriter(stream_file, masker) if masker else stream_file
        stderr_log: Any = MaskingWriter(stderr_file, masker) if masker else stderr_file
        try:
            return await _run_logged(request, on_line, cancel, stream_log, stderr_log)
        finally:
            if masker:
                stream_log.close()
                stderr_log.close()


async def _run_logged(request: ProcessRequest, on_line: LineHandler, cancel: asyncio.Event,
                      stream_log: BinaryIO, stderr_log: BinaryIO) -> ProcessOutcome:
    tag = descendants.new_tag()
    cgroup = None
    try:
        argv, launch = _launch(request)
        cgroup = RunCgroup.make(tag) if _SETPRIV is not None else None
        proc, exited = await _spawn([*(cgroup.launcher() if cgroup else []), *argv], request, launch,
                            {**request.env, descendants.TAG_VAR: tag})
    except FileNotFoundError:
        _never_fed(request)
        _forget(cgroup)
        return ProcessOutcome(None, spawn_error=_not_found(request))
    except OSError as exc:
        _never_fed(request)
        _forget(cgroup)
        return ProcessOutcome(None, spawn_error=f"could not start {request.argv[0]!r}: {exc}")
    return await _supervise(proc, exited, request, on_line, cancel, stream_log, stderr_log,
                            descendants.Descendants(proc.pid, tag, cgroup))


class _ExitNotice(asyncio.subprocess.SubprocessStreamProtocol):
    """The stream protocol create_subprocess_exec uses, plus a future done when the child watcher
    has the leader's exit status (whatever the pipes are doing)."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop):
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)
        super().process_exited()


async def _spawn(
    argv: list[str], request: ProcessRequest, launch: dict, env: dict[str, str]
) -> tuple[asyncio.subprocess.Process, asyncio.Future[None]]:
    """asyncio.create_subprocess_exec, with `_ExitNotice` as its protocol: (the process, its exit)."""
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _ExitNotice(limit=2**16, loop=loop),
        *argv,
        cwd=str(request.cwd),
        env=env,
        stdin=asyncio.subprocess.PIPE if request.stdin_data is not None or request.stdin_session
        else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        pass_fds=request.pass_fds,
        **launch,
    )
    proc = asyncio.subprocess.Process(transport, protocol, loop)
    if proc.returncode is not None and not protocol.exited.done():
        protocol.exited.set_result(None)
    return proc, protocol.exited


def _forget(cgroup: RunCgroup | None) -> None:
    if cgroup is not None:
        cgroup.remove()


async def _supervise(
    proc: asyncio.subprocess.Process,
    exited: asyncio.Future[None],
    request: ProcessRequest,
    on_line: LineHandler,
    cancel: asyncio.Event,
    stream_log: BinaryIO,
    stderr_log: BinaryIO,
    family: descendants.Descendants,
) -> ProcessOutcome:
    tail = _Tail(STDERR_TAIL_BYTES)
    assert proc.stdout is not None and proc.stderr is not None
    # Reading and handling are apart so that a slow handler never makes us give up on the pipes.
    lines: asyncio.Queue[str | None] = asyncio.Queue(LINE_QUEUE_SIZE)
    activity = _Activity()
    readers = [
        asyncio.create_task(_read_lines(proc.stdout, stream_log, lines, activity)),
        asyncio.create_task(_read_bytes(proc.stderr, stderr_log, tail, activity)),
    ]
    handler = asyncio.create_task(_handle_lines(lines, on_line))
    writer = asyncio.create_task(_hand_over(proc.stdin, request.stdin_session) if request.stdin_session
                                 else _feed(proc.stdin, request.stdin_data)) if proc.stdin else None
    cancelled = timed_out = False
    try:
        ending = await _wait_for_end(exited, cancel, request.timeout_s)
        cancelled, timed_out = ending == "cancelled", ending == "timed_out"
        if cancelled or timed_out or family.group_alive():  # leftovers (servers, watchers) go too
            await _stop_group(exited, family)
        await _end_family(family)  # also what left the group (setsid), before the pipes are drained
        await _drain(readers, activity)
        await _finish_handler(handler, lines)
    finally:
        # Also reached when the run itself is cancelled (daemon shutdown): nothing may survive it.
        for task in [*readers, handler, *([writer] if writer else [])]:
            task.cancel()
        if proc.returncode is None or family.group_alive():
            family.signal_group(signal.SIGKILL)
        await _reap(proc, exited)
        await asyncio.shield(_end_family(family))
        _close_pipes(proc)
    return ProcessOutcome(
        exit_code=proc.returncode,
        cancelled=cancelled,
        timed_out=timed_out,
        stderr_tail=tail.text(),
        pid=proc.pid,
    )


async def _end_family(family: descendants.Descendants) -> None:
    try:
        stopped = await asyncio.to_thread(family.end)
    except Exception:  # never let the sweep cost the run its result
        log.exception("stopping what the agent left running failed")
        return
    if stopped:
        log.info("stopped %d process(es) the agent left running outside its process group", stopped)


async def _wait_for_end(exited: asyncio.Future[None], cancel: asyncio.Event, timeout_s: float | None) -> str:
    """The first of: the leader exited, the cancel event, the timeout. One wait, no polling."""
    cancelled = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait([exited, cancelled], timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        cancelled.cancel()
    if exited.done():
        return "exited"
    return "cancelled" if cancel.is_set() else "timed_out"


async def _stop_group(exited: asyncio.Future[None], family: descendants.Descendants) -> None:
    """SIGTERM the whole group, SIGKILL it after `TERM_GRACE_S`, wait for the leader."""
    family.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE_S
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(exited), TERM_GRACE_S)
    if exited.done() and await asyncio.to_thread(family.wait_group_gone, max(0.0, deadline - time.monotonic())):
        return
    family.signal_group(signal.SIGKILL)
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(exited), KILL_WAIT_S)


async def _reap(proc: asyncio.subprocess.Process, exited: asyncio.Future[None]) -> None:
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(exited), KILL_WAIT_S)
    if proc.returncode is None:
        log.error("agent process %s did not exit after SIGKILL", proc.pid)


async def _drain(readers: list[asyncio.Task], activity: _Activity) -> None:
    """Read what is left in the pipes; a process that left the group may hold them open.

    We stop once the pipes have been silent for `DRAIN_TIMEOUT_S`, not after a fixed time, so a
    large tail of output that is still flowing is never cut off.
    """
    pending = set(readers)
    activity.touch()  # the silence counts from now: what the agent printed before is read
    give_up = time.monotonic() + DRAIN_MAX_S
    while pending:
        now = time.monotonic()
        quiet_until = min(activity.last + DRAIN_TIMEOUT_S, give_up)
        if now >= quiet_until:
            break
        _, pending = await asyncio.wait(pending, timeout=quiet_until - now)
    if pending:
        log.warning("agent output pipes still open after the process group ended; stopped reading")
        for task in pending:
            task.cancel()
    for task in readers:
        if task.done() and not task.cancelled() and task.exception() is not None:
            log.error("reading agent output failed", exc_info=task.exception())


async def _finish_handler(handler: asyncio.Task, lines: asyncio.Queue[str | None]) -> None:
    """Let the handler work through the lines already read, then stop it."""

    async def finish() -> None:
        await lines.put(None)
        await handler

    try:
        await asyncio.wait_for(finish(), HANDLER_FINISH_S)
    except asyncio.TimeoutError:
        log.error("agent message handler did not finish within %.0f s; remaining lines dropped", HANDLER_FINISH_S)


async def _handle_lines(lines: asyncio.Queue[str | None], on_line: LineHandler) -> None:
    while (line := await lines.get()) is not None:
        try:
            await on_line(line)
        except Exception:
            # One bad line or one failed delivery must not stop the rest of the stream.
            log.exception("handling an agent output line failed")


def _close_pipes(proc: asyncio.subprocess.Process) -> None:
    # Reaching into the transport is the only way to let go of pipes an escaped process holds.
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.close()


async def _read_lines(
    stream: asyncio.StreamReader, raw_log: BinaryIO, lines: asyncio.Queue[str | None], activity: _Activity
) -> None:
    pending = bytearray()
    while True:
        chunk = await stream.read(CHUNK_SIZE)
        if not chunk:
            break
        activity.touch()
        raw_log.write(chunk)
        raw_log.flush()
        start = 0
        newline = chunk.find(b"\n")
        while newline >= 0:
            pending += chunk[start:newline]
            await lines.put(_decode(pending))
            activity.touch()
            pending.clear()
            start = newline + 1
            newline = chunk.find(b"\n", start)
        pending += chunk[start:]
    if pending.strip():
        await lines.put(_decode(pending))


async def _read_bytes(stream: asyncio.StreamReader, raw_log: BinaryIO, tail: _Tail, activity: _Activity) -> None:
    while True:
        chunk = await stream.read(CHUNK_SIZE)
        if not chunk:
            return
        activity.touch()
        raw_log.write(chunk)
        raw_log.flush()
        tail.add(chunk)


async def _feed(stdin: asyncio.StreamWriter | None, data: bytes | Awaitable[bytes] | None) -> None:
    if stdin is None:
        return
    try:
        if data is not None and not isinstance(data, (bytes, bytearray)):
            try:
                data = await data
            except Exception:  # noqa: BLE001 — whoever made it stops the run; the agent reads EOF
                data = None
        if data:
            stdin.write(data)
            await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the agent did not want (all of) its stdin; its exit code will tell
    finally:
        with contextlib.suppress(Exception):
            stdin.close()


async def _hand_over(stdin: asyncio.StreamWriter, session: Callable[[asyncio.StreamWriter], Awaitable[None]]) -> None:
    try:
        await session(stdin)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the agent stopped reading; its exit code will tell
    finally:
        with contextlib.suppress(Exception):
            stdin.close()


def _never_fed(request: ProcessRequest) -> None:
    if asyncio.iscoroutine(request.stdin_data):
        request.stdin_data.close()  # not awaited, and that is meant


def _decode(line: bytes | bytearray) -> str:
    return bytes(line).decode("utf-8", errors="replace").rstrip("\r")


def _not_found(request: ProcessRequest) -> str:
    path = request.env.get("PATH", "")
    return f"executable not found: {request.argv[0]!r} (PATH={path})"


class _Activity:
    """When the pipes last gave us something."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def touch(self) -> None:
        self.last = time.monotonic()


class _Tail:
    """The last `size` bytes written, for the failure reason."""

    def __init__(self, size: int):
        self.size = size
        self.buffer = bytearray()

    def add(self, chunk: bytes) -> None:
        self.buffer += chunk
        if len(self.buffer) > self.size:
            del self.buffer[: len(self.buffer) - self.size]

    def text(self) -> str:
        return _decode(self.buffer).strip()
