"""Secrets at rest: envelope encryption with AES-256-GCM — a data key per value, wrapped by a
server key — bound to the row and field the value belongs to.

`seal(plaintext, purpose=…)` makes a fresh random 256-bit data key, encrypts the value with it and
wraps the data key with the server's sealing key, giving
`pxs2:<key id>:<base64url(wrapped data key)>:<base64url(nonce ‖ ciphertext ‖ tag)>`, where the
wrapped data key is itself `nonce ‖ AES-GCM(server key, data key) ‖ tag`. The purpose (e.g.
"forge_connection:<id>:credential") is the associated data of both encryptions (the wrapping also
binds the key id), so a sealed value, or only its wrapped key, copied into another row or field
does not open there. Any changed byte fails a tag.

Why envelope: rotating the server key re-wraps only each value's small data key; the ciphertext of
the value stays as it is (`rewrap`). And the server key is then only a key-encryption key, which a
KMS or HSM could hold later (wrap/unwrap calls) without changing the stored values.

Values sealed before (`pxs1:<key id>:<nonce ‖ ciphertext ‖ tag>`, the value encrypted directly with
the server key) still open, and `predictorx server rotate-key` re-encrypts them as `pxs2`.

The keyring: PREDICTORX_SECRET_KEY (one or more base64 32-byte keys, comma-separated, the first
seals) — what several server replicas on one PostgreSQL database must use, so they share keys —
else `<state dir>/secret.key` (the same, one key per line), created 0600 on first use. Every key
in the ring opens; the key id in a sealed value says which. It is re-read on each use, so a key
rotated by `predictorx server rotate-key` (another process) is seen at once.

By convention a sealed column's name ends in `_sealed` and its row's primary key plus the column's
name make the purpose (`purpose_for`); `reseal_all` finds every such column through the schema,
so a new sealed column (per-agent secrets, issue 28) is rotated without a line here.

Nothing here logs a plaintext, a key or a sealed value.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import select
from sqlalchemy.orm import Session

from .. import config
from .errors import ServiceError

ENV_KEY = "PREDICTORX_SECRET_KEY"
KEY_FILE = "secret.key"
VERSION = "pxs2"  # envelope: a wrapped data key per value
LEGACY_VERSION = "pxs1"  # before: the value sealed directly with the server key (opens; rotation upgrades it)
NONCE_BYTES = 12
SEALED_SUFFIX = "_sealed"


class SecretError(ServiceError):
    """A secret that cannot be sealed or opened with this server's keys. Not the caller's input:
    the server's configuration (a missing or different key) or a damaged value; the message says
    which, and never carries the secret."""

    status = 503


@dataclass(frozen=True)
class Key:
    id: str
    material: bytes


@dataclass(frozen=True)
class Keyring:
    """Keys, newest first: the first seals, every one opens. `source` says where they came from."""

    keys: tuple[Key, ...]
    source: str

    @property
    def sealing(self) -> Key:
        return self.keys[0]

    def find(self, key_id: str) -> Key | None:
        return next((k for k in self.keys if k.id == key_id), None)


def key_id(material: bytes) -> str:
    """A key's short fingerprint (what a sealed value names): 8 hex digits of its SHA-256."""
    return hashlib.sha256(b"predictorx-key-id\0" + material).hexdigest()[:8]


def new_key() -> bytes:
    return AESGCM.generate_key(bit_length=256)


def encode_key(material: bytes) -> str:
    return base64.b64encode(material).decode()


def _parse_keys(text: str, where: str) -> tuple[Key, ...]:
    keys = []
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    for n, entry in enumerate((e.strip() for e in ",".join(lines).split(",") if e.strip()), 1):
        try:
            material = base64.b64decode(entry, validate=True)
        except (binascii.Error, ValueError):
            raise SecretError(f"{where}: key {n} is not base64; a key is 32 random bytes in base64 "
                              "(`openssl rand -base64 32`)") from None
        if len(material) != 32:
            raise SecretError(f"{where}: key {n} is {len(material)} bytes; AES-256 needs 32 "
                              "(`openssl rand -base64 32`)")
        keys.append(Key(key_id(material), material))
    if not keys:
        raise SecretError(f"{where} holds no key; a key is 32 random bytes in base64 (`openssl rand -base64 32`)")
    return tuple(keys)


def key_file() -> Path:
    return config.state_dir() / KEY_FILE


