"""Sign-in through a real OpenID provider in Chromium (issue 28 §1): the sign-in page's "Sign in
with Corp SSO" button, the provider's own login form, back signed in with the role the group
mapping gives; signing out ends the provider's session too and comes back to the sign-in page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from oidc.standin import oidc_provider, oidc_session_provider  # noqa: F401
from predictorx.service import oidc_providers

pytestmark = pytest.mark.browser


def test_sign_in_with_the_provider_in_the_browser(browser, live, web_db, oidc_provider, axe):  # noqa: F811
    client = oidc_provider.register(live.url)
    with web_db.write() as s:
        oidc_providers.add(s, name="corp", display_name="Corp SSO", issuer=oidc_provider.issuer,
                           client_id=client["client_id"], client_secret=client["client_secret"],
                           scopes="openid email profile groups")
        oidc_providers.map_group(s, "corp", value="eng", workspace="default", role="member")
    context = browser.new_context(base_url=live.url)
    page = context.new_page()
    try:
        page.goto("/login")
        assert axe(page) == []
        page.get_by_role("link", name="Sign in with Corp SSO").click()
        page.wait_for_url(re.compile(re.escape(oidc_provider.issuer) + r"/interaction/"))
        page.locator("input[name=login]").fill("alice")
        page.locator("input[name=password]").fill("anything")
        page.get_by_role("button", name="Sign-in").click()
        page.wait_for_url(lambda url: url.startswith(live.url) and "/login" not in url and "/auth/" not in url)
        expect(page.get_by_text("Alice Admin").first).to_be_visible()

        page.get_by_role("button", name="Sign out").click()  # RP-initiated logout: on to the provider
        page.wait_for_url(re.compile(re.escape(oidc_provider.issuer) + r"/session/end"))
        page.locator("button[autofocus], button[type=submit]").first.click()  # the provider asks: "Yes, sign me out"
        page.wait_for_url(f"{live.url}/login")
        page.goto("/")  # signed out: the sign-in page again
        expect(page.get_by_role("link", name="Sign in with Corp SSO")).to_be_visible()
    finally:
        context.close()
