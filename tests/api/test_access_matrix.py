"""Every route × every kind of caller against the role matrix (R-SEC-4, server/access.py).

The routes come from the app's own route table, so a new route with no entry in `ACCESS` fails
here, and so does an entry left behind by a removed route. For each route the seven callers —
owner, admin, member, a member of another workspace, a daemon token, a task token, no token — get
what the entry says: allowed callers never see 401/403; refused ones see 401 (no token), 403
(wrong role or kind), or 404 (another workspace: no hint that the thing exists).

An allowed caller's changes (POST, PATCH, DELETE) name ids that do not exist and carry bodies that
fail validation, so the handler answers 404/422 and the shared fixture stays as it was; enforcement
runs before both, so a refused caller still gets 401/403/404 whatever the ids and body. The
focused tests (test_security_authz.py) prove that allowed changes really happen.
"""

from __future__ import annotations

import re
import tempfile
import uuid
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from predictorx import config
from predictorx.server.access import ACCESS, ROLE_RANK, markdown_table, route_keys, rule_for
from predictorx.server.app import create_app
from predictorx.server.run import bootstrap
from predictorx.store.db import Database

from databases import sqlite_copy

CALLERS = ("owner", "admin", "member", "outsider", "daemon", "task", "anonymous")
STREAMS = {"GET /api/events", "GET /api/daemon/events"}  # never opened by an allowed caller here
#: Reads whose object rule (in the service) refuses a member who does not own the fixture's agent:
#: an agent's variables are its owner's and the admins' (tests/api/test_agent_secrets.py).
OWNER_READS = {"GET /api/agents/{ref}/env", "GET /agents/{agent_id}/env"}
SECRET = "SECRET-PROJECT-4f1c"
FORGE_TOKEN = "ghp_MATRIX-forge-token-9d2e"  # a forge connection's credential: in no answer, to anyone


def _route_keys() -> list[str]:
    with tempfile.TemporaryDirectory() as d:
        db = Database(f"sqlite:///{Path(d) / 'routes.db'}")
        try:
            return route_keys(create_app(db, migrate=False, web=True))
        finally:
            db.dispose()


ROUTES = _route_keys()


def test_every_route_has_exactly_one_rule_and_no_rule_is_stale():
    missing = [k for k in ROUTES if k not in ACCESS]
    stale = [k for k in ACCESS if k not in ROUTES]
    assert not missing, f"routes with no access rule in server/access.py: {missing}"
    assert not stale, f"access rules for routes that no longer exist: {stale}"


def test_docs_security_lists_the_whole_matrix():
    doc = (Path(__file__).parents[2] / "docs" / "security.md").read_text()
    assert markdown_table() in doc, "docs/security.md is out of date: paste `python -m predictorx.server.access`"


@pytest.fixture(scope="module")
def world(tmp_path_factory, sqlite_template):
    home = tmp_path_factory.mktemp("matrix")
    db = Database(sqlite_copy(sqlite_template, home / "px.db"))
    app = create_app(db, migrate=False, web=True)
    owner_token = bootstrap(db, "http://testserver")
    # From loopback, as a browser on the server's machine: local-folder pages answer there only.
    # The daemon below never sends a heartbeat and its task is claimed once: at a load of 12 the
    # module's tests outlasted the 30 s daemon timeout and the 60 s lease, and the sweeper took the
    # task back ("this task is not held by this daemon"). Liveness is not what this module tests.
    with pytest.MonkeyPatch.context() as mp, \
            TestClient(app, base_url="http://testserver", client=("127.0.0.1", 50000)) as client:
        mp.setenv("PREDICTORX_DAEMON_TIMEOUT", "86400")
        mp.setenv("PREDICTORX_TASK_LEASE", "86400")
        def call(method, path, token=None, **kw):
            headers = {"Origin": "http://testserver", **kw.pop("headers", {})}
            if token:
                headers["Authorization"] = f"Bearer {token}"
            return client.request(method, path, headers=headers, **kw)

        def ok(r):
            assert r.status_code < 400, r.text
            return r.json()

        ws = ok(call("GET", "/api/workspaces", owner_token))[0]["id"]
        tokens = {"owner": owner_token}
        users = {}
        for name, role in (("admin", "admin"), ("member", "member")):
            body = ok(call("POST", f"/api/workspaces/{ws}/members", owner_token, json={"name": name, "role": role}))
            tokens[name], users[name] = body["token"], body["user_id"]
        outsider = ok(call("POST", f"/api/workspaces/{ws}/members", owner_token, json={"name": "outsider"}))
        tokens["outsider"] = outsider["token"]
        ok(call("POST", "/api/workspaces", tokens["outsider"], json={"name": "Elsewhere", "slug": "elsewhere"}))
        assert call("DELETE", f"/api/workspaces/{ws}/members/{outsider['user_id']}", owner_token).status_code == 204
        # removal revoked the token handed out for this workspace: the outsider signs in anew
        with db.write() as s:
            from predictorx.service import auth
            from predictorx.store.schema import Member

            tokens["outsider"] = auth.mint(s, "user", name="outsider", user_id=outsider["user_id"])
            assert s.get(Member, (ws, outsider["user_id"])) is None
        did = str(uuid.uuid4())
        reg = ok(call("POST", "/api/daemon/register", owner_token,
                      json={"daemon_id": did, "name": "box", "runtimes": [{"provider": "command"}]}))
        tokens["daemon"] = reg["token"]
        ok(call("POST", "/api/agents", owner_token, json={"name": "bot", "provider": "command", "command": ["true"]}))
        project = ok(call("POST", "/api/projects", owner_token, json={"title": SECRET, "resources": [
            {"resource_type": "github_repo", "resource_ref": {"url": "https://github.com/o/r"}}]}))
        issue = ok(call("POST", "/api/issues", owner_token, json={"title": "t", "project_id": project["id"],
                                                                 "assignee": "bot"}))
        claimed = ok(call("POST", "/api/daemon/claim", tokens["daemon"], json={"limit": 1}))["tasks"][0]
        tokens["task"] = claimed["token"]
        forge = ok(call("POST", "/api/forges", owner_token, json={
            "kind": "github", "name": "gh", "base_url": "https://github.com", "credential": FORGE_TOKEN}))
        autopilot = ok(call("POST", "/api/autopilots", owner_token, json={
            "name": "nightly", "title": "Nightly", "webhook": True, "project": project["id"]}))
        firing = ok(call("POST", f"/api/autopilots/{autopilot['id']}/fire", owner_token))
        ids = {"ws": ws, "project": project["id"], "connection": forge["id"], "resource": project["resources"][0]["id"],
               "issue": str(issue["number"]), "agent": "bot", "task": claimed["task"]["id"], "daemon": did,
               "user": users["member"], "autopilot": autopilot["id"], "firing": firing["id"],
               "hook": autopilot["webhook_url"].rsplit("/", 1)[1]}
        yield call, tokens, ids


