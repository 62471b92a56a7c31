"""Finding 11 (issue 8): state is nobody else's (R-SEC-7).

Another local user could read the database, the daemon id, raw stream logs and the workspaces
root. Now the server and the daemon run with umask 077 and tighten what an older version left:
state dir, workspaces root and lock dir 0700; database, config, daemon_id, pid file and logs 0600.
The check is the one another user's `open()` makes: the mode bits for group and others.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .harness import wait_until


def _open_to_others(path: Path) -> bool:
    return bool(path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO))


def test_finding_11_state_dir_database_logs_and_ids_are_private(server, start_daemon, database_url, tmp_path):
    daemon = start_daemon()
    server.api("POST", "/api/agents", {"name": "echo", "provider": "command",
                                       "command": ["sh", "-c", "echo hello; echo made > made-by-agent.txt"]})
    issue = server.api("POST", "/api/issues", {"title": "Say hello", "assignee": "echo"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"])
    assert task["status"] == "completed", task

    workspaces = Path(os.environ["PREDICTORX_WORKSPACES_ROOT"])
    locks = Path(os.environ["PREDICTORX_LOCK_DIR"])
    for d in (server.home, daemon.home, workspaces, locks):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, f"{d} is {oct(stat.S_IMODE(d.stat().st_mode))}"
    must_be_private = [server.home / "config.json", daemon.home / "config.json", daemon.home / "daemon_id",
                       daemon.home / "daemon.pid"]
    if database_url.startswith("sqlite"):
        db = Path(database_url.split("///", 1)[1])
        must_be_private += [p for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists()]
    env_roots = [p for p in workspaces.glob("*/*") if (p / ".gc_meta.json").exists()]
    assert env_roots, "the task left no env root"
    for env_root in env_roots:
        assert not _open_to_others(env_root) and not _open_to_others(env_root.parent)
        logs = list((env_root / "logs").iterdir())
        assert any(p.name.endswith(".stream.jsonl") for p in logs)
        must_be_private += [*logs, env_root / ".gc_meta.json", env_root / "logs"]
    # Whatever else the server and the daemon keep in their state dirs (tokens, logs) too; the
    # harness's own capture of the daemon's output is not ours.
    must_be_private += [p for home in (server.home, daemon.home) for p in home.rglob("*") if p.name != "daemon.out"]
    for path in must_be_private:
        assert path.exists(), path
        assert not _open_to_others(path), f"{path} is {oct(stat.S_IMODE(path.stat().st_mode))}"
    # What the agent itself made keeps the person's modes (its umask is the daemon's original one);
    # it is private all the same, below the 0700 workspaces root.
    made = next(workspaces.glob("*/*/workdir/made-by-agent.txt"))
    assert stat.S_IMODE(made.stat().st_mode) & 0o044 == 0o044 & ~_umask_of_tests()


def _umask_of_tests() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def test_finding_11_an_older_open_state_dir_is_tightened(tmp_path, monkeypatch):
    from predictorx import config
    from predictorx.daemon import identity

    home = tmp_path / "old-state"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    (home / "daemon_id").write_text("0b5e9c3a-5f0e-4f7e-9a51-7d4a5f0d8e11\n")
    os.chmod(home / "daemon_id", 0o644)
    monkeypatch.setenv("PREDICTORX_HOME", str(home))
    assert identity.daemon_id() == "0b5e9c3a-5f0e-4f7e-9a51-7d4a5f0d8e11"
    assert stat.S_IMODE(config.state_dir().stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "daemon_id").stat().st_mode) == 0o600
