import pytest

from agents_room.room import Room

from room_helpers import PY, make_repo, run_cli  # noqa: F401 -- re-exported for older imports


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Every test gets its own store and HOME; ~/.agents-room is never touched."""
    db = tmp_path / "room.db"
    monkeypatch.setenv("AGENTS_ROOM_DB", str(db))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    for k in ("AGENTS_ROOM_ROOMS", "AGENTS_ROOM_LABEL", "AGENTS_ROOM_MARKER", "AGENTS_ROOM_HARNESS"):
        monkeypatch.delenv(k, raising=False)
    (tmp_path / "home").mkdir()
    return db


@pytest.fixture
def db(isolated):
    return isolated


class Clock:
    def __init__(self, t: float = 1_800_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, s: float) -> None:
        self.t += s


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def room(db, clock):
    r = Room.open(db, clock=clock)
    yield r
    r.close()


@pytest.fixture
def repos(tmp_path):
    return {
        "api": make_repo(tmp_path, "api-checkout", "git@github.com:acme/api.git"),
        "web": make_repo(tmp_path, "web", "https://github.com/acme/web"),
        "cli": make_repo(tmp_path, "cli"),
    }
