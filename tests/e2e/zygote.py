"""A process that has imported the server once and forks a `predictorx server start` from it per
request (forkserver.py is its client; it runs as `python zygote.py`, one per test process).

A server start spent ~1.2 of its ~1.8 CPU-s importing FastAPI, SQLAlchemy, pydantic and the app's
routes and models — the same work for each of the ~120 servers of the end-to-end tests. A fork of
a process that imported them already runs `python -m predictorx` as an exec would: the same code from
`predictorx.__main__` on (nothing of ours reads the environment at import time), with the test's
environment, argv, a session of its own and its output in the test's log.

Protocol, one line each way: stdin gets a JSON request {"argv", "env", "log"}; stdout answers
`pid <pid>` for it, and later `exit <pid> <code>` (a negative code: the signal) when that child
ends — this process reaps its children. EOF on stdin ends it."""

from __future__ import annotations

import gc
import json
import os
import signal
import sys


def reap(_signum=None, _frame=None) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        os.write(1, f"exit {pid} {os.waitstatus_to_exitcode(status)}\n".encode())


def child(request: dict) -> None:
    """In the forked child: become `python -m predictorx <argv>`; never returns."""
    code: int = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})  # as a fresh process has it
        os.setsid()
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        os.environ.clear()
        os.environ.update(request["env"])
        gc.enable()
        import runpy

        sys.argv = ["predictorx", *request["argv"]]
        try:
            runpy.run_module("predictorx", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                code = e.code or 0
            else:
                print(e.code, file=sys.stderr)
                code = 1
        import atexit
        import logging

        atexit._run_exitfuncs()  # what the interpreter's own exit would run
        logging.shutdown()
    except BaseException:  # noqa: BLE001 — the child must never fall back into the zygote's loop
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)


def main() -> None:
    sys.path[0] = os.getcwd()  # as `python -m` has it (not this file's folder, tests/e2e)
    gc.disable()  # what `server start` does while it imports; the children enable it again
    import predictorx.server.run  # noqa: F401
    from predictorx.program import _add_in_process_commands, _add_oidc_commands

    _add_in_process_commands()  # the command line, as `main()` builds it (it adds them once)
    _add_oidc_commands()

    gc.freeze()
    signal.signal(signal.SIGCHLD, reap)
    os.write(1, b"ready\n")
    for line in sys.stdin:
        request = json.loads(line)
        # SIGCHLD waits until the pid is told: `exit <pid>` always comes after `pid <pid>`, so the client
        # can tell the end of a process from that of an earlier one the kernel gave the same pid
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        pid = os.fork()
        if pid == 0:
            child(request)
        os.write(1, f"pid {pid}\n".encode())
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})


if __name__ == "__main__":
    main()
