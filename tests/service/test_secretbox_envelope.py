"""Envelope encryption of secrets at rest (service/secretbox.py, issue 28 §2): each value has its own
random data key wrapped by the server key (`pxs2`); rotation re-wraps only the data keys and keeps
each value's ciphertext; values sealed before (`pxs1`, the server key directly) still open and are
upgraded to `pxs2` by rotation; a tampered or swapped wrapped key does not open."""

from __future__ import annotations

import base64
import os
import subprocess
import sys

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import select

from predictorx import config
from predictorx.service import forges, secretbox
from predictorx.service.secretbox import SecretError, seal, unseal
from predictorx.store.schema import ForgeConnection, Workspace

from forge_testkit import GOOD_TOKEN, KIND, registered_kit_forge

# Made by the code before envelope encryption (d3e5588, `seal`) with PREDICTORX_SECRET_KEY = bytes 0..31.
LEGACY_KEY = base64.b64encode(bytes(range(32))).decode()
LEGACY_PURPOSE = "forge_connection:1:credential"
LEGACY_VALUE = "pxs1:1faff52d:Th87GEvrYGQRc98xNoIEzrggcsBmgGABzh8Xh5Jluf-erX7q__ItT-OmkW6h1fbFxQ"
LEGACY_PLAIN = "ghp_legacy-token-1234"


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _legacy_seal(plaintext: str, purpose: str, material: bytes) -> str:
    """A value as the code before envelope encryption sealed it (checked against LEGACY_VALUE below)."""
    kid, nonce = secretbox.key_id(material), os.urandom(12)
    box = AESGCM(material).encrypt(nonce, plaintext.encode(), f"pxs1\0{kid}\0{purpose}".encode())
    return f"pxs1:{kid}:{base64.urlsafe_b64encode(nonce + box).decode().rstrip('=')}"


def _data_key(sealed: str, purpose: str, material: bytes) -> bytes:
    """Unwrap a pxs2 value's data key by hand, with the server key (what the format promises)."""
    _, kid, wrapped, _ = sealed.split(":")
    raw = _unb64(wrapped)
    return AESGCM(material).decrypt(raw[:12], raw[12:], f"pxs2\0wrap\0{kid}\0{purpose}".encode())


def test_each_value_has_its_own_data_key_wrapped_by_the_server_key():
    purpose = "forge_connection:1:credential"
    one, two = seal("same-token-value", purpose=purpose), seal("same-token-value", purpose=purpose)
    ring = secretbox.load_keyring()
    parts_one, parts_two = one.split(":"), two.split(":")
    assert parts_one[:2] == parts_two[:2] == ["pxs2", ring.sealing.id] and len(parts_one) == len(parts_two) == 4
    assert parts_one[2] != parts_two[2] and parts_one[3] != parts_two[3]  # another wrapped key, another ciphertext
    keys = [_data_key(v, purpose, ring.sealing.material) for v in (one, two)]
    assert keys[0] != keys[1] and {len(k) for k in keys} == {32} and ring.sealing.material not in keys
    body = _unb64(parts_one[3])  # the value is encrypted with its data key, the purpose bound in
    assert AESGCM(keys[0]).decrypt(body[:12], body[12:], f"pxs2\0value\0{purpose}".encode()) == b"same-token-value"
    assert unseal(one, purpose=purpose) == unseal(two, purpose=purpose) == "same-token-value"


