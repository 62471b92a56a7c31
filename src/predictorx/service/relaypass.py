"""The relay pass: what a daemon pushes a task's branch with instead of the forge's credential
(docs/forges.md, "Where a credential lives").

A pass is stateless: its claims — the task, the daemon that runs it, the one forge branch it may
update, the forge connection and repository URL the server named, and when it expires — signed
with HMAC-SHA256. The signing key is derived (HMAC with a purpose label) from the server's own
keys (service/secretbox.py), so every replica sharing `PREDICTORX_SECRET_KEY` accepts the passes of
every other, nothing new is stored, and a key rotation (new key first, the old kept to open) keeps
passes made just before it working. No keyring: nothing is signed or accepted (SecretError, 503).

    pxr1.<base64url(JSON claims)>.<base64url(HMAC-SHA256(derived key, "pxr1." + claims part))>
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Callable

from . import secretbox

PREFIX = "pxr1"
#: Where a task's relay is on this server (the daemon joins it to the server URL it uses).
RELAY_PATH = "/api/daemon/tasks/{task_id}/git"
#: The user name the pass goes with in HTTP Basic (git and smartpush send Basic).
USERNAME = "predictorx-relay"
#: How long a pass opens the relay: a push (or a follow-up's fetch) starts within seconds of the
#: answer that carried it; the daemon asks again for a later one.
VALID_S = 600
_PURPOSE = b"predictorx relay pass v1"
MAX_PASS = 4096

#: The clock passes are made and checked with (tests move it).
clock: Callable[[], float] = time.time


class BadPass(Exception):
    """The pass is missing, garbled, not signed by this server's keys, or expired (a sentence)."""


@dataclass(frozen=True)
class Pass:
    task_id: str
    daemon_id: str
    branch: str
    connection_id: str
    remote_url: str
    expires: int


def relay_path(task_id: str) -> str:
    return RELAY_PATH.format(task_id=task_id)


def _derived(material: bytes) -> bytes:
    return hmac.new(material, _PURPOSE, hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(material: bytes, signed: str) -> bytes:
    return hmac.new(_derived(material), signed.encode(), hashlib.sha256).digest()


def sign(task_id: str, daemon_id: str, branch: str, connection_id: str, remote_url: str,
         *, valid_s: int = VALID_S, keyring: secretbox.Keyring | None = None) -> str:
    ring = keyring or secretbox.load_keyring(create=False)
    claims = {"t": task_id, "d": daemon_id, "b": branch, "c": connection_id, "u": remote_url,
              "e": int(clock()) + valid_s}
    signed = f"{PREFIX}.{_b64(json.dumps(claims, separators=(',', ':')).encode())}"
    return f"{signed}.{_b64(_signature(ring.sealing.material, signed))}"


def verify(token: str, *, keyring: secretbox.Keyring | None = None) -> Pass:
    """The pass's claims when one of this server's keys signed it and it has not expired; else BadPass."""
    parts = token.split(".") if token and len(token) <= MAX_PASS else []
    if len(parts) != 3 or parts[0] != PREFIX:
        raise BadPass("not a relay pass")
    signed = f"{parts[0]}.{parts[1]}"
    try:
        given = _unb64(parts[2])
    except (binascii.Error, ValueError):
        raise BadPass("not a relay pass") from None
    ring = keyring or secretbox.load_keyring(create=False)
    # Every key is tried (no early exit on the first): a rotation's older key still opens.
    good = [hmac.compare_digest(_signature(k.material, signed), given) for k in ring.keys]
    if not any(good):
        raise BadPass("the relay pass is not this server's")
    try:
        c = json.loads(_unb64(parts[1]))
        found = Pass(str(c["t"]), str(c["d"]), str(c["b"]), str(c["c"]), str(c["u"]), int(c["e"]))
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise BadPass("the relay pass is unreadable") from None
    if found.expires < clock():
        raise BadPass("the relay pass has expired; the daemon asks for a new one")
    return found
