"""`predictorx login --sso` by the device authorization grant (RFC 8628; issue 28 §1), where the
provider offers it: the server asks the provider for a device code (with its client secret, which
never leaves the server), keeps it sealed behind a random handle only the CLI holds, and answers
the user code and the address to approve it at. The CLI polls with the handle; the server polls
the provider's token endpoint, validates the ID token (signature, issuer, audience, expiry; the
device grant carries no nonce) and answers a personal token once — the handle is then spent.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from ..store.oidc_schema import OidcLogin, OidcProvider
from ..store.schema import utcnow
from . import oidc_discovery, oidc_providers, oidc_signin, secretbox
from .errors import Invalid
from .oidc_tokens import validate_id_token
from .transactions import Transactions

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
MAX_TTL = timedelta(minutes=15)


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def offers_device(provider: OidcProvider) -> bool:
    try:
        return oidc_discovery.endpoint(provider.issuer, "device_authorization_endpoint") is not None
    except oidc_discovery.ProviderUnavailable:
        return False


def start(tx: Transactions, provider_name: str) -> dict[str, Any]:
    with tx.read() as s:
        provider = oidc_providers.named(s, provider_name)
        pid, issuer, client_id, scopes = provider.id, provider.issuer, provider.client_id, provider.scopes
        secret = oidc_providers.client_secret(provider)
    where = oidc_discovery.endpoint(issuer, "device_authorization_endpoint")
    if where is None:
        raise Invalid(f"provider {provider_name!r} offers no device sign-in; `predictorx login --sso` then "
                      "signs in through your browser and this machine's loopback address")
    answer = _post(where, client_id, secret, {"scope": scopes})
    if not isinstance(answer.get("device_code"), str) or not isinstance(answer.get("user_code"), str):
        raise oidc_signin.SignInRefused(f"the provider refused a device sign-in: {answer.get('error', 'no code')}")
    handle = secrets.token_urlsafe(32)
    ttl = min(timedelta(seconds=int(answer.get("expires_in") or 600)), MAX_TTL)
    interval = max(1, min(int(answer.get("interval") or 5), 60))
    with tx.write() as s:
        oidc_signin.forget_old(s)
        row = OidcLogin(provider_id=pid, state_hash=_hash(handle), purpose="device", interval=interval,
                        expires_at=utcnow() + ttl)
        s.add(row)
        s.flush()
        secretbox.seal_into(row, "device_code_sealed", answer["device_code"])
    return {"handle": handle, "user_code": answer["user_code"],
            "verification_uri": str(answer.get("verification_uri") or ""),
            "verification_uri_complete": answer.get("verification_uri_complete"),
            "interval": interval, "expires_in": int(ttl.total_seconds())}


def _post(url: str, client_id: str, secret: str | None, form: dict[str, str]) -> dict[str, Any]:
    import httpx2

    try:
        with oidc_discovery.http_client() as client:
            response = client.post(url, data=form if secret else {**form, "client_id": client_id},
                                   auth=(client_id, secret) if secret else httpx2.USE_CLIENT_DEFAULT)
        data = response.json()
    except (httpx2.HTTPError, ValueError) as e:
        raise oidc_discovery.ProviderUnavailable(f"the provider's device endpoint did not answer "
                                                 f"({type(e).__name__})") from None
    if not isinstance(data, dict):
        raise oidc_discovery.ProviderUnavailable("the provider's device endpoint answered no JSON object")
    return data


def poll(tx: Transactions, handle: str) -> dict[str, Any]:
    """{"status": "pending", "interval": n} until the person approved; then {"status": "done",
    "token": …} once. A refusal (denied, expired, spent) is a sentence."""
    with tx.read() as s:
        row = s.scalar(select(OidcLogin).where(OidcLogin.state_hash == _hash(handle), OidcLogin.purpose == "device"))
        if row is None or row.used_at is not None:
            raise oidc_signin.SignInRefused("this device sign-in is unknown or was used already; run "
                                            "`predictorx login --sso` again")
        if row.expires_at < utcnow():
            raise oidc_signin.SignInRefused("this device sign-in expired; run `predictorx login --sso` again")
        provider = s.get(OidcProvider, row.provider_id)
        assert provider is not None
        pid, issuer, client_id = provider.id, provider.issuer, provider.client_id
        secret, device_code = oidc_providers.client_secret(provider), secretbox.unseal_from(row, "device_code_sealed")
        row_id, interval = row.id, row.interval
    answer = oidc_signin.token_request(issuer, client_id, secret, {"grant_type": DEVICE_GRANT,
                                                                   "device_code": device_code})
    error = answer.get("error")
    if error in ("authorization_pending", "slow_down"):
        return {"status": "pending", "interval": interval + (5 if error == "slow_down" else 0)}
    with tx.write() as s:  # spent, whatever follows: a handle signs in once
        spent = s.get(OidcLogin, row_id, with_for_update=True)
        if spent is None or spent.used_at is not None:
            raise oidc_signin.SignInRefused("this device sign-in was used already")
        spent.used_at = utcnow()
    if error or "id_token" not in answer:
        detail = {"access_denied": "you declined it at the provider", "expired_token": "it expired"}.get(
            str(error), str(error or "no ID token"))
        raise oidc_signin.SignInRefused(f"the provider did not sign you in: {detail}")
    access = answer.get("access_token")
    claims = validate_id_token(answer["id_token"], issuer=issuer, client_id=client_id, nonce=None,
                               access_token=access if isinstance(access, str) else None)
    done = oidc_signin.complete(tx, pid, claims, purpose="device")
    return {"status": "done", "token": done.token}
