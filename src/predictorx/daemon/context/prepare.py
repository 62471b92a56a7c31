"""Giving the agent its project context, best effort (R-CTX-5): resources.json, the instruction
block, and the undo record kept before the person's folder changes; any failure is logged,
whatever was already written is undone, and the task runs without project context."""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from . import record as contextrecord
from .block import instruction_file_for, plan_block, remove_block
from .files import write_atomic
from .render import render_context_block
from .resourcesjson import planned_resources_json, write_resources_json
from .types import RESOURCES_JSON, BlockHandle, ContextFiles, TaskContext

log = logging.getLogger("predictorx.daemon.context")

#: How long the daemon's event loop waits for the context's files to be written or taken out (the
#: work runs in a thread: whatever the agent left in its folder, the loop is never blocked).
FILES_TIMEOUT_S = 60.0


@dataclass
class PreparedContext:
    """The outcome of `prepare_context`; `cleanup()` undoes it (idempotent, never raises)."""

    block: str = ""                      # the markdown the agent was given ("" if none)
    handle: BlockHandle | None = None
    files: ContextFiles | None = None
    error: str | None = None             # why the task runs without project context
    record: Path | None = None           # where the undo record is kept (record.py)

    def cleanup(self) -> None:
        if self.handle is not None:
            try:
                remove_block(self.handle)
            except OSError as exc:
                log.warning("could not remove the project block from %s: %s", self.handle.path, exc)
            self.handle = None
        if self.files is not None:
            try:
                self.files.remove()
            except OSError as exc:
                log.warning("could not remove %s: %s", RESOURCES_JSON, exc)
            self.files = None
        if self.record is not None:
            self.record.unlink(missing_ok=True)
            self.record = None

    async def cleanup_off_loop(self, timeout: float | None = None) -> None:
        """`cleanup()` in a thread, awaited at most `timeout` seconds (FILES_TIMEOUT_S): the agent's
        folder can never block the daemon's event loop. Past the timeout it goes on in the
        background, and the undo record stays for the next daemon start if it never ends."""
        work = asyncio.ensure_future(asyncio.to_thread(self.cleanup))
        try:
            await asyncio.wait_for(asyncio.shield(work), FILES_TIMEOUT_S if timeout is None else timeout)
        except asyncio.TimeoutError:
            log.warning("taking the project context out of the folder did not end within %s s; it goes on "
                        "in the background", FILES_TIMEOUT_S if timeout is None else timeout)


ContextSource = TaskContext | Callable[[], "TaskContext | Awaitable[TaskContext]"]


async def prepare_context(workdir: Path, provider: str, task_id: str, load: ContextSource, *,
                          checkouts: Mapping[str, str | Path] | None = None,
                          record: Path | None = None) -> PreparedContext:
    """Load the project context and give it to the agent, best effort (R-CTX-5).

    `load` is a TaskContext or a (sync or async) callable fetching it. On any failure — fetch,
    render or write — the failure is logged, anything written is removed, and an empty
    `PreparedContext` with `error` set is returned: the task runs without the section and file.

    With `record`, what is about to be written is kept there first (record.py), so that a
    daemon killed mid-task still has its next start take it out of the person's folder.
    """
    prepared = PreparedContext(record=record)
    try:
        ctx = load() if callable(load) else load
        if inspect.isawaitable(ctx):
            ctx = await ctx
    except Exception as exc:  # best effort by requirement: the task must still run
        log.warning("task %s runs without project context: %s", task_id, exc, exc_info=True)
        return PreparedContext(error=f"{type(exc).__name__}: {exc}")
    # The files are written in a thread, so that nothing in the folder can block the event loop.
    work = asyncio.ensure_future(asyncio.to_thread(_give_context, prepared, Path(workdir), provider, task_id, ctx,
                                                   checkouts, record))
    try:
        return await asyncio.wait_for(asyncio.shield(work), FILES_TIMEOUT_S)
    except (asyncio.TimeoutError, asyncio.CancelledError) as exc:
        # still writing: once it ends, what it wrote is taken out again (in a thread, not on the loop)
        work.add_done_callback(lambda _: threading.Thread(target=prepared.cleanup, daemon=True).start())
        if isinstance(exc, asyncio.CancelledError):
            raise
        log.warning("task %s runs without project context: writing it took over %s s", task_id, FILES_TIMEOUT_S)
        return PreparedContext(error=f"TimeoutError: writing the project context took over {FILES_TIMEOUT_S} s")


def _give_context(prepared: PreparedContext, workdir: Path, provider: str, task_id: str, ctx: TaskContext,
                  checkouts: Mapping[str, str | Path] | None, record: Path | None) -> PreparedContext:
    """`prepare_context`'s file work (blocking; run in a thread)."""
    try:
        if record is not None and ctx.has_project:
            contextrecord.save(record, task_id, workdir, resources=planned_resources_json(workdir))
        files = write_resources_json(workdir, ctx, task_id=task_id) if ctx.has_project else None
        prepared.files = files
        block = render_context_block(ctx, checkouts=checkouts,
                                     resources_json_written=bool(files and files.files))
        if block:
            path = workdir / instruction_file_for(provider)
            handle, data = plan_block(path, block, task_id=task_id)
            real, root = handle.path, Path(os.path.realpath(workdir))
            if root != real and root not in real.parents:
                raise OSError(f"{path.name} is a symlink to {real}, outside the working directory")
            if record is not None:  # kept before the person's file changes (finding 13)
                contextrecord.save(record, task_id, workdir, resources=files if files and files.files else None,
                                   block=handle)
            write_atomic(handle.path, data)
            prepared.handle = handle
            prepared.block = block
        return prepared
    except Exception as exc:  # best effort by requirement: the task must still run
        log.warning("task %s runs without project context: %s", task_id, exc, exc_info=True)
        prepared.cleanup()
        return PreparedContext(error=f"{type(exc).__name__}: {exc}")