def _write_private(path: Path, text: str, *, replace: bool) -> bool:
    """Write `text` to `path` 0600 through a temporary file. `replace=False`: only if `path` does
    not exist yet (two processes starting at once agree on one key); False when it did."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if replace:
            os.replace(tmp, path)
            return True
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        tmp.unlink(missing_ok=True)


def _file_text(keys: tuple[Key, ...]) -> str:
    return ("# Predictor X secret keys (docs/forges.md, key rotation): newest first, one base64 key a line.\n"
            + "".join(encode_key(k.material) + "\n" for k in keys))


def load_keyring(*, create: bool = True) -> Keyring:
    """The server's keys: the environment's, else the state dir's file (made on first use)."""
    env = os.environ.get(ENV_KEY, "").strip()
    if env:
        return Keyring(_parse_keys(env, ENV_KEY), "env")
    path = key_file()
    if not path.exists():
        if not create:
            raise SecretError(f"no secret key yet ({path} does not exist and {ENV_KEY} is not set)")
        _write_private(path, _file_text((Key("", new_key()),)), replace=False)
    config.private_file(path)
    return Keyring(_parse_keys(path.read_text(), str(path)), str(path))


def write_key_file(keys: tuple[Key, ...]) -> None:
    _write_private(key_file(), _file_text(keys), replace=True)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _legacy_aad(purpose: str, kid: str) -> bytes:
    return f"{LEGACY_VERSION}\0{kid}\0{purpose}".encode()


def _wrap_aad(purpose: str, kid: str) -> bytes:
    return f"{VERSION}\0wrap\0{kid}\0{purpose}".encode()


def _value_aad(purpose: str) -> bytes:  # (no key id: the ciphertext outlives a rotation)
    return f"{VERSION}\0value\0{purpose}".encode()


def _encrypt(key: bytes, plaintext: bytes, aad: bytes) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(key).encrypt(nonce, plaintext, aad)


def _decrypt(key: bytes, data: bytes, aad: bytes) -> bytes:
    """ValueError or InvalidTag when `data` is damaged or bound to something else."""
    return AESGCM(key).decrypt(data[:NONCE_BYTES], data[NONCE_BYTES:], aad)


def _wrap(data_key: bytes, purpose: str, key: Key) -> str:
    return f"{VERSION}:{key.id}:{_b64(_encrypt(key.material, data_key, _wrap_aad(purpose, key.id)))}"


def seal(plaintext: str, *, purpose: str, keyring: Keyring | None = None) -> str:
    if not purpose:
        raise ValueError("a sealed value needs a purpose (what row and field it belongs to)")
    ring = keyring or load_keyring()
    data_key = AESGCM.generate_key(bit_length=256)
    body = _encrypt(data_key, plaintext.encode(), _value_aad(purpose))
    return f"{_wrap(data_key, purpose, ring.sealing)}:{_b64(body)}"


def sealed_version(sealed: str) -> str | None:
    """"pxs2" (envelope), "pxs1" (sealed before envelope encryption), or None (not a sealed value)."""
    version = sealed.split(":", 1)[0]
    return version if version in (VERSION, LEGACY_VERSION) and sealed.count(":") >= 2 else None


def sealed_key_id(sealed: str) -> str | None:
    """The key id a sealed value names, or None for text that is not a sealed value."""
    return sealed.split(":", 2)[1] if sealed_version(sealed) else None


def _key_for(sealed: str, purpose: str, ring: Keyring | None) -> tuple[str, Key]:
    version, kid = sealed_version(sealed or ""), sealed_key_id(sealed or "")
    if version is None or kid is None:
        raise SecretError(f"the stored secret for {purpose} is not a sealed value (damaged or never sealed)")
    ring = ring or load_keyring(create=False)
    key = ring.find(kid)
    if key is None:
        raise SecretError(f"the stored secret for {purpose} was sealed with key {kid}, which this server does not "
                          f"have ({'the environment' if ring.source == 'env' else ring.source}); give every "
                          f"replica the same {ENV_KEY}, or set the secret again")
    return version, key


def _not_open(purpose: str) -> SecretError:
    return SecretError(f"the stored secret for {purpose} does not open: it was changed, or it belongs to "
                       "another row or field")


