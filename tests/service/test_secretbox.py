"""Sealing secrets at rest (service/secretbox.py): round trip, purpose binding, tampering, the key
from the environment or the state dir's file (0600), and key rotation through every sealed column."""

from __future__ import annotations

import base64
import os
import stat
import subprocess
import sys

import pytest
from sqlalchemy import text

from predictorx import config
from predictorx.service import forges, secretbox
from predictorx.service.secretbox import SecretError, seal, unseal
from predictorx.store.schema import ForgeConnection, Workspace

from forge_testkit import GOOD_TOKEN, KIND, registered_kit_forge


def _key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def test_round_trip_and_the_key_file_is_made_0600_on_first_use():
    path = config.state_dir() / "secret.key"
    assert not path.exists()
    sealed = seal("hunter2-token", purpose="forge_connection:1:credential")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "hunter2" not in sealed and sealed.startswith("pxs2:")
    kid = secretbox.sealed_key_id(sealed)
    assert kid == secretbox.load_keyring().sealing.id and len(kid) == 8
    assert unseal(sealed, purpose="forge_connection:1:credential") == "hunter2-token"
    assert seal("x" * 10, purpose="p") != seal("x" * 10, purpose="p")  # a fresh nonce each time


def test_a_value_does_not_open_under_another_purpose():
    sealed = seal("the-token", purpose="forge_connection:1:credential")
    for other in ("forge_connection:2:credential", "forge_connection:1:webhook_secret", ""):
        with pytest.raises(SecretError) as e:
            unseal(sealed, purpose=other or "x")
        assert "the-token" not in e.value.message


@pytest.mark.parametrize("damage", ["flip", "truncate", "kid", "garbage"])
def test_tampering_is_detected_with_a_sentence(damage):
    sealed = seal("the-token-abc", purpose="p:1:f")
    version, kid, body = sealed.split(":", 2)
    if damage == "flip":
        body = body[:-3] + ("A" if body[-3] != "A" else "B") + body[-2:]
    elif damage == "truncate":
        body = body[:10]
    elif damage == "kid":
        kid = "00000000"
    else:
        body = "!!not base64!!"
    with pytest.raises(SecretError) as e:
        unseal(f"{version}:{kid}:{body}", purpose="p:1:f")
    assert e.value.status == 503 and "the-token" not in e.value.message
    assert ("key 00000000" in e.value.message) if damage == "kid" else ("does not open" in e.value.message)
    with pytest.raises(SecretError, match="not a sealed value"):
        unseal("plain-text-token", purpose="p:1:f")


def test_the_environment_key_wins_and_is_checked(monkeypatch):
    first, second = _key(), _key()
    monkeypatch.setenv("PREDICTORX_SECRET_KEY", f"{first},{second}")
    sealed = seal("v", purpose="p")
    assert secretbox.sealed_key_id(sealed) == secretbox.key_id(base64.b64decode(first))
    assert not (config.state_dir() / "secret.key").exists()
    monkeypatch.setenv("PREDICTORX_SECRET_KEY", second)  # the sealing key gone: a sentence, not a traceback
    with pytest.raises(SecretError, match="PREDICTORX_SECRET_KEY"):
        unseal(sealed, purpose="p")
    monkeypatch.setenv("PREDICTORX_SECRET_KEY", base64.b64encode(b"short").decode())
    with pytest.raises(SecretError, match="AES-256 needs 32"):
        seal("v", purpose="p")
    monkeypatch.setenv("PREDICTORX_SECRET_KEY", "not base64 at all!")
    with pytest.raises(SecretError, match="not base64"):
        seal("v", purpose="p")


def test_every_sealed_column_of_the_schema_is_found():
    assert set(secretbox.sealed_columns()) >= {(ForgeConnection, "credential_sealed"),
                                               (ForgeConnection, "webhook_secret_sealed")}


def _connection(db, token: str = GOOD_TOKEN, name: str = "gh") -> tuple[str, str]:
    with db.write() as s:
        ws = s.query(Workspace).first()
        if ws is None:
            ws = Workspace(name="W", slug="w")
            s.add(ws)
            s.flush()
        row, hook = forges.add_connection(s, ws.id, None, kind=KIND, name=name, base_url="https://forge.test",
                                          credential=token)
        return row.id, hook


