"""Projects with typed resources over the HTTP API (R-RES-1 … R-RES-6, R-SEC-2)."""

from __future__ import annotations

import uuid

import pytest

from predictorx import resources as registry
from predictorx.resources.placement import CHECKOUT, OWN, WORKTREE, Placement

DAEMON = str(uuid.uuid4())


def register_daemon(api, daemon_id: str) -> None:
    r = api.post("/api/daemon/register", json={"daemon_id": daemon_id, "name": f"host-{daemon_id[:4]}",
                                                "capabilities": ["local-worktree-v1"], "runtimes": [{"provider": "command"}]})
    assert r.status_code == 200, r.text


@pytest.fixture(autouse=True)
def _owners_daemon(api):
    """A local_directory names a registered daemon of the workspace, owned by whoever adds it."""
    register_daemon(api, DAEMON)


def _project(api, **kw):
    r = api.post("/api/projects", json={"title": "Agent UX 2026", **kw})
    assert r.status_code == 201, r.text
    return r.json()


def test_create_project_with_resources_in_one_call(api):
    """R-RES-3: a local_directory keeps its label in one place (the row, not the payload) and
    defaults to execution_mode in_place."""
    p = _project(api, resources=[
        {"resource_type": "github_repo", "resource_ref": {"url": "https://github.com/org/repo", "ref": "main"}},
        {"resource_type": "local_directory", "resource_ref": {"local_path": "/srv/code", "daemon_id": DAEMON,
                                                              "label": "main checkout"}},
    ])
    assert [r["resource_type"] for r in p["resources"]] == ["github_repo", "local_directory"]
    local = p["resources"][1]
    assert local["label"] == "main checkout" and "label" not in local["resource_ref"]
    assert local["resource_ref"]["execution_mode"] == "in_place"
    assert [r["position"] for r in p["resources"]] == [0, 1]


def test_bad_resource_aborts_whole_creation(api):
    """R-RES-5: one invalid resource aborts the whole creation; no half-made project remains."""
    before = api.get("/api/projects").json()
    r = api.post("/api/projects", json={"title": "x", "resources": [
        {"resource_type": "github_repo", "resource_ref": {"url": "https://github.com/org/ok"}},
        {"resource_type": "github_repo", "resource_ref": {"url": "not a url"}},
    ]})
    assert r.status_code == 422
    assert "resource 2" in r.json()["detail"] and "not a git URL" in r.json()["detail"]
    assert api.get("/api/projects").json() == before


@pytest.mark.parametrize("url", [
    "https://github.com/org/repo",
    "https://gitlab.example.com/group/sub/repo.git",          # self-hosted GitLab
    "https://gitea.local:3000/team/infra",                    # Gitea/Forgejo on a port
    "ssh://git@codeberg.org/team/app.git",
    "git@forgejo.internal:team/app.git",                      # scp-like
    "file:///srv/git/app.git",
])
def test_any_git_url_is_a_github_repo(api, url):
    """R-RES-2: any git URL the runtime can reach, not only GitHub; ref and the hint are kept as given."""
    p = _project(api, resources=[{"resource_type": "github_repo",
                                  "resource_ref": {"url": url, "ref": "v1.2", "default_branch_hint": "trunk"}}])
    assert p["resources"][0]["resource_ref"] == {"url": url, "ref": "v1.2", "default_branch_hint": "trunk"}


def test_unknown_type_lists_known_ones(api):
    """R-RES-6: an unknown type is a 400 that lists the known types."""
    p = _project(api)
    r = api.post(f"/api/projects/{p['id']}/resources",
                 json={"resource_type": "notion_page", "resource_ref": {"page_id": "1"}})
    assert r.status_code == 400
    assert "github_repo" in r.json()["detail"] and "local_directory" in r.json()["detail"]


