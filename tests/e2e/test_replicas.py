"""Several server replicas on one PostgreSQL behind nginx (issue 14, R-SC-2, R-EX-2).

Two `predictorx server start` processes share a fresh PostgreSQL schema; nginx (Debian's, run by
the test as a child with its own prefix and the config `predictorx server nginx-config` prints)
balances them; a daemon reaches them only through nginx.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

import httpx2 as httpx
import pytest

from databases import POSTGRES_URL, drop_postgres_schema, postgres_schema_url
from predictorx.server.nginx import nginx_binary, start_standalone

from .harness import Daemon, Server, free_port, run_group, wait_until

needs_cluster = [
    pytest.mark.postgres,
    pytest.mark.skipif(not POSTGRES_URL, reason="needs PREDICTORX_TEST_POSTGRES_URL"),
    pytest.mark.skipif(nginx_binary() is None and not os.environ.get("PREDICTORX_REQUIRE_POSTGRES"),
                       reason="needs nginx (Debian package; .ci/run installs it)"),
]


def cluster_test(fn):
    for mark in needs_cluster:
        fn = mark(fn)
    return fn

LINES = 80


@pytest.fixture
def cluster(tmp_path):
    url, schema = postgres_schema_url(POSTGRES_URL)
    started: list = []
    try:
        a = Server(tmp_path / "a-home", url)
        started.append(a)
        (tmp_path / "b-home").mkdir()
        shutil.copy(a.home / "config.json", tmp_path / "b-home" / "config.json")  # the owner's token
        b = Server(tmp_path / "b-home", url)
        started.append(b)
        port = free_port()
        proxy = start_standalone(str(tmp_path / "nginx"), [f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"], port)
        proxy_url = f"http://127.0.0.1:{port}"

        probe = httpx.Client(timeout=2)  # one for every poll: a new client costs 20 ms of CPU (its SSL context)

        def through_proxy() -> bool:
            try:
                return probe.get(f"{proxy_url}/api/health").status_code == 200
            except httpx.HTTPError:
                return False
        with probe:
            wait_until(through_proxy, 20, what="nginx to answer")
        yield a, b, proxy_url
    finally:
        if "proxy" in locals():
            os.killpg(proxy.pid, signal.SIGTERM)
            proxy.wait(10)
        for s in started:
            s.stop()
        drop_postgres_schema(POSTGRES_URL, schema)


def _agent_script(tmp_path: Path, lines: int, pause: float) -> list[str]:
    script = tmp_path / "talker.sh"
    script.write_text(f'#!/bin/sh\ni=0\nwhile [ $i -lt {lines} ]; do echo "line $i"; i=$((i+1)); sleep {pause}; done\n')
    script.chmod(0o755)
    return ["/bin/sh", str(script)]


def _holder(a: Server, b: Server, daemon_id: str) -> tuple[Server, Server]:
    """(the replica holding the daemon's push connection, the other one)."""
    held = wait_until(lambda: [r for r in (a, b) if r.api("GET", f"/api/daemons/{daemon_id}")["connected"]],
                      20, what="a replica holding the daemon's stream")
    return (a, b) if held[0] is a else (b, a)


@cluster_test
def test_replicas_behind_nginx_wake_across_and_survive_a_replica_kill(cluster, tmp_path):
    a, b, proxy_url = cluster
    daemon = Daemon(a, tmp_path / "daemon", replicas=[a, b], PREDICTORX_SERVER_URL=proxy_url)
    try:
        a.api("POST", "/api/agents", {"name": "quick", "provider": "command", "command": ["true"],
                                      "max_concurrent_tasks": 4})
        a.api("POST", "/api/agents", {"name": "talker", "provider": "command",
                                      "command": _agent_script(tmp_path, LINES, 0.05), "max_concurrent_tasks": 4})
        holder, other = _holder(a, b, daemon.id)

        # 1. A task queued through the replica the daemon is NOT connected to wakes it (LISTEN/NOTIFY):
        # well inside the 30 s safety poll, so only the push can have done it.
        issue = other.api("POST", "/api/issues", {"title": "cross-replica wake", "assignee": "quick"})
        task = other.runs(issue["number"])[0]
        done = other.wait_task(task["id"], timeout=20)
        assert done["status"] == "completed" and done["daemon_id"] == daemon.id

        # 2. Kill the replica holding the daemon's stream while the agent talks.
        issue = other.api("POST", "/api/issues", {"title": "talk through a failover", "assignee": "talker"})
        task_id = other.runs(issue["number"])[0]["id"]
        wait_until(lambda: len(other.api("GET", f"/api/tasks/{task_id}/messages")) >= 5, 30,
                   what="the first messages")
        holder, other = _holder(a, b, daemon.id)
        os.killpg(holder.proc.pid, signal.SIGKILL)
        holder.proc.wait(10)

        done = other.wait_task(task_id, timeout=60)
        assert done["status"] == "completed", done
        msgs = other.api("GET", f"/api/tasks/{task_id}/messages", params={"limit": 1000})
        seqs = [m["seq"] for m in msgs]
        assert seqs == list(range(len(seqs))), "a gap or a duplicate in the sequence"
        texts = [m["content"].get("text", "").strip() for m in msgs if m["kind"] == "text"]
        said = [t for t in texts if t.startswith("line ")]
        assert said == [f"line {i}" for i in range(LINES)], "lost or duplicated lines"
        # The daemon found the surviving replica through nginx and holds its stream there.
        wait_until(lambda: other.api("GET", f"/api/daemons/{daemon.id}")["connected"], 30,
                   what="the daemon to reconnect through the proxy")
        assert daemon.proc.poll() is None
    finally:
        daemon.stop()


def test_server_workers_need_postgres(tmp_path):
    env = {**os.environ, "PREDICTORX_HOME": str(tmp_path / "h"),
           "PREDICTORX_DATABASE_URL": f"sqlite:///{tmp_path / 'px.db'}"}
    p = run_group([sys.executable, "-m", "predictorx", "server", "start", "--port", str(free_port()),
                   "--workers", "2"], env=env, timeout=90)
    assert p.returncode != 0 and "needs PostgreSQL" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.postgres
@pytest.mark.skipif(not POSTGRES_URL, reason="needs PREDICTORX_TEST_POSTGRES_URL")
def test_redteam_workers_refuse_a_wrong_body_limit_in_one_sentence(tmp_path):
    """A wrong PREDICTORX_MAX_BODY_BYTES with --workers: every worker died on it with a traceback and
    uvicorn's supervisor restarted them for ever; now one sentence and exit 1, nothing started."""
    url, schema = postgres_schema_url(POSTGRES_URL)
    env = {**os.environ, "PREDICTORX_HOME": str(tmp_path / "h"), "PREDICTORX_DATABASE_URL": url,
           "PREDICTORX_MAX_BODY_BYTES": "lots"}
    try:
        p = run_group([sys.executable, "-m", "predictorx", "server", "start", "--port", str(free_port()),
                       "--workers", "2"], env=env, timeout=90)
    finally:
        drop_postgres_schema(POSTGRES_URL, schema)
    assert p.returncode == 1 and "PREDICTORX_MAX_BODY_BYTES" in p.stderr and "Traceback" not in p.stderr


@cluster_test
def test_server_workers_serve_one_port(tmp_path):
    import psutil

    url, schema = postgres_schema_url(POSTGRES_URL)
    server = None
    try:
        server = Server(tmp_path / "home", url, args=("--workers", "2"))
        wait_until(lambda: len(psutil.Process(server.proc.pid).children(recursive=True)) >= 2, 30,
                   what="two worker processes")
        for i in range(6):  # whichever worker answers, it is the same service on the same data
            server.api("POST", "/api/issues", {"title": f"w{i}"})
        assert len(server.api("GET", "/api/issues")) == 6
    finally:
        if server:
            server.stop()
        drop_postgres_schema(POSTGRES_URL, schema)


def test_daemon_fails_over_between_server_urls(tmp_path):
    """No proxy: the daemon is given a dead URL first and the server second; it registers, holds its
    stream and runs a task through the second, and gives the agent that URL."""
    server = Server(tmp_path / "home", f"sqlite:///{tmp_path / 'px.db'}")
    dead = f"http://127.0.0.1:{free_port()}"
    daemon = None
    try:
        daemon = Daemon(server, tmp_path / "daemon", PREDICTORX_SERVER_URL=f"{dead},{server.url}")
        server.api("POST", "/api/agents", {"name": "where", "provider": "command",
                                           "command": ["sh", "-c", 'echo "url=$PREDICTORX_SERVER_URL"']})
        made = server.api("POST", "/api/issues", {"title": "fail over", "assignee": "where"})
        task = server.wait_task(server.runs(made["number"])[0]["id"], timeout=30)
        assert task["status"] == "completed"
        said = [m["content"].get("text", "") for m in server.api("GET", f"/api/tasks/{task['id']}/messages")]
        assert any(f"url={server.url}" in t for t in said), said
        assert "switching to" in daemon.output()
    finally:
        if daemon:
            daemon.stop()
        server.stop()
