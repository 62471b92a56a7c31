"""ID tokens from the real provider checked by service/oidc_tokens.py (issue 28 §1): a genuine
one passes; a tampered one, one for another client (wrong audience), an expired one and one from
another sign-in (its nonce) are refused; after the provider rotates its signing key the keys are
fetched again and the new token passes."""

from __future__ import annotations

import base64
import json
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from authlib.oauth2.rfc7636 import create_s256_code_challenge

from predictorx.service import oidc_discovery
from predictorx.service.oidc_tokens import LEEWAY, IdTokenRefused, validate_id_token

from .standin import OidcStandin

BASE = "http://testserver"


def id_token_for(provider: OidcStandin, client: dict, login: str, nonce: str) -> str:
    """What a relying party gets from the provider's token endpoint after `login` signed in."""
    verifier = secrets.token_urlsafe(48)
    url = f"{provider.issuer}/auth?" + urlencode({
        "response_type": "code", "client_id": client["client_id"], "redirect_uri": f"{BASE}/auth/oidc/callback",
        "scope": "openid email profile groups", "state": secrets.token_urlsafe(16), "nonce": nonce,
        "code_challenge": create_s256_code_challenge(verifier), "code_challenge_method": "S256"})
    back = provider.follow(url, login, stop_at=BASE)
    code = parse_qs(urlsplit(back).query)["code"][0]
    r = httpx2.post(f"{provider.issuer}/token", auth=(client["client_id"], client["client_secret"]), timeout=30,
                    data={"grant_type": "authorization_code", "code": code, "code_verifier": verifier,
                          "redirect_uri": f"{BASE}/auth/oidc/callback"})
    assert r.status_code == 200, r.text
    return r.json()["id_token"]


@pytest.fixture
def ours(oidc_provider: OidcStandin) -> dict:
    oidc_discovery.forget(oidc_provider.issuer)
    return oidc_provider.register(BASE)


def check(provider: OidcStandin, client: dict, token: str, nonce: str, **kw) -> dict:
    return validate_id_token(token, issuer=provider.issuer, client_id=client["client_id"], nonce=nonce, **kw)


def _claims(token: str) -> dict:
    body = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))


def test_a_genuine_id_token_passes(oidc_provider, ours):
    token = id_token_for(oidc_provider, ours, "alice", "n-1")
    claims = check(oidc_provider, ours, token, "n-1")
    assert claims["sub"] == "alice" and claims["groups"] == ["eng", "leads"] and claims["email_verified"] is True


def test_a_tampered_id_token_is_refused(oidc_provider, ours):
    head, body, signature = id_token_for(oidc_provider, ours, "bob", "n-2").split(".")
    claims = _claims(f"{head}.{body}.{signature}")
    claims["sub"] = "alice"  # bob claims to be alice
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    with pytest.raises(IdTokenRefused, match="signature does not verify"):
        check(oidc_provider, ours, f"{head}.{forged}.{signature}", "n-2")
    flipped = signature[:-4] + ("AAAA" if not signature.endswith("AAAA") else "BBBB")
    with pytest.raises(IdTokenRefused, match="signature"):
        check(oidc_provider, ours, f"{head}.{body}.{flipped}", "n-2")
    unsigned = base64.urlsafe_b64encode(b'{"alg":"none"}').decode().rstrip("=")
    with pytest.raises(IdTokenRefused, match="does not accept"):
        check(oidc_provider, ours, f"{unsigned}.{body}.", "n-2")


def test_a_token_for_another_client_is_refused(oidc_provider, ours):
    other = oidc_provider.register(BASE)  # another relying party of the same provider
    token = id_token_for(oidc_provider, other, "alice", "n-3")
    with pytest.raises(IdTokenRefused, match="wrong audience"):
        check(oidc_provider, ours, token, "n-3")


def test_an_expired_token_is_refused(oidc_provider, ours):
    token = id_token_for(oidc_provider, ours, "alice", "n-4")
    exp = _claims(token)["exp"]
    assert check(oidc_provider, ours, token, "n-4", now=exp + LEEWAY - 5)  # within the leeway
    with pytest.raises(IdTokenRefused, match="expired"):
        check(oidc_provider, ours, token, "n-4", now=exp + LEEWAY + 1)


def test_a_token_from_another_sign_in_is_refused(oidc_provider, ours):
    earlier = id_token_for(oidc_provider, ours, "alice", "earlier-nonce")
    with pytest.raises(IdTokenRefused, match="nonce"):
        check(oidc_provider, ours, earlier, "this-sign-ins-nonce")


def test_rotated_keys_are_fetched_again(oidc_provider, ours):
    before = id_token_for(oidc_provider, ours, "alice", "n-5")
    check(oidc_provider, ours, before, "n-5")  # the keys are now held
    kids = oidc_provider.rotate()
    after = id_token_for(oidc_provider, ours, "alice", "n-6")
    head = json.loads(base64.urlsafe_b64decode(after.split(".")[0] + "=="))
    assert head["kid"] == kids[0] and head["kid"] != json.loads(base64.urlsafe_b64decode(before.split(".")[0] + "=="))["kid"]
    assert check(oidc_provider, ours, after, "n-6")["sub"] == "alice"

