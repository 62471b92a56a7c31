"""This machine's stable daemon id and the running daemon's pid file, both in the state dir.

The pid file is also the daemon's instance lock: the running daemon holds an exclusive `flock`
on it for its whole life. The kernel drops that lock when the process dies, however it dies, so
a pid file left by a crashed or killed daemon never blocks the next start (R-SEC-7, finding 13),
whatever pid it names and whoever has that pid now. Both files are 0600.

It also keeps this daemon's own token, `daemon_token.json` (0600): the daemon never keeps a
person's token (R-SEC-5, R-SEC-6). It registers once with its owner's token and from then on runs
on the daemon token the server answered, which acts only for this one daemon.
"""

from __future__ import annotations

import fcntl
import json
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


TOKEN_FILE = "daemon_token.json"


def token_path() -> Path:
    return config.state_dir() / TOKEN_FILE


def saved_token(server_url: str, workspace: str | None) -> str | None:
    """This daemon's token for that server (and workspace, when one is configured), if saved."""
    try:
        data = json.loads(token_path().read_text())
    except (FileNotFoundError, ValueError, OSError):
        return None
    if not isinstance(data, dict) or data.get("server_url") != server_url.rstrip("/"):
        return None
    if workspace and workspace not in (data.get("workspace_id"), data.get("workspace_slug")):
        return None
    token = data.get("token")
    return token if isinstance(token, str) and token.startswith("pxd_") else None


def save_token(server_url: str, workspace_id: str | None, workspace_slug: str | None, token: str) -> None:
    """Written 0600 from the first byte (never briefly readable by others), replaced atomically."""
    path = token_path()
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump({"server_url": server_url.rstrip("/"), "workspace_id": workspace_id,
                   "workspace_slug": workspace_slug, "daemon_id": daemon_id(), "token": token}, fh)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def forget_token() -> None:
    try:
        token_path().unlink()
    except FileNotFoundError:
        pass
