"""The suite's own machinery stays out of the way of parallel runs on a loaded machine (issue 23,
item 8): ports no other process can take, process groups killed whole, database templates that
are migrated once per run and that nothing can hold."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from pathlib import Path

import psutil
import pytest

from databases import POSTGRES, SHARED_POSTGRES, SHARED_SQLITE, sqlite_copy
from predictorx import testing
from predictorx.testing import PORTS_FROM, ProcessFailed, ServerProcess, bound_socket, free_port, run_group, wait_until


def _ephemeral_start() -> int:
    return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_free_ports_are_below_the_ephemeral_range_and_never_repeat() -> None:
    """A port from bind(0) is in the range outgoing connections take their local ports from: any
    connection on the machine could take it before the server bound it."""
    ports = [free_port() for _ in range(60)]
    assert all(PORTS_FROM <= p < _ephemeral_start() for p in ports), ports
    assert len(set(ports)) == len(ports)


def test_a_bound_socket_holds_its_port() -> None:
    sock = bound_socket()
    try:
        with socket.socket() as other, pytest.raises(OSError):
            other.bind(sock.getsockname())
    finally:
        sock.close()


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.parametrize("ends", ["exits", "times out"])
def test_run_group_leaves_nothing_of_its_command_behind(tmp_path: Path, ends: str) -> None:
    """`server start --workers 2` under subprocess.run left its workers running when it timed out."""
    pidfile = tmp_path / "child.pid"
    script = f"sleep 611 & echo $! > {pidfile}; " + ("sleep 612" if ends == "times out" else "exit 0")
    if ends == "times out":
        with pytest.raises(subprocess.TimeoutExpired):
            run_group(["sh", "-c", script], timeout=3)
    else:
        assert run_group(["sh", "-c", script], timeout=60).returncode == 0
    child = int(wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), 10, what="the child's pid"))
    wait_until(lambda: _gone(child), 10, what="the command's child to be killed")


def test_a_server_whose_port_was_taken_meanwhile_starts_on_another(tmp_path: Path, sqlite_template: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The port chosen for a server process may be taken before the server binds it: the start is
    tried again on another port instead of failing the test."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", free_port()))
    taken.listen()
    ports = iter([taken.getsockname()[1]])
    real = testing.free_port
    monkeypatch.setattr(testing, "free_port", lambda: next(ports, None) or real())
    server = ServerProcess(tmp_path / "home", sqlite_copy(sqlite_template, tmp_path / "px.db"), start_timeout=90)
    try:
        assert server.port != taken.getsockname()[1]
        assert server.api("GET", "/api/health") is not None
    finally:
        server.stop()
        taken.close()


def test_a_server_given_a_taken_port_fails_with_the_reason(tmp_path: Path, sqlite_template: Path) -> None:
    """A port the caller chose (a restart after a crash) is not changed behind its back."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", free_port()))
        taken.listen()
        with pytest.raises(ProcessFailed, match="is in use"):
            ServerProcess(tmp_path / "home", sqlite_copy(sqlite_template, tmp_path / "px.db"),
                          port=taken.getsockname()[1], start_timeout=90)


def test_workers_copy_the_templates_their_controller_built(sqlite_template: Path) -> None:
    """Each worker migrating templates of its own put a migration (a minute at load 8) inside its
    first PostgreSQL test's setup and timeout; the controller builds them before the workers start."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("only a parallel run (make test) has a controller")
    assert sqlite_template == Path(os.environ[SHARED_SQLITE])
    if POSTGRES is not None:
        assert POSTGRES.template == os.environ[SHARED_POSTGRES]


@pytest.mark.postgres
@pytest.mark.skipif(POSTGRES is None, reason="needs PREDICTORX_TEST_POSTGRES_URL")
def test_the_postgres_template_takes_no_connection_and_copies_in_parallel() -> None:
    """CREATE DATABASE … TEMPLATE fails while any session is connected to the template: it takes
    none, and four copies made at once all succeed."""
    import psycopg

    assert POSTGRES is not None
    POSTGRES.drop_later(POSTGRES.migrated())  # the template exists from here on
    assert POSTGRES.template is not None
    with pytest.raises(psycopg.OperationalError, match="not currently accepting connections"):
        psycopg.connect(POSTGRES.url(POSTGRES.template), connect_timeout=10).close()
    made: list[str] = []
    errors: list[BaseException] = []

    def copy() -> None:
        try:
            made.append(POSTGRES._create(POSTGRES.template))
        except BaseException as e:  # noqa: BLE001 — reported below
            errors.append(e)
    threads = [threading.Thread(target=copy) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for name in made:
        POSTGRES.drop_later(name)
    assert not errors and len(made) == 4, errors


def test_python3_on_the_path_is_the_suites_interpreter_with_nothing_between() -> None:
    """The fake agent CLIs start as `#!/usr/bin/env -S python3 -S`, for every probe and run: a version
    manager's shim found first on PATH (pyenv's: a bash and `pyenv exec`) cost more CPU than the fake."""
    import shutil
    import sys

    found = shutil.which("python3")
    assert found is not None and os.path.realpath(found) == os.path.realpath(sys.executable), found
    version = subprocess.run(["python3", "-c", "import sys; print(sys.version)"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    assert version == sys.version