def _raw(db, column: str) -> list[str]:
    with db.read() as s:
        return [r[0] for r in s.execute(text(f"SELECT {column} FROM forge_connection ORDER BY name"))]


def test_rotation_reseals_every_column_in_one_go_and_retires_the_old_key(db):
    with registered_kit_forge():
        cid, hook = _connection(db)
        _connection(db, "another-token-5678", "gl")
    old = secretbox.load_keyring()
    before = _raw(db, "credential_sealed") + _raw(db, "webhook_secret_sealed")
    assert {secretbox.sealed_key_id(v) for v in before} == {old.sealing.id}

    done = secretbox.rotate(db.write)

    assert done.resealed == 4 and done.retired == (old.sealing.id,)
    ring = secretbox.load_keyring()
    assert [k.id for k in ring.keys] == [done.new_key_id] != [old.sealing.id]
    after = _raw(db, "credential_sealed") + _raw(db, "webhook_secret_sealed")
    assert {secretbox.sealed_key_id(v) for v in after} == {done.new_key_id}
    with db.read() as s:
        row = s.get(ForgeConnection, cid)
        assert forges.connection_of(row).token == GOOD_TOKEN
        assert forges.webhook_secret_of(row) == hook
    with pytest.raises(SecretError):  # the retired key is gone: an old copy of a value no longer opens
        unseal(before[0], purpose=f"forge_connection:{cid}:credential")


def test_two_rotations_at_once_leave_every_value_readable(db):
    import threading

    with registered_kit_forge():
        cid, hook = _connection(db)
    done, errors = [], []

    def rotate_once():
        try:
            done.append(secretbox.rotate(db.write))
        except Exception as e:  # noqa: BLE001 — reported below
            errors.append(e)
    threads = [threading.Thread(target=rotate_once) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and len(done) == 3
    ring = secretbox.load_keyring()
    assert len(ring.keys) == 1 and ring.sealing.id == done[-1].new_key_id
    with db.read() as s:
        row = s.get(ForgeConnection, cid)
        assert forges.connection_of(row).token == GOOD_TOKEN and forges.webhook_secret_of(row) == hook


def test_rotation_with_the_environment_reseals_with_its_first_key(db, monkeypatch):
    old, new = _key(), _key()
    monkeypatch.setenv("PREDICTORX_SECRET_KEY", old)
    with registered_kit_forge():
        cid, _ = _connection(db)
    monkeypatch.setenv("PREDICTORX_SECRET_KEY", f"{new},{old}")
    done = secretbox.rotate(db.write)
    assert done.source == "env" and done.resealed == 2
    monkeypatch.setenv("PREDICTORX_SECRET_KEY", new)  # the operator drops the old key
    with db.read() as s:
        assert forges.connection_of(s.get(ForgeConnection, cid)).token == GOOD_TOKEN


def test_server_rotate_key_command(tmp_path):
    """`predictorx server rotate-key` on the state dir's own database, as an operator runs it."""
    home = config.state_dir()
    from predictorx.store.db import Database

    db = Database(config.database_url())
    db.migrate()
    with registered_kit_forge():
        cid, _ = _connection(db)
    db.dispose()
    old = secretbox.load_keyring().sealing.id
    env = {**os.environ, "PREDICTORX_HOME": str(home)}
    p = subprocess.run([sys.executable, "-m", "predictorx", "server", "rotate-key"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    new = secretbox.load_keyring().sealing.id
    assert new != old and f"New key {new}" in p.stdout and "sealed 2 secret(s) again" in p.stdout
    assert GOOD_TOKEN not in p.stdout + p.stderr
    db = Database(config.database_url())
    with db.read() as s:
        assert forges.connection_of(s.get(ForgeConnection, cid)).token == GOOD_TOKEN
    db.dispose()
    # A broken key source is one sentence on stderr, exit 1
    p = subprocess.run([sys.executable, "-m", "predictorx", "server", "rotate-key"],
                       env={**env, "PREDICTORX_SECRET_KEY": "no+pe!"}, capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "not base64" in p.stderr and "Traceback" not in p.stderr