def _data_key(sealed: str, purpose: str, key: Key) -> tuple[bytes, str]:
    """A pxs2 value's data key, unwrapped with `key`, and its ciphertext part (base64url) as stored."""
    parts = sealed.split(":")
    if len(parts) != 4:
        raise _not_open(purpose)
    try:
        return _decrypt(key.material, _unb64(parts[2]), _wrap_aad(purpose, key.id)), parts[3]
    except (binascii.Error, ValueError, InvalidTag):
        raise _not_open(purpose) from None


def unseal(sealed: str, *, purpose: str, keyring: Keyring | None = None) -> str:
    """The plaintext; SecretError (a sentence, no secret in it) when it cannot be opened."""
    version, key = _key_for(sealed, purpose, keyring)
    try:
        if version == LEGACY_VERSION:
            plain = _decrypt(key.material, _unb64(sealed.split(":", 2)[2]), _legacy_aad(purpose, key.id))
        else:
            data_key, body = _data_key(sealed, purpose, key)
            plain = _decrypt(data_key, _unb64(body), _value_aad(purpose))
    except (binascii.Error, ValueError, InvalidTag):
        raise _not_open(purpose) from None
    return plain.decode()


def rewrap(sealed: str, *, purpose: str, old: Keyring, new: Keyring) -> str:
    """The same value under `new`'s sealing key. A pxs2 value keeps its ciphertext: only its data key
    is unwrapped with `old` and wrapped again (the value itself is not decrypted). A pxs1 value is
    opened and sealed afresh as pxs2. SecretError as `unseal` when it does not open."""
    version, key = _key_for(sealed, purpose, old)
    if version == LEGACY_VERSION:
        return seal(unseal(sealed, purpose=purpose, keyring=old), purpose=purpose, keyring=new)
    data_key, body = _data_key(sealed, purpose, key)
    return f"{_wrap(data_key, purpose, new.sealing)}:{body}"


# -- sealed columns: purpose, and re-sealing them all -------------------------------------------

def purpose_for(row: object, column: str) -> str:
    """"<table>:<primary key>:<field>", e.g. "forge_connection:3f…:credential" for the column
    `credential_sealed` (the row's primary key must be set before sealing)."""
    from sqlalchemy import inspect as sa_inspect

    mapper = sa_inspect(type(row))
    key = ":".join(str(getattr(row, c.key)) for c in mapper.primary_key)
    if not key or "None" in key.split(":"):
        raise ValueError("seal a column only once its row has its primary key")
    return f"{mapper.local_table.name}:{key}:{column.removesuffix(SEALED_SUFFIX)}"


def seal_into(row: object, column: str, plaintext: str, keyring: Keyring | None = None) -> None:
    setattr(row, column, seal(plaintext, purpose=purpose_for(row, column), keyring=keyring))


def unseal_from(row: object, column: str, keyring: Keyring | None = None) -> str:
    return unseal(getattr(row, column), purpose=purpose_for(row, column), keyring=keyring)


def sealed_columns() -> Iterator[tuple[type, str]]:
    """(model, column attribute) of every column named `…_sealed` in the schema."""
    from ..store.schema import Base

    for mapper in Base.registry.mappers:
        for attr in mapper.column_attrs:
            if attr.key.endswith(SEALED_SUFFIX):
                yield mapper.class_, attr.key


def reseal_all(session: Session, old: Keyring, new: Keyring,
               keep: Callable[[str | None], bool] = lambda kid: False) -> tuple[int, int]:
    """Re-wrap every sealed value's data key (opened with `old`) under `new`'s sealing key, rows
    locked for the transaction (`FOR UPDATE` on PostgreSQL); pxs1 values are sealed again as pxs2.
    pxs2 values whose key id `keep` accepts are left. (How many were re-wrapped, how many of
    those were pxs1 values re-encrypted.)"""
    count = upgraded = 0
    for model, column in sealed_columns():
        rows: list[Any] = list(session.scalars(select(model).with_for_update()))
        for row in rows:
            value = getattr(row, column)
            if value is None or (sealed_version(value) == VERSION and keep(sealed_key_id(value))):
                continue
            upgraded += sealed_version(value) == LEGACY_VERSION
            setattr(row, column, rewrap(value, purpose=purpose_for(row, column), old=old, new=new))
            count += 1
    session.flush()
    return count, upgraded