@pytest.mark.parametrize("damage", ["flip", "swap", "other_purpose", "other_kid", "missing"])
def test_a_tampered_or_swapped_wrapped_key_does_not_open(damage, monkeypatch):
    first, second = secretbox.new_key(), secretbox.new_key()
    monkeypatch.setenv("PREDICTORX_SECRET_KEY", f"{secretbox.encode_key(first)},{secretbox.encode_key(second)}")
    sealed = seal("the-token-abc", purpose="p:1:f")
    version, kid, wrapped, body = sealed.split(":")
    if damage == "flip":
        raw = bytearray(_unb64(wrapped))
        raw[20] ^= 1
        wrapped = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    elif damage == "swap":  # the wrapped key of another value of the same row and field
        wrapped = seal("the-token-abc", purpose="p:1:f").split(":")[2]
    elif damage == "other_purpose":  # a wrapped key made for another row, its data key the right one
        wrapped = secretbox._wrap(_data_key(sealed, "p:1:f", first), "p:2:f", secretbox.Key(kid, first)).split(":")[2]
    elif damage == "other_kid":  # claimed to be wrapped by the ring's other key
        kid = secretbox.key_id(second)
    forged = f"{version}:{kid}:{body}" if damage == "missing" else f"{version}:{kid}:{wrapped}:{body}"
    with pytest.raises(SecretError) as e:
        unseal(forged, purpose="p:1:f")
    assert e.value.status == 503 and "does not open" in e.value.message and "the-token" not in e.value.message
    assert unseal(sealed, purpose="p:1:f") == "the-token-abc"


def test_a_value_sealed_before_envelope_encryption_still_opens(monkeypatch):
    monkeypatch.setenv("PREDICTORX_SECRET_KEY", LEGACY_KEY)
    assert secretbox.sealed_version(LEGACY_VALUE) == "pxs1" and secretbox.sealed_key_id(LEGACY_VALUE) == "1faff52d"
    assert unseal(LEGACY_VALUE, purpose=LEGACY_PURPOSE) == LEGACY_PLAIN
    with pytest.raises(SecretError, match="another row or field"):
        unseal(LEGACY_VALUE, purpose="forge_connection:2:credential")
    made = _legacy_seal("x-token", LEGACY_PURPOSE, base64.b64decode(LEGACY_KEY))  # the test's helper is faithful
    assert unseal(made, purpose=LEGACY_PURPOSE) == "x-token"


def _connections(db, count: int = 2) -> list[str]:
    with registered_kit_forge(), db.write() as s:
        ws = s.query(Workspace).first() or Workspace(name="W", slug="w")
        s.add(ws)
        s.flush()
        return [forges.add_connection(s, ws.id, None, kind=KIND, name=f"c{i}", base_url="https://forge.test",
                                      credential=GOOD_TOKEN)[0].id for i in range(count)]


def _sealed(db) -> dict[tuple[str, str], str]:
    with db.read() as s:
        return {(r.id, col): getattr(r, col) for r in s.scalars(select(ForgeConnection))
                for col in ("credential_sealed", "webhook_secret_sealed")}


def test_rotation_rewraps_the_data_keys_and_keeps_every_ciphertext(db):
    _connections(db)
    old = secretbox.load_keyring().sealing
    before = _sealed(db)

    done = secretbox.rotate(db.write)

    assert done.resealed == 4 and done.upgraded == 0 and done.retired == (old.id,)
    after = _sealed(db)
    assert after.keys() == before.keys()
    for where, value in after.items():
        was, now = before[where].split(":"), value.split(":")
        assert (was[0], was[1]) == ("pxs2", old.id) and (now[0], now[1]) == ("pxs2", done.new_key_id)
        assert now[3] == was[3]  # the value's ciphertext is untouched
        assert now[2] != was[2]  # its data key is wrapped again, under the new key
        purpose = f"forge_connection:{where[0]}:{where[1].removesuffix('_sealed')}"
        assert _data_key(value, purpose, secretbox.load_keyring().sealing.material) == \
            _data_key(before[where], purpose, old.material)
    with db.read() as s:
        assert {forges.connection_of(r).token for r in s.scalars(select(ForgeConnection))} == {GOOD_TOKEN}