def test_second_local_directory_for_same_daemon_is_409(api):
    """R-RES-4: one local_directory per (project, daemon), 409 saying why; other daemons may have one."""
    p = _project(api)
    url = f"/api/projects/{p['id']}/resources"
    ref = {"local_path": "/srv/a", "daemon_id": DAEMON}
    assert api.post(url, json={"resource_type": "local_directory", "resource_ref": ref}).status_code == 201
    r = api.post(url, json={"resource_type": "local_directory", "resource_ref": {**ref, "local_path": "/srv/b"}})
    assert r.status_code == 409 and "one local folder per machine" in r.json()["detail"]
    other = {"local_path": "/srv/b", "daemon_id": str(uuid.uuid4())}
    register_daemon(api, other["daemon_id"])
    assert api.post(url, json={"resource_type": "local_directory", "resource_ref": other}).status_code == 201
    assert len(api.get(url).json()) == 2


def test_partial_update_distinguishes_omitted_and_cleared(api):
    p = _project(api)
    url = f"/api/projects/{p['id']}/resources"
    r = api.post(url, json={"resource_type": "github_repo", "label": "api",
                            "resource_ref": {"url": "git@gitea.local:org/api.git", "ref": "dev",
                                             "default_branch_hint": "main"}}).json()
    upd = api.patch(f"{url}/{r['id']}", json={"resource_ref": {"ref": None}}).json()
    assert upd["resource_ref"] == {"url": "git@gitea.local:org/api.git", "default_branch_hint": "main"}
    assert upd["label"] == "api"
    upd = api.patch(f"{url}/{r['id']}", json={"label": "backend", "position": 7}).json()
    assert upd["label"] == "backend" and upd["position"] == 7 and upd["resource_ref"]["url"].endswith("api.git")
    bad = api.patch(f"{url}/{r['id']}", json={"resource_type": "local_directory"})
    assert bad.status_code == 422 and "cannot change" in bad.json()["detail"]
    assert api.get(f"{url}/{r['id']}").json()["resource_type"] == "github_repo"


def test_update_cannot_create_a_duplicate_local_directory(api):
    """R-RES-4 holds for updates too: moving a row onto a daemon that has one is a 409."""
    p = _project(api)
    url = f"/api/projects/{p['id']}/resources"
    other = str(uuid.uuid4())
    register_daemon(api, other)
    api.post(url, json={"resource_type": "local_directory", "resource_ref": {"local_path": "/a", "daemon_id": DAEMON}})
    r = api.post(url, json={"resource_type": "local_directory",
                            "resource_ref": {"local_path": "/b", "daemon_id": other}}).json()
    clash = api.patch(f"{url}/{r['id']}", json={"resource_ref": {"daemon_id": DAEMON}})
    assert clash.status_code == 409
    assert api.get(f"{url}/{r['id']}").json()["resource_ref"]["daemon_id"] == other


def test_remove_resource(api):
    p = _project(api, resources=[{"resource_type": "github_repo", "resource_ref": {"url": "file:///srv/x.git"}}])
    rid = p["resources"][0]["id"]
    assert api.delete(f"/api/projects/{p['id']}/resources/{rid}").status_code == 204
    assert api.get(f"/api/projects/{p['id']}/resources/{rid}").status_code == 404


@pytest.mark.parametrize("ref,message", [
    ({"local_path": "relative/path", "daemon_id": DAEMON}, "absolute"),
    ({"local_path": "", "daemon_id": DAEMON}, "must not be empty"),
    ({"local_path": "/srv/x", "daemon_id": "not-a-uuid"}, "UUID"),
    ({"local_path": "/srv/x", "daemon_id": DAEMON, "execution_mode": "yolo"}, "execution_mode"),
    ({"local_path": "/srv/x" * 1000, "daemon_id": DAEMON}, "longer than"),
    ({"local_path": 5, "daemon_id": DAEMON}, "must be a string"),
    ({"daemon_id": DAEMON}, "local_path is required"),
])
def test_bad_local_directory_payloads(api, ref, message):
    """R-RES-3: local_path, daemon_id and execution_mode (in_place | worktree) are checked."""
    p = _project(api)
    r = api.post(f"/api/projects/{p['id']}/resources", json={"resource_type": "local_directory", "resource_ref": ref})
    assert r.status_code == 422 and message in r.json()["detail"], r.text
    assert api.get(f"/api/projects/{p['id']}/resources").json() == []


