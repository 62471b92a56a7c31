"""A provider's client secret at rest (issue 28 §1): sealed, re-sealed by `server rotate-key`
with the new key, and still the same secret afterwards; a sealed value copied onto another
provider does not open there."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from predictorx.service import oidc_providers, secretbox
from predictorx.store.oidc_schema import OidcProvider


def test_rotate_key_reseals_the_client_secret(db):
    with db.write() as s:
        oidc_providers.add(s, name="corp", issuer="https://id.example.com", client_id="px", client_secret="s3cr3t-value")
        oidc_providers.add(s, name="other", issuer="https://id2.example.com", client_id="px2", client_secret="another")
    with db.read() as s:
        before = s.scalar(select(OidcProvider.client_secret_sealed).where(OidcProvider.name == "corp"))
    assert "s3cr3t-value" not in before
    done = secretbox.rotate(db.write)
    assert done.resealed >= 2
    with db.write() as s:
        corp = oidc_providers.named(s, "corp")
        assert secretbox.sealed_key_id(corp.client_secret_sealed) == done.new_key_id != secretbox.sealed_key_id(before)
        assert oidc_providers.client_secret(corp) == "s3cr3t-value"
        other = oidc_providers.named(s, "other")
        other.client_secret_sealed = corp.client_secret_sealed  # copied onto another row
        with pytest.raises(secretbox.SecretError, match="another row or field"):
            oidc_providers.client_secret(other)
