"""Secrets at rest: AES-256-GCM with a server key, bound to the row and field they belong to.

`seal(plaintext, purpose=…)` gives `pxs1:<key id>:<base64url(nonce ‖ ciphertext ‖ tag)>`; the
purpose (e.g. "forge_connection:<id>:credential") is the associated data, so a sealed value
copied into another row or field does not open there. Any changed byte fails the tag.

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
VERSION = "pxs1"
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


def _aad(purpose: str, kid: str) -> bytes:
    return f"{VERSION}\0{kid}\0{purpose}".encode()


def seal(plaintext: str, *, purpose: str, keyring: Keyring | None = None) -> str:
    if not purpose:
        raise ValueError("a sealed value needs a purpose (what row and field it belongs to)")
    ring = keyring or load_keyring()
    key = ring.sealing
    nonce = os.urandom(NONCE_BYTES)
    box = AESGCM(key.material).encrypt(nonce, plaintext.encode(), _aad(purpose, key.id))
    return f"{VERSION}:{key.id}:{base64.urlsafe_b64encode(nonce + box).decode().rstrip('=')}"


def sealed_key_id(sealed: str) -> str | None:
    """The key id a sealed value names, or None for text that is not a sealed value."""
    parts = sealed.split(":", 2)
    return parts[1] if len(parts) == 3 and parts[0] == VERSION else None


def unseal(sealed: str, *, purpose: str, keyring: Keyring | None = None) -> str:
    """The plaintext; SecretError (a sentence, no secret in it) when it cannot be opened."""
    kid = sealed_key_id(sealed or "")
    if kid is None:
        raise SecretError(f"the stored secret for {purpose} is not a sealed value (damaged or never sealed)")
    ring = keyring or load_keyring(create=False)
    key = ring.find(kid)
    if key is None:
        raise SecretError(f"the stored secret for {purpose} was sealed with key {kid}, which this server does not "
                          f"have ({'the environment' if ring.source == 'env' else ring.source}); give every "
                          f"replica the same {ENV_KEY}, or set the secret again")
    raw = sealed.split(":", 2)[2]
    try:
        data = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
        plain = AESGCM(key.material).decrypt(data[:NONCE_BYTES], data[NONCE_BYTES:], _aad(purpose, kid))
    except (binascii.Error, ValueError, InvalidTag):
        raise SecretError(f"the stored secret for {purpose} does not open: it was changed, or it belongs to "
                          "another row or field") from None
    return plain.decode()


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
               keep: Callable[[str | None], bool] = lambda kid: False) -> int:
    """Open every sealed value with `old` and seal it again with `new`'s sealing key, rows locked
    for the transaction (`FOR UPDATE` on PostgreSQL). Values whose key id `keep` accepts are left.
    How many values were sealed again."""
    count = 0
    for model, column in sealed_columns():
        rows: list[Any] = list(session.scalars(select(model).with_for_update()))
        for row in rows:
            value = getattr(row, column)
            if value is None or keep(sealed_key_id(value)):
                continue
            seal_into(row, column, unseal_from(row, column, old), new)
            count += 1
    session.flush()
    return count


@dataclass(frozen=True)
class Rotation:
    new_key_id: str
    resealed: int
    retired: tuple[str, ...]
    source: str


def rotate(open_write: Callable[[], AbstractContextManager[Session]]) -> Rotation:
    """`predictorx server rotate-key` for a key file: add a new key (the old ones still open), re-seal
    every sealed column with it in one transaction, then retire the old keys. A crash between the
    steps leaves a ring that opens everything. With PREDICTORX_SECRET_KEY the operator holds the
    keys: put the new one first, run this (it re-seals with the first), then drop the old ones.
    `open_write()` is a context manager giving a write session (Database.write)."""
    ring = load_keyring()
    if ring.source == "env":
        with open_write() as session:
            count = reseal_all(session, ring, ring, keep=lambda kid: kid == ring.sealing.id)
        return Rotation(ring.sealing.id, count, tuple(k.id for k in ring.keys[1:]), "env")
    with _rotation_lock():  # two rotations at once must not retire each other's new key
        return _rotate_file(open_write)


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
    count = 0
    for _ in range(5):  # a value sealed by a running server mid-rotation is caught by the next pass
        with open_write() as session:
            done = reseal_all(session, grown, grown, keep=lambda kid: kid == fresh.id)
        count += done
        if not done:
            break
    write_key_file((fresh,))
    return Rotation(fresh.id, count, tuple(k.id for k in ring.keys), ring.source)