def test_malformed_json_is_4xx(api):
    r = api.post("/api/projects", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422


class NotionPage(registry.ResourceType):
    """A third type: a page exported into a folder on one machine, worked on in a git worktree."""

    name = "notion_page"
    title = "Notion page"
    form_fields = (registry.Field("page_id", "the page's id"), registry.Field("export_dir", "where it is exported"),
                   registry.Field("daemon_id", "the machine it is exported on"))

    def normalize(self, ref):
        if not isinstance(ref.get("page_id"), str):
            raise registry.ResourceError("page_id is required")
        return {k: ref.get(k) for k in ("page_id", "title", "export_dir", "daemon_id") if ref.get(k) is not None}

    def unique_key(self, ref):
        return f"notion_page:{ref['page_id']}"

    def conflict_message(self, ref):
        return f"page {ref['page_id']} is already one of this project's pages"

    def describe(self, ref, label):
        return f"Notion page “{ref['title']}”"

    def placement(self, ref, label, daemon_id):
        if ref.get("daemon_id") != daemon_id or not ref.get("export_dir"):
            return None
        return Placement(WORKTREE, local_path=ref["export_dir"], label=label)


@pytest.fixture
def notion_page():
    registry.register(NotionPage)
    yield
    registry.unregister("notion_page")


def test_third_type_is_one_module_plus_registration(api, notion_page):
    p = _project(api)
    r = api.post(f"/api/projects/{p['id']}/resources",
                 json={"resource_type": "notion_page", "resource_ref": {"page_id": "abc", "title": "Spec"}})
    assert r.status_code == 201, r.text
    assert r.json()["resource_ref"] == {"page_id": "abc", "title": "Spec"}
    assert registry.get("notion_page").describe(r.json()["resource_ref"], None) == "Notion page “Spec”"
    # Its unique key and its own sentence for the 409.
    again = api.post(f"/api/projects/{p['id']}/resources",
                     json={"resource_type": "notion_page", "resource_ref": {"page_id": "abc"}})
    assert again.status_code == 409 and again.json()["detail"] == "page abc is already one of this project's pages"


def test_third_type_chooses_where_the_agent_runs(notion_page):
    """The daemon asks the types (R-LD-3, R-CTX-4): no type is special-cased by name."""
    from predictorx.daemon.context.types import TaskContext
    from predictorx.daemon.runner import _placement

    here, elsewhere = str(uuid.uuid4()), str(uuid.uuid4())
    rows = [{"id": "1", "resource_type": "github_repo", "resource_ref": {"url": "https://example.com/o/r.git", "ref": "v1"}},
            {"id": "2", "resource_type": "notion_page", "label": "spec",
             "resource_ref": {"page_id": "abc", "export_dir": "/srv/pages/abc", "daemon_id": here}}]
    ctx = TaskContext.from_dict({"resources": rows}, daemon_id=here)
    # On its machine the page's folder wins over the repository listed before it …
    assert _placement(ctx, here) == Placement(WORKTREE, local_path="/srv/pages/abc", label="spec",
                                              resource_type="notion_page")
    # … elsewhere it asks for nothing, and the repository's checkout is where the agent runs.
    assert _placement(ctx, elsewhere) == Placement(CHECKOUT, url="https://example.com/o/r.git", ref="v1",
                                                   resource_type="github_repo")
    assert _placement(TaskContext.from_dict({"resources": rows[1:]}, daemon_id=here), elsewhere).kind == OWN


def test_third_type_brings_its_cli_flags(api, notion_page, monkeypatch, capsys):
    """`project resource add/update` have a flag per field of every registered type."""
    from starlette.testclient import TestClient

    from predictorx import apiclient
    from predictorx.program import main

    app = TestClient(api.client.app)  # the real CLI talks to the real app, in this process (where the type is registered)

    def send(self, method: str, url: str, headers: dict, body: bytes | None) -> apiclient.Answer:
        r = app.request(method, url, headers=headers, content=body)
        return apiclient.Answer(r.status_code, r.content)
    monkeypatch.setattr(apiclient.Client, "send", send)
    monkeypatch.setenv("PREDICTORX_SERVER_URL", "http://testserver")
    monkeypatch.setenv("PREDICTORX_TOKEN", api.token)

    def px(*args: str) -> str:
        try:
            main(list(args))
        except SystemExit as e:
            assert not e.code, capsys.readouterr().err
        return capsys.readouterr().out

    assert "--export-dir" in px("project", "resource", "add", "--help")
    p = _project(api)
    px("project", "resource", "add", p["id"], "--type", "notion_page", "--page-id", "xyz", "--export-dir", "/srv/x")
    [row] = api.get(f"/api/projects/{p['id']}/resources").json()
    assert row["resource_ref"] == {"page_id": "xyz", "export_dir": "/srv/x"}
    px("project", "resource", "update", p["id"], row["id"], "--export-dir", "/srv/y")
    assert api.get(f"/api/projects/{p['id']}/resources").json()[0]["resource_ref"]["export_dir"] == "/srv/y"


def test_workspace_isolation_is_404(api):
    p = _project(api)
    ws = api.post("/api/workspaces", json={"name": "Other team"}).json()
    # A second user who is only a member of the other workspace.
    from predictorx.service import auth
    from predictorx.store.schema import Member, User

    state = api.client.app.state.px
    with state.write() as s:
        u = User(name="mallory")
        s.add(u)
        s.flush()
        s.add(Member(workspace_id=ws["id"], user_id=u.id, role="member"))
        token = auth.mint(s, "user", user_id=u.id)
    other = api.as_(token)
    assert other.get(f"/api/projects/{p['id']}").status_code == 404
    assert other.get(f"/api/projects/{p['id']}/resources").status_code == 404
    assert other.get("/api/projects").json() == []
    first_ws = api.get("/api/workspaces").json()[0]["id"]
    assert other.get("/api/projects", headers={"X-Workspace": first_ws}).status_code == 404


def test_no_token_is_401(api):
    assert api.client.get("/api/projects").status_code == 401
    assert api.as_("pxu_wrong").get("/api/projects").status_code == 401


def test_members_and_tokens(api):
    ws = api.get("/api/workspaces").json()[0]["id"]
    added = api.post(f"/api/workspaces/{ws}/members", json={"name": "bob", "email": "bob@example.com"}).json()
    bob = api.as_(added["token"])
    assert bob.get("/api/projects").status_code == 200
    assert bob.post(f"/api/workspaces/{ws}/members", json={"name": "eve"}).status_code == 403  # members can't
    names = [m["name"] for m in api.get(f"/api/workspaces/{ws}/members").json()]
    assert names == ["owner", "bob"]
    assert api.post(f"/api/workspaces/{ws}/members", json={"name": "bob2", "email": "bob@example.com"}).status_code == 409
    t = bob.post("/api/tokens", json={"name": "laptop", "days": 30}).json()
    assert api.as_(t["token"]).get("/api/projects").status_code == 200
    assert [x["name"] for x in bob.get("/api/tokens").json()] == ["token for bob", "laptop"]
    assert bob.delete(f"/api/tokens/{t['id']}").status_code == 204
    assert api.as_(t["token"]).get("/api/projects").status_code == 401
    assert api.delete(f"/api/tokens/{t['id']}").status_code == 404  # not the owner's token
    assert api.delete(f"/api/workspaces/{ws}/members/{added['user_id']}").status_code == 204
    assert bob.get("/api/projects").status_code == 401  # removal revoked the token it was given (R-SEC-5)
    owner_id = api.get("/api/me").json()["user"]["id"]
    assert api.delete(f"/api/workspaces/{ws}/members/{owner_id}").status_code == 409  # last owner
