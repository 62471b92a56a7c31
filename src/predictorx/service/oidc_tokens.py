"""An ID token checked before anything trusts it (issue 28 §1; OpenID Connect Core §3.1.3.7).

The signature against the provider's published keys (joserfc, Authlib's own JOSE library; an
unknown key id fetches the keys again: key rotation), asymmetric algorithms only (never `none`, never
an HMAC keyed by something public); then the claims through Authlib's `CodeIDToken`: `iss` equal to
the configured issuer, `aud` holding our client id (and `azp` ours where there are several),
`exp` not passed and `iat` present (60 s of clock leeway), and `nonce` equal to the one this
sign-in sent. Any failure is a 401 sentence naming what was wrong, never the token.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import (
    BadSignatureError,
    ExpiredTokenError,
    InvalidClaimError,
    JoseError,
    MissingClaimError,
)

from . import oidc_discovery
from .auth import Unauthorized

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
LEEWAY = 60
MAX_TOKEN_CHARS = 64_000


class IdTokenRefused(Unauthorized):
    """The provider's answer did not prove who signed in."""


def _header(raw: str) -> dict[str, Any]:
    try:
        head = raw.split(".", 1)[0]
        data = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, UnicodeDecodeError):
        raise IdTokenRefused("the ID token is not a signed JWT") from None
    if not isinstance(data, dict):
        raise IdTokenRefused("the ID token is not a signed JWT")
    return data


def validate_id_token(raw: str, *, issuer: str, client_id: str, nonce: str | None,
                      now: float | None = None, access_token: str | None = None) -> dict[str, Any]:
    """The ID token's claims once its signature and claims hold; IdTokenRefused otherwise.
    `nonce` None only for the device grant, which sends none (RFC 8628). With the access token
    issued beside it, an `at_hash` the token carries must match it."""
    if not isinstance(raw, str) or not raw or len(raw) > MAX_TOKEN_CHARS or raw.count(".") != 2:
        raise IdTokenRefused("the provider's answer holds no signed ID token")
    header = _header(raw)
    if header.get("alg") not in ALGORITHMS:
        raise IdTokenRefused(f"the ID token is signed with {header.get('alg')!r}, which this server does not accept")
    kid = header.get("kid") if isinstance(header.get("kid"), str) else None
    keys = oidc_discovery.signing_keys(issuer, kid)
    try:
        token = jwt.decode(raw, keys, algorithms=list(ALGORITHMS))
    except BadSignatureError:
        raise IdTokenRefused("the ID token's signature does not verify against the provider's keys") from None
    except (JoseError, ValueError) as e:
        raise IdTokenRefused(f"the ID token cannot be verified ({type(e).__name__})") from None
    options = {"iss": {"essential": True, "value": issuer},
               "aud": {"essential": True, "value": client_id},
               "sub": {"essential": True}}
    claims = CodeIDToken(token.claims, token.header, options=options,  # type: ignore[arg-type]
                         params={"nonce": nonce, "client_id": client_id, "access_token": access_token})
    try:
        claims.validate(now=int(now if now is not None else time.time()), leeway=LEEWAY)
    except ExpiredTokenError:
        raise IdTokenRefused("the ID token has expired; sign in again") from None
    except (InvalidClaimError, MissingClaimError) as e:
        raise IdTokenRefused(_claim_sentence(e)) from None
    except JoseError as e:
        raise IdTokenRefused(f"the ID token was refused ({type(e).__name__})") from None
    if nonce is not None and claims.get("nonce") != nonce:  # (Authlib checks it too; never without one)
        raise IdTokenRefused("the ID token's nonce is not this sign-in's: it belongs to another sign-in")
    return dict(claims)


def _claim_sentence(error: JoseError) -> str:
    claim = getattr(error, "claim", None) or str(error)
    what = {"iss": "was issued by another provider than the one configured",
            "aud": "was issued to another client (wrong audience)",
            "azp": "was issued to another client (wrong authorized party)",
            "at_hash": "does not belong with the access token issued beside it",
            "nonce": "belongs to another sign-in (its nonce is not this sign-in's)",
            "exp": "has expired",
            "iat": "has no valid issue time",
            "nbf": "is not valid yet",
            "sub": "names nobody (no subject)"}
    for key, sentence in what.items():
        if key == claim or f"'{key}'" in str(error) or f'"{key}"' in str(error):
            return f"the ID token {sentence}"
    return f"the ID token was refused ({type(error).__name__}: {claim})"