_PARAM = re.compile(r"\{(\w+)\}")


def _path(template: str, ids: dict[str, str], *, harmless: bool) -> str:
    """Fill a route template with the fixture's real ids; `harmless`: ids that exist nowhere, for
    calls an allowed caller must not actually carry out (deletes, removals, cancels)."""
    def fill(m: re.Match) -> str:
        name = m.group(1)
        if name == "op":
            return "note"
        if harmless or name in ("token_id", "request_id", "comment_id", "pr_id", "budget_id", "item_id", "channel_id",
                                "delivery_id"):
            return "1999999" if name == "ref" and template.startswith(("/api/issues", "/issues")) else str(uuid.uuid4())
        if name == "ref":
            if template.startswith("/api/workspaces"):
                return ids["ws"]
            if template.startswith("/api/autopilots"):
                return ids["autopilot"]
            return ids["agent"] if template.startswith("/api/agents") else ids["issue"]
        if name in ("bean", "process", "op", "name"):  # (name: an OpenID provider, web/sso.py)
            return {"op": "note"}.get(name, "no-such-" + name)
        return {"project_id": ids["project"], "project": ids["project"], "resource_id": ids["resource"], "agent_id": ids["agent"],
                "task_id": ids["task"], "daemon_id": ids["daemon"], "user_id": ids["user"], "seq": "0",
                "connection_id": ids["connection"], "name": "NO_SUCH_NAME", "autopilot_id": ids["autopilot"],
                "firing_id": ids["firing"], "hook_id": ids["hook"]}[name]
    return _PARAM.sub(fill, template)


