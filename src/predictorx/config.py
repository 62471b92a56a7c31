"""Where Predictor X keeps its state, and the client configuration stored there.

`PREDICTORX_HOME` selects the state dir (database, config.json, daemon_id); the default comes
from platformdirs. The CLI finds the local server through `config.json`, which the server writes
on its first start (0600, the only place a plain token is kept).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

CONFIG_NAME = "config.json"


def _platformdirs() -> ModuleType:
    import platformdirs  # only where PREDICTORX_HOME and friends do not say (an agent's CLI, tests)

    return platformdirs


def private_dir(path: Path) -> Path:
    """Make `path` (and missing parents) and keep it 0700: state is nobody else's (R-SEC-7).

    An existing directory of ours that is open to others (made by an older version) is tightened."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    private_file(path, 0o700)
    return path


def private_file(path: Path, mode: int = 0o600) -> None:
    """Take group and other bits off a file or directory of ours, if it has any."""
    try:
        st = path.stat()
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(path, mode)
    except OSError:
        pass


def state_dir() -> Path:
    home = os.environ.get("PREDICTORX_HOME")
    path = Path(home).expanduser() if home else Path(_platformdirs().user_data_dir("predictorx"))
    return private_dir(path)


def database_url() -> str:
    """PostgreSQL when PREDICTORX_DATABASE_URL says so; otherwise the embedded default (R-SC-1):
    one SQLite file in the state dir, nothing to install."""
    url = os.environ.get("PREDICTORX_DATABASE_URL")
    if url:
        return url
    return f"sqlite:///{state_dir() / 'predictorx.db'}"


def lock_dir() -> Path:
    """Where in-place folder locks live: per user and machine, NOT per state dir, so two daemons
    on one machine (each with its own PREDICTORX_HOME) see each other's locks (R-LD-5)."""
    override = os.environ.get("PREDICTORX_LOCK_DIR")
    path = Path(override).expanduser() if override else Path(_platformdirs().user_cache_dir("predictorx")) / "locks"
    return private_dir(path)


def workspaces_root() -> Path:
    """Where task env roots and the repo cache live; the daemon keeps it 0700 (`private_dir`)."""
    root = os.environ.get("PREDICTORX_WORKSPACES_ROOT")
    return Path(root).expanduser() if root else Path.home() / "predictorx_workspaces"


def read_config() -> dict:
    path = state_dir() / CONFIG_NAME
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return {}


def write_config(**values: object) -> Path:
    """Merge `values` into config.json, created 0600 so a token never lands world-readable."""
    path = state_dir() / CONFIG_NAME
    data = read_config()
    data.update({k: v for k, v in values.items() if v is not None})
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=2)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


class ClientConfig(NamedTuple):  # (not a dataclass: dataclasses imports inspect, a CLI start's tenth)
    server_url: str | None
    token: str | None
    workspace_id: str | None


def client_config() -> ClientConfig:
    """Environment overrides config.json (PREDICTORX_SERVER_URL, PREDICTORX_TOKEN)."""
    data = read_config()
    return ClientConfig(
        server_url=os.environ.get("PREDICTORX_SERVER_URL") or data.get("server_url"),
        token=os.environ.get("PREDICTORX_TOKEN") or data.get("token"),
        workspace_id=os.environ.get("PREDICTORX_WORKSPACE") or data.get("workspace_id"),
    )


def cli_command() -> str:
    """How to type `predictorx` so that it works as printed: the bare name when it is the one on
    PATH, else this installation's path (e.g. `.venv/bin/predictorx` after `make run`)."""
    import shutil
    import sys

    mine = Path(sys.executable).with_name("predictorx")
    found = shutil.which("predictorx")
    if found and mine.exists() and os.path.samefile(found, mine):
        return "predictorx"
    if not mine.exists():
        return "predictorx"
    try:
        rel = os.path.relpath(mine)
    except ValueError:
        return str(mine)
    return rel if not rel.startswith("..") else str(mine)