@dataclass(frozen=True)
class Rotation:
    """`resealed`: values re-wrapped under `new_key_id` (their ciphertext kept), of which `upgraded`
    were pxs1 values re-encrypted as pxs2."""

    new_key_id: str
    resealed: int
    retired: tuple[str, ...]
    source: str
    upgraded: int = 0
    dry_run: bool = False

    def report(self) -> str:
        """What `server rotate-key` says it did: counts and key ids, never a secret."""
        how = (f"{self.resealed - self.upgraded} data key(s) re-wrapped, their ciphertexts unchanged; "
               f"{self.upgraded} older pxs1 value(s) re-encrypted as pxs2")
        if self.dry_run:
            return (f"Dry run, nothing changed: {self.resealed} secret(s) would be sealed again ({how}) under "
                    f"{'key ' + self.new_key_id if self.source == 'env' else 'a new key'}, and every one of "
                    f"them opens; key(s) retired: {', '.join(self.retired) or 'none'}.")
        if self.source == "env":
            old = ", ".join(self.retired) or "none"
            return (f"Sealed {self.resealed} secret(s) again with key {self.new_key_id}, the first in "
                    f"{ENV_KEY} ({how}). Older keys ({old}) are no longer used: remove them from "
                    f"{ENV_KEY} on every replica and restart it.")
        return (f"New key {self.new_key_id} in {self.source}; sealed {self.resealed} secret(s) again ({how}); "
                f"retired {', '.join(self.retired) or 'no older key'}.")


def rotate(open_write: Callable[[], AbstractContextManager[Session]]) -> Rotation:
    """`predictorx server rotate-key` for a key file: add a new key (the old ones still open), re-wrap
    every sealed value's data key with it in one transaction, then retire the old keys. A crash
    between the steps leaves a ring that opens everything. With PREDICTORX_SECRET_KEY the operator
    holds the keys: put the new one first, run this (it re-wraps with the first), then drop the old
    ones. `open_write()` is a context manager giving a write session (Database.write)."""
    ring = load_keyring()
    if ring.source == "env":
        with open_write() as session:
            count, upgraded = reseal_all(session, ring, ring, keep=lambda kid: kid == ring.sealing.id)
        return Rotation(ring.sealing.id, count, tuple(k.id for k in ring.keys[1:]), "env", upgraded)
    with _rotation_lock():  # two rotations at once must not retire each other's new key
        return _rotate_file(open_write)


def rotation_plan(open_read: Callable[[], AbstractContextManager[Session]]) -> Rotation:
    """What `rotate` would do now (`server rotate-key --dry-run`), changing nothing: how many values it
    would re-wrap and upgrade, each checked to open with this server's keys (a value that does not
    is a SecretError, as the rotation itself would meet it)."""
    ring = load_keyring(create=False)
    env = ring.source == "env"
    count = upgraded = 0
    with open_read() as session:
        for model, column in sealed_columns():
            rows: list[Any] = list(session.scalars(select(model)))
            for row in rows:
                value = getattr(row, column)
                if value is None or (env and sealed_version(value) == VERSION
                                     and sealed_key_id(value) == ring.sealing.id):
                    continue
                rewrap(value, purpose=purpose_for(row, column), old=ring, new=ring)  # (only: does it open?)
                count, upgraded = count + 1, upgraded + (sealed_version(value) == LEGACY_VERSION)
    retired = ring.keys[1:] if env else ring.keys
    return Rotation(ring.sealing.id, count, tuple(k.id for k in retired), ring.source, upgraded, dry_run=True)


@contextmanager
def _rotation_lock() -> Iterator[None]:
    import fcntl

    fd = os.open(key_file().with_name(KEY_FILE + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (closing releases the lock)


def _rotate_file(open_write: Callable[[], AbstractContextManager[Session]]) -> Rotation:
    ring = load_keyring()
    fresh = Key(key_id(material := new_key()), material)
    grown = Keyring((fresh, *ring.keys), ring.source)
    write_key_file(grown.keys)
    count = upgraded = 0
    for _ in range(5):  # a value sealed by a running server mid-rotation is caught by the next pass
        with open_write() as session:
            done, newer = reseal_all(session, grown, grown, keep=lambda kid: kid == fresh.id)
        count, upgraded = count + done, upgraded + newer
        if not done:
            break
    write_key_file((fresh,))
    return Rotation(fresh.id, count, tuple(k.id for k in ring.keys), ring.source, upgraded)
