"""This machine's stable daemon id and the running daemon's pid file, both in the state dir."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import psutil

from .. import config


def daemon_id() -> str:
    path = config.state_dir() / "daemon_id"
    try:
        value = path.read_text().strip()
        return str(uuid.UUID(value))
    except (FileNotFoundError, ValueError):
        value = str(uuid.uuid4())
        tmp = path.with_suffix(".tmp")
        tmp.write_text(value + "\n")
        os.replace(tmp, path)
        return value


def pid_file() -> Path:
    return config.state_dir() / "daemon.pid"


def running_pid() -> int | None:
    """The pid of this state dir's daemon if it is alive (a stale pid file is ignored)."""
    try:
        pid, started = pid_file().read_text().split()
        proc = psutil.Process(int(pid))
        if abs(proc.create_time() - float(started)) < 1.0:
            return int(pid)
    except (FileNotFoundError, ValueError, psutil.Error):
        pass
    return None


def write_pid() -> None:
    me = psutil.Process()
    pid_file().write_text(f"{me.pid} {me.create_time()}\n")


def clear_pid() -> None:
    try:
        if pid_file().read_text().split()[0] == str(os.getpid()):
            pid_file().unlink()
    except (FileNotFoundError, IndexError):
        pass
