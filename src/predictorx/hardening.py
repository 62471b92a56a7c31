"""Process hardening for the server and the daemon (R-SEC-6, R-SEC-7).

- `private_files()`: umask 077, so every file the process makes (database, logs, pid and id
  files, raw agent streams) is 0600 and every directory 0700 — another local user reads nothing.
- `non_dumpable()`: `PR_SET_DUMPABLE 0`. The kernel then treats the process like a setuid one:
  its `/proc/<pid>/environ`, `mem`, `fd/`, `cwd` and `maps` belong to root and no process of the
  same user (an agent it started, prompt-injected or not) can read them or ptrace it. The flag is
  reset by `execve`, so agents the daemon starts are ordinary processes again.
- `child_subreaper()`: `PR_SET_CHILD_SUBREAPER`. A process an agent started and abandoned (a
  `setsid` double fork) is re-parented to the daemon instead of to init, so the daemon can still
  find it and end it with its task.
- `die_with_parent(sig)`: for a child before exec — the kernel sends `sig` when its parent dies.
- `raise_open_file_limit()`: the soft RLIMIT_NOFILE up to the hard one. Every connection (and,
  in the daemon, every agent's pipes and logs) is a file descriptor; the usual soft limit of
  1,024 was what 1,100 idle connections exhausted (issue 29 §7), while the hard limit allows more.

All of it is Linux; elsewhere the calls do nothing and say so in their return value.
"""

from __future__ import annotations

import logging
import os
import signal
import sys

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37


def _load_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()


def _prctl(option: int, arg: int = 0) -> int:
    if _PRCTL is None:
        return -1
    return int(_PRCTL(option, arg, 0, 0, 0))


_original_umask: int | None = None


def private_files() -> None:
    """Files 0600 and directories 0700 from here on (R-SEC-7)."""
    global _original_umask
    previous = os.umask(0o077)
    if _original_umask is None:
        _original_umask = previous


def person_umask() -> int:
    """The umask this process started with: agents get it back, so what they make in a person's
    folder has the modes the person's own tools would give it."""
    if _original_umask is not None:
        return _original_umask
    current = os.umask(0o022)
    os.umask(current)
    return current


def non_dumpable() -> bool:
    """Make this process's /proc entries unreadable to same-user processes (R-SEC-6)."""
    ok = _prctl(PR_SET_DUMPABLE, 0) == 0
    if not ok and _PRCTL is not None:
        log.warning("could not make this process non-dumpable; same-user processes may read its environment")
    return ok


def child_subreaper() -> bool:
    """Adopt the orphans of our descendants, so none escapes its task (R-EX-5)."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1) == 0


def is_subreaper() -> bool:
    if _PRCTL is None:
        return False
    import ctypes

    value = ctypes.c_int(0)
    _PRCTL(PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0)
    return value.value != 0


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """In a child before exec: the kernel sends `sig` when the parent dies (Linux)."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


#: Above this a soft limit buys nothing here (select() is never used) and costs kernel memory.
OPEN_FILES_CEILING = 1 << 20


def raise_open_file_limit() -> int | None:
    """Raise the soft open-file limit to the hard one (at most OPEN_FILES_CEILING); the new soft
    limit, or None where there is no such limit to raise."""
    try:
        import resource
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = OPEN_FILES_CEILING if hard == resource.RLIM_INFINITY else min(hard, OPEN_FILES_CEILING)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            return wanted
        except (ValueError, OSError) as e:
            log.warning("could not raise the open-file limit from %d to %d: %s", soft, wanted, e)
    return soft


def harden_service() -> None:
    """What the server and the daemon do first: private files, nothing to read in /proc, and as
    many open files as the hard limit allows."""
    private_files()
    non_dumpable()
    raise_open_file_limit()
