"""Tokens are stored hashed (R-SEC-1): a user token, a token minted over the API, a daemon token and
a task token all authenticate, yet no table row of the database — nor, on SQLite, any byte of its
files — holds one of them; the token table holds their SHA-256."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

from sqlalchemy import MetaData, select


def _tokens(api) -> dict[str, str]:
    minted = api.post("/api/tokens", json={"name": "laptop", "days": 30})
    assert minted.status_code in (200, 201), minted.text
    did = str(uuid.uuid4())
    reg = api.post("/api/daemon/register", json={"daemon_id": did, "name": "host", "capabilities": [],
                                                  "runtimes": [{"provider": "command", "version": "1"}]})
    assert reg.status_code == 200, reg.text
    daemon = api.as_(reg.json()["token"])
    assert api.post("/api/agents", json={"name": "a1", "provider": "command", "command": ["true"],
                                         "runtime": did}).status_code < 300
    assert api.post("/api/issues", json={"title": "Do it", "assignee": "a1"}).status_code == 201
    [task] = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"]
    return {"owner": api.token, "minted": minted.json()["token"], "daemon": reg.json()["token"],
            "task": task["token"]}


def test_tokens_are_stored_only_as_their_sha256(api, db, database_url):
    tokens = _tokens(api)
    assert api.as_(tokens["minted"]).get("/api/projects").status_code == 200  # they work
    assert api.as_(tokens["task"]).get("/api/projects").status_code != 401
    meta = MetaData()
    meta.reflect(db.engine)
    rows = []
    with db.engine.connect() as conn:
        for table in meta.sorted_tables:
            rows += [repr(tuple(r)) for r in conn.execute(select(table))]
        hashes = set(conn.execute(select(meta.tables["token"].c.token_hash)).scalars())
    dump = "\n".join(rows)
    for kind, raw in tokens.items():
        assert raw[4:] not in dump, f"the {kind} token is stored in clear"
        assert hashlib.sha256(raw.encode()).hexdigest() in hashes, f"the {kind} token's hash is not stored"
    if database_url.startswith("sqlite:///"):
        path = Path(database_url.removeprefix("sqlite:///"))
        files = [p for p in path.parent.glob(path.name + "*") if p.is_file()]  # the db, -wal, -shm
        data = b"".join(p.read_bytes() for p in files)
        assert data and not any(raw[4:].encode() in data for raw in tokens.values())
