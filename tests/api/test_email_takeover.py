"""An e-mail typed when adding a member proves nothing (R-SEC-4): the new account's first token
goes to whoever typed it. So such an account is not attached by that e-mail to another workspace
(a sentence says what to do instead), and the first sign-in through an OpenID provider that says
the address is verified takes the account over, every earlier token revoked — else a member of
one workspace could make an account for a colleague's address and keep its token, and be handed
the workspace that adds that colleague next, or the colleague's own sign-in."""

from __future__ import annotations

from sqlalchemy import select

from predictorx.service import auth, oidc_accounts
from predictorx.store.oidc_schema import OidcProvider
from predictorx.store.schema import AuditEvent, User

VICTIM = "victim@corp.example"


def _squat(api) -> tuple[str, str, str]:
    """Someone who was once a member here, with a workspace of their own ("Trap"), adds the
    victim's address there: (the trap's id, the squatted account's id, the token its adder got)."""
    ws = _workspace(api)
    once = api.post(f"/api/workspaces/{ws}/members", json={"name": "outsider", "role": "member"}).json()
    trap = api.as_(once["token"]).post("/api/workspaces", json={"name": "Trap", "slug": "trap"})
    assert trap.status_code in (200, 201), trap.text
    assert api.delete(f"/api/workspaces/{ws}/members/{once['user_id']}").status_code == 204
    with api.client.app.state.px.write() as s:
        raw = auth.mint(s, "user", name="outsider's", user_id=once["user_id"])
    squatter = api.as_(raw)
    made = squatter.post(f"/api/workspaces/{trap.json()['id']}/members",
                         json={"name": "Victim", "email": VICTIM, "role": "member"})
    assert made.status_code in (200, 201) and made.json()["token"], made.text
    return trap.json()["id"], made.json()["user_id"], made.json()["token"]


def _workspace(api) -> str:
    return api.get("/api/workspaces").json()[0]["id"]


def test_an_account_whose_e_mail_was_typed_is_not_attached_by_it_elsewhere(api) -> None:
    ws = _workspace(api)
    _trap, _user, token = _squat(api)
    api.post("/api/projects", json={"title": "the team's plans"})
    refused = api.post(f"/api/workspaces/{ws}/members", json={"name": "Victim", "email": VICTIM, "role": "member"})
    assert refused.status_code == 409
    assert "nobody has proven that address" in refused.json()["detail"]
    assert "OpenID" in refused.json()["detail"] and "without an e-mail" in refused.json()["detail"]
    squatter = api.as_(token)
    assert ws not in [w["id"] for w in squatter.get("/api/workspaces").json()]
    assert squatter.get("/api/projects", headers={"X-Workspace": ws}).status_code == 404
    names = [m["name"] for m in api.get(f"/api/workspaces/{ws}/members").json()]
    assert "Victim" not in names  # (nothing changed)


def _provider(s) -> OidcProvider:
    provider = OidcProvider(name="corp", display_name="Corp", issuer="https://idp.corp.example", client_id="c",
                            scopes="openid email", role_map=[])
    s.add(provider)
    s.flush()
    return provider


def test_the_first_sign_in_that_proves_the_address_takes_the_account_over(api) -> None:
    ws = _workspace(api)
    trap, squatted, token = _squat(api)
    daemon = api.as_(token).register_daemon("command")  # (a daemon the squatter registered with it)
    with api.client.app.state.px.write() as s:
        user = oidc_accounts.person_for(s, _provider(s), {"sub": "the-real-one", "email": "Victim@corp.example",
                                                          "email_verified": True})
        assert user.id == squatted and user.email_proven
    assert api.as_(token).get("/api/workspaces").status_code == 401  # every earlier token revoked
    assert daemon.post("/api/daemon/heartbeat", json={"task_ids": []}).status_code == 401
    with api.client.app.state.px.read() as s:  # (recorded where the account was a member)
        assert s.scalar(select(AuditEvent.action).where(AuditEvent.workspace_id == trap,
                                                        AuditEvent.action == "member.email_proven"))
    # A proven account is attached by its e-mail, without a token, as before.
    added = api.post(f"/api/workspaces/{ws}/members", json={"name": "Victim", "email": VICTIM, "role": "member"})
    assert added.status_code in (200, 201) and added.json()["user_id"] == squatted and not added.json().get("token")
    with api.client.app.state.px.read() as s:
        assert s.scalar(select(User.email_proven).where(User.id == squatted)) is True


def test_an_account_made_by_a_verified_sign_in_is_proven_and_an_unverified_one_holds_no_e_mail(api) -> None:
    with api.client.app.state.px.write() as s:
        provider = _provider(s)
        verified = oidc_accounts.person_for(s, provider, {"sub": "a", "email": "a@corp.example", "email_verified": True})
        unverified = oidc_accounts.person_for(s, provider, {"sub": "b", "email": "b@corp.example"})
        assert (verified.email, verified.email_proven) == ("a@corp.example", True)
        assert (unverified.email, unverified.email_proven) == (None, False)
