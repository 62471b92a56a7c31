"""What an OpenID provider publishes, fetched and kept for a while (issue 28 §1): its discovery
document (`<issuer>/.well-known/openid-configuration`, whose `issuer` must equal the configured
one) and its signing keys (JWKS). Keys are kept until an ID token names a key id the set does not
hold: the set is then fetched again (the provider rotated its keys), at most once a second per
provider, so forged key ids cannot make this server hammer the provider.

The one HTTP client of OpenID sign-in (httpx2: timeouts, no redirects followed) lives here too.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx2
from joserfc.jwk import KeySet

from .errors import ServiceError

DISCOVERY_TTL = 3600.0
JWKS_REFETCH_MIN_INTERVAL = 1.0
TIMEOUT = httpx2.Timeout(10.0, connect=5.0)


class ProviderUnavailable(ServiceError):
    """The provider did not answer, or answered something unusable: not the person's doing."""

    status = 502


@dataclass
class _Entry:
    document: dict[str, Any]
    fetched: float
    keys: KeySet | None = None
    #: When an unknown key id last made the keys be fetched again (at most once a second).
    refetched: float = float("-inf")


_cache: dict[str, _Entry] = {}
_lock = threading.Lock()


def http_client() -> httpx2.Client:
    return httpx2.Client(timeout=TIMEOUT, follow_redirects=False, headers={"Accept": "application/json"})


def get_json(url: str, what: str) -> dict[str, Any]:
    try:
        with http_client() as client:
            response = client.get(url)
    except httpx2.HTTPError as e:
        raise ProviderUnavailable(f"the OpenID provider did not answer ({what}: {type(e).__name__})") from None
    if response.status_code != 200:
        raise ProviderUnavailable(f"the OpenID provider answered {response.status_code} for its {what}")
    try:
        data = response.json()
    except ValueError:
        raise ProviderUnavailable(f"the OpenID provider's {what} is not JSON") from None
    if not isinstance(data, dict):
        raise ProviderUnavailable(f"the OpenID provider's {what} is not a JSON object")
    return data


def metadata(issuer: str, *, refresh: bool = False) -> dict[str, Any]:
    """The provider's discovery document (cached for an hour)."""
    with _lock:
        entry = _cache.get(issuer)
    if entry is not None and not refresh and time.monotonic() - entry.fetched < DISCOVERY_TTL:
        return entry.document
    document = get_json(issuer.rstrip("/") + "/.well-known/openid-configuration", "discovery document")
    if document.get("issuer") != issuer:
        raise ProviderUnavailable(f"the provider at {issuer} names itself {document.get('issuer')!r}; "
                                  "the issuer configured must be exactly the one it publishes")
    for field in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        if not isinstance(document.get(field), str):
            raise ProviderUnavailable(f"the provider's discovery document has no {field}")
    with _lock:
        _cache[issuer] = _Entry(document, time.monotonic())
    return document


def endpoint(issuer: str, name: str) -> str | None:
    value = metadata(issuer).get(name)
    return value if isinstance(value, str) else None


def signing_keys(issuer: str, kid: str | None) -> KeySet:
    """The provider's keys, fetched again when `kid` is not among those held (key rotation)."""
    document = metadata(issuer)
    with _lock:
        entry = _cache[issuer]
        keys, refetched = entry.keys, entry.refetched
    if keys is not None and (kid is None or _has(keys, kid)):
        return keys
    if keys is not None:
        if time.monotonic() - refetched < JWKS_REFETCH_MIN_INTERVAL:
            return keys  # (the token is then refused: its key is not among these)
        with _lock:
            entry.refetched = time.monotonic()
    try:
        fresh = KeySet.import_key_set(get_json(document["jwks_uri"], "signing keys (JWKS)"))  # type: ignore[arg-type]
    except (ValueError, TypeError, KeyError) as e:
        raise ProviderUnavailable(f"the provider's signing keys cannot be read ({type(e).__name__})") from None
    with _lock:
        entry.keys = fresh
    return fresh


def _has(keys: KeySet, kid: str) -> bool:
    return any(k.kid == kid for k in keys.keys)


def forget(issuer: str) -> None:
    """Drop what is kept of a provider (its configuration changed or it was removed)."""
    with _lock:
        _cache.pop(issuer, None)
