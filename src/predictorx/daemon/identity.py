"""This machine's stable daemon id and the running daemon's pid file, both in the state dir.

The pid file is also the daemon's instance lock: the running daemon holds an exclusive `flock`
on it for its whole life. The kernel drops that lock when the process dies, however it dies, so
a pid file left by a crashed or killed daemon never blocks the next start (R-SEC-7, finding 13),
whatever pid it names and whoever has that pid now. Both files are 0600.
"""

from __future__ import annotations

import fcntl
import os
import uuid
from pathlib import Path

from .. import config

_held: int | None = None  # the fd holding this process's instance lock


def _write_private(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def daemon_id() -> str:
    path = config.state_dir() / "daemon_id"
    try:
        value = path.read_text().strip()
        config.private_file(path)
        return str(uuid.UUID(value))
    except (FileNotFoundError, ValueError):
        value = str(uuid.uuid4())
        _write_private(path, value + "\n")
        return value


def pid_file() -> Path:
    return config.state_dir() / "daemon.pid"


def _open_pid_file() -> int:
    fd = os.open(pid_file(), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    config.private_file(pid_file())
    return fd


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 64, 0).split()[0])
    except (ValueError, IndexError, OSError):
        return None


def running_pid() -> int | None:
    """The pid of this state dir's running daemon, or None (a stale pid file is ignored)."""
    if _held is not None:
        return os.getpid()
    try:
        fd = _open_pid_file()
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(fd) or -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def write_pid() -> bool:
    """Take the instance lock and write our pid; False if another daemon holds it."""
    global _held
    if _held is not None:
        return True
    fd = _open_pid_file()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held = fd
    return True


def clear_pid() -> None:
    global _held
    if _held is None:
        return
    try:
        os.ftruncate(_held, 0)
        pid_file().unlink(missing_ok=True)
    except OSError:
        pass
    os.close(_held)
    _held = None