def test_rotation_upgrades_values_sealed_before_envelope_encryption(db):
    ids = _connections(db)
    material = secretbox.load_keyring().sealing.material
    with db.write() as s:  # the first connection's token as a database from before holds it
        row = s.get(ForgeConnection, ids[0])
        row.credential_sealed = _legacy_seal("legacy-token-5678", secretbox.purpose_for(row, "credential_sealed"),
                                             material)
    with db.read() as s:
        assert forges.connection_of(s.get(ForgeConnection, ids[0])).token == "legacy-token-5678"

    done = secretbox.rotate(db.write)

    assert done.resealed == 4 and done.upgraded == 1
    assert {v.split(":")[0] for v in _sealed(db).values()} == {"pxs2"}
    assert {secretbox.sealed_key_id(v) for v in _sealed(db).values()} == {done.new_key_id}
    with db.read() as s:
        assert forges.connection_of(s.get(ForgeConnection, ids[0])).token == "legacy-token-5678"
        assert forges.connection_of(s.get(ForgeConnection, ids[1])).token == GOOD_TOKEN


def test_rotation_with_the_environment_upgrades_pxs1_values_under_the_current_key(db, database_url, monkeypatch):
    """With PREDICTORX_SECRET_KEY unchanged, pxs2 values under its first key are left as they are and
    pxs1 values under that same key are still upgraded; `server rotate-key` says how many of each."""
    monkeypatch.setenv("PREDICTORX_SECRET_KEY", LEGACY_KEY)
    ids = _connections(db)
    with db.write() as s:
        row = s.get(ForgeConnection, ids[1])
        row.webhook_secret_sealed = _legacy_seal("legacy-hook", secretbox.purpose_for(row, "webhook_secret_sealed"),
                                                 base64.b64decode(LEGACY_KEY))
    before = _sealed(db)
    env = {**os.environ, "PREDICTORX_HOME": str(config.state_dir()), "PREDICTORX_DATABASE_URL": database_url}
    p = subprocess.run([sys.executable, "-m", "predictorx", "server", "rotate-key"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "Sealed 1 secret(s) again" in p.stdout and "0 data key(s) re-wrapped" in p.stdout
    assert "1 older pxs1 value(s) re-encrypted as pxs2" in p.stdout
    assert GOOD_TOKEN not in p.stdout + p.stderr and "legacy-hook" not in p.stdout + p.stderr
    after = _sealed(db)
    assert {k: v for k, v in after.items() if k != (ids[1], "webhook_secret_sealed")} == \
        {k: v for k, v in before.items() if k != (ids[1], "webhook_secret_sealed")}
    assert after[(ids[1], "webhook_secret_sealed")].startswith("pxs2:")
    with db.read() as s:
        assert forges.webhook_secret_of(s.get(ForgeConnection, ids[1])) == "legacy-hook"


def test_a_dry_run_counts_and_checks_every_value_and_changes_nothing(db, database_url):
    ids = _connections(db)
    with db.write() as s:
        row = s.get(ForgeConnection, ids[0])
        row.credential_sealed = _legacy_seal("legacy-token-5678", secretbox.purpose_for(row, "credential_sealed"),
                                             secretbox.load_keyring().sealing.material)
    key_file = config.state_dir() / "secret.key"
    key_text, before = key_file.read_text(), _sealed(db)
    env = {**os.environ, "PREDICTORX_HOME": str(config.state_dir()), "PREDICTORX_DATABASE_URL": database_url}

    def dry_run() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "predictorx", "server", "rotate-key", "--dry-run"], env=env,
                              capture_output=True, text=True, timeout=120)
    p = dry_run()
    assert p.returncode == 0, p.stderr
    assert "Dry run, nothing changed: 4 secret(s) would be sealed again" in p.stdout
    assert "3 data key(s) re-wrapped" in p.stdout and "1 older pxs1 value(s)" in p.stdout
    assert "legacy-token" not in p.stdout + p.stderr and GOOD_TOKEN not in p.stdout + p.stderr
    assert key_file.read_text() == key_text and _sealed(db) == before
    with db.write() as s:  # a value that would stop the rotation is found by the dry run
        row = s.get(ForgeConnection, ids[1])
        version, kid, wrapped, body = row.webhook_secret_sealed.split(":")
        row.webhook_secret_sealed = f"{version}:{kid}:{before[(ids[0], 'webhook_secret_sealed')].split(':')[2]}:{body}"
    p = dry_run()
    assert p.returncode == 1 and "does not open" in p.stderr and "Traceback" not in p.stderr
    assert key_file.read_text() == key_text
