"""The harness's servers forked from a zygote (forkserver.py) behave as servers started from
scratch: the test's environment and state dir, a session of their own, their output in their log,
their end (and how) reported to the test."""

from __future__ import annotations

import os
import signal

import psutil
import pytest

from predictorx.testing import ProcessFailed, bound_socket

from .forkserver import ForkedProcess
from .harness import Server


def test_a_forked_server_is_the_tests_own_and_reports_its_end(tmp_path, database_url):
    server = Server(tmp_path / "home", database_url, PREDICTORX_LOG_LEVEL="INFO")
    try:
        assert os.environ.get("PREDICTORX_TEST_FORK_SERVERS") == "0" or isinstance(server.proc, ForkedProcess)
        proc = psutil.Process(server.proc.pid)
        assert os.getpgid(proc.pid) == proc.pid  # a session (and group) of its own: stop_group kills it whole
        assert os.environ.get("PREDICTORX_TEST_FORK_SERVERS") == "0" or "zygote.py" in " ".join(proc.parent().cmdline())
        assert server.config["token"] and (tmp_path / "home" / "config.json").exists()  # its state dir is the test's
        assert server.api("GET", "/api/health") is not None
        assert "Predictor X server on http://127.0.0.1" in server.log_path.read_text()
        assert server.proc.poll() is None
        blocked = int(next(line.split()[1] for line in open(f"/proc/{proc.pid}/status") if line.startswith("SigBlk:")), 16)
        assert not blocked & (1 << (signal.SIGCHLD - 1))  # the zygote's guard is not inherited (nor by its agents)
    finally:
        server.stop()
    # as from `python -m predictorx server start`: uvicorn stops gracefully, then re-raises the SIGTERM
    assert server.proc.wait(10) == -signal.SIGTERM


def test_a_killed_forked_server_says_so(tmp_path, database_url):
    server = Server(tmp_path / "home", database_url)
    try:
        server.proc.kill()
        assert server.proc.wait(10) == -signal.SIGKILL
    finally:
        server.stop()


def test_a_forked_server_that_cannot_start_fails_with_its_reason(tmp_path, database_url):
    taken = bound_socket()
    taken.listen()
    try:
        with pytest.raises(ProcessFailed, match="in use"):
            Server(tmp_path / "home", database_url, port=taken.getsockname()[1]).stop()  # (stopped if it started)
    finally:
        taken.close()
