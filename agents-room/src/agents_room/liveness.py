"""Process identity and liveness.

Linux (``/proc``): a session records the harness pid, that process's start time
(field 22 of ``/proc/<pid>/stat``) and an environment marker (the value of
``AGENTS_ROOM_MARKER`` in its environment if present, else a hash of its whole
initial environment). A pid counts as alive only when all three still match,
so a reused pid is not alive.

Elsewhere the fallback is weaker: "is the pid running" (plus the create time
when psutil can read it). A session with no pid is never judged gone.
"""

from __future__ import annotations

import os

_PROC = "/proc"
HAS_PROC = os.path.exists("/proc/self/stat")
def _read(path: str) -> str:
    with open(path) as fh:
        return fh.read()


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


SHELLS = {"sh", "bash", "dash", "zsh", "fish", "ksh", "env", "timeout", "nice", "nohup", "stdbuf"}


def proc_start(pid: int) -> str | None:
    if HAS_PROC:
        try:
            data = _read(f"{_PROC}/{pid}/stat")
        except OSError:
            return None
        rest = data[data.rfind(")") + 2 :].split()
        # rest[0] is field 3 (state); start time is field 22
        return rest[19] if len(rest) > 19 else None
    try:
        import psutil

        return f"{psutil.Process(pid).create_time():.3f}"
    except Exception:  # noqa: BLE001 — any psutil failure means: unknown
        return None


def env_marker(pid: int) -> str | None:
    if not HAS_PROC:
        return None
    try:
        raw = _read_bytes(f"{_PROC}/{pid}/environ")
    except OSError:
        return None
    for item in raw.split(b"\0"):
        if item.startswith(b"AGENTS_ROOM_MARKER="):
            return "m:" + item.split(b"=", 1)[1].decode(errors="replace")
    import hashlib

    return "h:" + hashlib.sha256(raw).hexdigest()[:16]


def proc_name(pid: int) -> str | None:
    if HAS_PROC:
        try:
            return _read(f"{_PROC}/{pid}/comm").strip()
        except OSError:
            return None
    try:
        import psutil

        return psutil.Process(pid).name()
    except Exception:  # noqa: BLE001 — any psutil failure means: unknown
        return None


def proc_parent(pid: int) -> int | None:
    if HAS_PROC:
        try:
            data = _read(f"{_PROC}/{pid}/stat")
        except OSError:
            return None
        rest = data[data.rfind(")") + 2 :].split()
        return int(rest[1]) if len(rest) > 1 else None
    try:
        import psutil

        return psutil.Process(pid).ppid()
    except Exception:  # noqa: BLE001 — any psutil failure means: unknown
        return None


def harness_pid(start: int | None = None) -> int | None:
    """The process that launched us (hook or MCP server), skipping wrapper shells."""
    pid = start if start is not None else os.getppid()
    for _ in range(8):
        if pid is None or pid <= 1:
            return None
        name = proc_name(pid)
        if name is None or name not in SHELLS:
            return pid
        pid = proc_parent(pid)
    return pid


def identity(pid: int | None) -> tuple[int | None, str | None, str | None]:
    """(pid, start time, env marker) for recording on a session."""
    if pid is None:
        return None, None, None
    return pid, proc_start(pid), env_marker(pid)


def is_alive(pid: int | None, start: str | None, marker: str | None) -> bool | None:
    """True/False, or None when the session has no pid (never judged gone)."""
    if pid is None:
        return None
    if HAS_PROC:
        now_start = proc_start(pid)
        if now_start is None:
            return False
        if start is not None and now_start != start:
            return False
        if marker is not None:
            now_marker = env_marker(pid)
            if now_marker is not None and now_marker != marker:
                return False
        return True
    try:
        import psutil

        if not psutil.pid_exists(pid):
            return False
        if start is not None:
            now_start = proc_start(pid)
            if now_start is not None and now_start != start:
                return False
        return True
    except Exception:  # noqa: BLE001 — when in doubt, a session is alive
        return True