def _allowed(rule, caller: str) -> bool:
    if rule.relay:  # a task's relay pass (HTTP Basic), which none of these callers holds
        return False
    if rule.public:
        return True
    if caller in ("daemon", "task"):
        return rule.daemon if caller == "daemon" else rule.task
    if caller == "anonymous" or rule.people is None:
        return False
    if rule.people == "person":
        return True
    if caller == "outsider":
        return False
    return ROLE_RANK[caller] >= ROLE_RANK[rule.people]


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("route", ROUTES)
def test_route_obeys_the_matrix(world, route: str, caller: str):
    call, tokens, ids = world
    rule = rule_for(*route.split(" ", 1))
    assert rule is not None, f"{route} has no access rule in server/access.py"
    method, template = route.split(" ", 1)
    allowed = _allowed(rule, caller)
    if allowed and route in STREAMS:
        return  # an allowed stream would never end; its refusals are checked for the other callers
    harmless = allowed and method != "GET"  # an allowed change must not spoil the fixture for the next
    path = _path(template, ids, harmless=harmless)
    kw = {}
    if method in ("POST", "PATCH", "PUT"):
        kw["json"] = {"__not_a_field__": True}  # fails validation after the access check
    if template.endswith(("/earlier", "/comments")) and method == "GET":
        kw["params"] = {"before": "5"}  # a required query value, so a refusal is about access
    headers = {"X-Workspace": ids["ws"]} if caller == "outsider" and template.startswith("/api/") else {}
    if "local-folders" in template:  # pages that exist only where the server's own daemon runs
        (config.state_dir() / "daemon_id").write_text(ids["daemon"] + "\n")
    r = call(method, path, tokens.get(caller), headers=headers, **kw)
    assert FORGE_TOKEN not in r.text and FORGE_TOKEN[-12:-4] not in r.text, f"{route} shows a forge token"
    if allowed:
        if route in OWNER_READS and caller == "member":
            assert r.status_code == 403, f"{route}: a member reads another's agent's variables"
            return
        assert r.status_code not in (401, 403), f"{caller} should reach {route}: {r.status_code} {r.text[:300]}"
        if caller == "outsider":
            assert SECRET not in r.text, f"{route} shows another workspace's project to an outsider"
        return
    if rule.relay:  # no bearer token opens the forge relay, a daemon's own included: only a pass
        assert r.status_code == 401 and r.headers.get("www-authenticate", "").startswith("Basic"), \
            f"{caller} on {route}: {r.status_code} {r.text[:300]}"
    elif caller == "anonymous":  # R-SEC-1: every call but the few PUBLIC ones (health, sign-in) needs a token
        assert r.status_code == 401, f"{route} without a token: {r.status_code}"
    elif caller == "outsider" and rule.people is not None:
        # Another workspace's things do not exist for them; their own workspace's pages may answer.
        if _PARAM.search(template) or template.startswith("/api/"):
            # 404, or a refusal of the input itself before anything is looked up: never the thing
            assert r.status_code in (404, 400, 422), f"outsider on {route}: {r.status_code} {r.text[:300]}"
            assert SECRET not in r.text
        else:
            assert r.status_code not in (401,) and SECRET not in r.text
    else:
        assert r.status_code == 403, f"{caller} on {route}: {r.status_code} {r.text[:300]}"


@pytest.mark.parametrize("route", [r for r in ROUTES if _PARAM.search(r) and rule_for(*r.split(" ", 1)).people
                                   in ("member", "admin", "owner")])
def test_outsider_acting_in_their_own_workspace_never_reaches_this_ones_ids(world, route: str):
    """The realistic cross-workspace attack: signed in to their own workspace (no X-Workspace, no
    cookie), an outsider names this workspace's real ids. Every such route answers 404 (or refuses
    the input before any look-up), never the thing (R-SEC-2)."""
    call, tokens, ids = world
    method, template = route.split(" ", 1)
    if route in STREAMS or template.startswith("/api/workspaces/{ref}"):
        return  # the workspace in the path is checked by enforce itself (test above)
    kw = {"json": {"__not_a_field__": True}} if method in ("POST", "PATCH", "PUT") else {}
    if template.endswith(("/earlier", "/comments")) and method == "GET":
        kw["params"] = {"before": "5"}
    if "local-folders" in template:
        (config.state_dir() / "daemon_id").write_text(ids["daemon"] + "\n")
    r = call(method, _path(template, ids, harmless=False), tokens["outsider"], **kw)
    assert r.status_code in (404, 400, 422), f"outsider (own workspace) on {route}: {r.status_code} {r.text[:300]}"
    assert SECRET not in r.text


@pytest.mark.parametrize("route", [r for r in ROUTES if rule_for(*r.split(" ", 1)).task and
                                   ("{ref}" in r or "{task_id}" in r)])
def test_task_token_never_reaches_another_issue_or_task(world, route: str):
    """A task token acts on its own issue and task only: the same routes with another issue or task
    of its workspace are refused (403/404), harness routes included (R-HAR-7, SECURITY-MODEL)."""
    call, tokens, ids = world
    other = call("POST", "/api/issues", tokens["owner"], json={"title": "other", "assignee": "bot"}).json()
    other_task = call("GET", f"/api/issues/{other['number']}/runs", tokens["owner"]).json()[0]["id"]
    method, template = route.split(" ", 1)
    path = _path(template, {**ids, "issue": str(other["number"]), "task": other_task}, harmless=False)
    bodies = {"PATCH /api/issues/{ref}": {"status": "in_review"}, "POST /api/issues/{ref}/comments": {"body": "x"},
              "POST /api/issues/{ref}/workflows": {"process": "p"},
              "POST /api/issues/{ref}/workflows/{process}/steps": {"step": "s"},
              "POST /api/issues/{ref}/beans": {"title": "x"}, "POST /api/issues/{ref}/beans/import": {"files": {}},
              "POST /api/issues/{ref}/classifications": {"category": "bug", "reason": "x"},
              "POST /api/tasks/{task_id}/harness/handoff": {"done": "x"}}
    kw = {"json": bodies.get(route, {})} if method in ("POST", "PATCH", "PUT") else {}
    r = call(method, path, tokens["task"], **kw)
    assert r.status_code in (403, 404), f"task token on {method} {path}: {r.status_code} {r.text[:300]}"
