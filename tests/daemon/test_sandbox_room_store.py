"""The agents-room store in a sandboxed run: its folder is mounted writable (SQLite's -wal and -shm,
agents-room's bells/ live beside the store) only when that folder is agents-room's own. With
AGENTS_ROOM_DB=~/room.db the run once got all of $HOME writable (~/.bashrc, ~/.local/bin: what
outlives the run), with /tmp/room.db the host's /tmp, with the store beside the workspaces root
every other task's files; such a run is now refused with a sentence naming the setting."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from predictorx.daemon import envroot, runner, sandbox
from predictorx.daemon.context.types import TaskContext
from predictorx.daemon.repocache import RepoCache
from predictorx.protocol import Claim


def _run(root: Path) -> runner.TaskRun:
    host = SimpleNamespace(workspaces_root=root, repo_cache=RepoCache(root), name="d1", sandbox=True, api=None)
    claim = Claim.from_wire({"task": {"id": "t1", "workspace_id": "w"}, "agent": {"name": "bot", "provider": "command"},
                             "issue": {"number": 1}, "context": {}, "token": "x"})
    return runner.TaskRun(host, claim)  # type: ignore[arg-type]


def _writable(root: Path, rooms_joined: bool = True) -> set[str]:
    """What a run's plan binds writable, with the store as the run finds it (`TaskRun._execute`)."""
    run = _run(root)
    env = envroot.create_env_root(root, "w", "t1")
    store = sandbox.agents_room_paths(Path.home(), root) if rooms_joined else []
    plan = run._sandbox_plan(TaskContext.of_claim(run.claim.context), env, env.workdir, None, room_store=store)
    args = plan.arguments(["true"], {"PATH": "/usr/bin"})
    return {args[i + 2] for i, a in enumerate(args) if a == "--bind"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "person"
    home.mkdir()
    (home / ".bashrc").write_text("# the person's\n")
    monkeypatch.setenv("HOME", str(home))
    return home


def test_a_store_in_home_does_not_make_home_writable(tmp_path: Path, home: Path, monkeypatch) -> None:
    (home / "room.db").write_bytes(b"")
    monkeypatch.setenv("AGENTS_ROOM_DB", str(home / "room.db"))
    with pytest.raises(sandbox.StoreRefused, match="AGENTS_ROOM_DB=.*your home folder.*a folder of its own"):
        _writable(tmp_path / "ws")


def test_a_store_in_its_own_folder_is_writable_and_home_is_not(tmp_path: Path, home: Path, monkeypatch) -> None:
    store = home / ".agents-room"
    (store / "bells").mkdir(parents=True)
    for name in ("room.db", "room.db-wal", "room.db-shm"):
        (store / name).write_bytes(b"")
    monkeypatch.setenv("AGENTS_ROOM_DB", str(store / "room.db"))
    writable = _writable(tmp_path / "ws")
    assert str(store) in writable and str(home) not in writable, writable
    assert str(store) not in _writable(tmp_path / "ws2", rooms_joined=False)  # no room, no store


@pytest.mark.parametrize("db", ["/tmp/room.db", "/var/tmp/room.db", "/room.db"])
def test_a_store_in_a_shared_folder_is_refused(home: Path, monkeypatch, db: str) -> None:
    monkeypatch.setenv("AGENTS_ROOM_DB", db)
    with pytest.raises(sandbox.StoreRefused, match=f"AGENTS_ROOM_DB={db}"):
        sandbox.agents_room_paths(home)


def test_a_store_beside_the_workspaces_root_or_state_dir_is_refused(tmp_path: Path, home: Path, monkeypatch) -> None:
    """The suite's own layout once: room.db next to the workspaces root, which every e2e sandbox run
    then had writable."""
    px = tmp_path / "pxhome"
    (px / "workspaces").mkdir(parents=True)
    monkeypatch.setenv("AGENTS_ROOM_DB", str(px / "room.db"))
    with pytest.raises(sandbox.StoreRefused, match="workspaces root"):
        sandbox.agents_room_paths(home, px / "workspaces")
    monkeypatch.setenv("AGENTS_ROOM_DB", str(px / "workspaces" / "room.db"))
    with pytest.raises(sandbox.StoreRefused, match="workspaces root"):
        sandbox.agents_room_paths(home, px / "workspaces")
    state = sandbox.config.state_dir()
    monkeypatch.setenv("AGENTS_ROOM_DB", str(state / "room.db"))
    with pytest.raises(sandbox.StoreRefused, match="secret path"):
        sandbox.agents_room_paths(home, px / "workspaces")


def test_a_folder_of_its_own_holds_nothing_but_the_store(tmp_path: Path, home: Path, monkeypatch) -> None:
    folder = tmp_path / "rooms"
    (folder / "bells").mkdir(parents=True)
    for name in ("team.db", "team.db-wal", "team.db-shm", "team.db.broken"):
        (folder / name).write_bytes(b"")
    monkeypatch.setenv("AGENTS_ROOM_DB", str(folder / "team.db"))
    assert sandbox.agents_room_paths(home) == [folder]
    (folder / "notes.txt").write_text("mine\n")
    with pytest.raises(sandbox.StoreRefused, match=r"holds more than the store \(notes.txt\)"):
        sandbox.agents_room_paths(home)
