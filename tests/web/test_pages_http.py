"""The HTML routes without a browser: sign-in, error pages, bad form input (R-SEC-3 for the
web), escaping, the local-folder rules (R-WEB-2) and rendering through the type registry (R-RES-1)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from predictorx import config
from predictorx import resources as registry
from predictorx.resources.registry import ResourceType
from predictorx.store.schema import ProjectResource

HX = {"HX-Request": "true"}


def _project(client, **extra) -> str:
    r = client.post("/projects", data={"title": "Storefront", **extra})
    assert r.status_code == 303, r.text
    return r.headers["location"].rsplit("/", 1)[-1]


def _local_daemon(client, token: str, *, online: bool = True) -> str:
    daemon_id = str(uuid.uuid4())
    (config.state_dir() / "daemon_id").write_text(daemon_id)
    r = client.post("/api/daemon/register", headers={"Authorization": f"Bearer {token}"},
                    json={"daemon_id": daemon_id, "name": "laptop", "capabilities": ["local-worktree-v1"],
                          "runtimes": [{"provider": "claude"}]})
    assert r.status_code == 200, r.text
    return daemon_id


# -- signing in --------------------------------------------------------------------------------

def test_pages_without_a_cookie_show_the_sign_in_page(anon):
    for path in ("/", "/projects/x", "/issues", "/tasks/x", "/agents", "/daemons"):
        r = anon.get(path)
        assert r.status_code == 401 and "Open the link printed by" in r.text, path
    r = anon.get("/projects/x/resources", headers=HX)
    assert r.status_code == 401 and r.headers["HX-Redirect"] == "/login"
    assert anon.post("/projects", data={"title": "x"}).status_code == 401


def _code(client, token: str) -> str:
    r = client.post("/api/login-link", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 201, r.text
    return r.json()["url"].split("code=", 1)[1]


def test_login_code_sets_a_strict_httponly_cookie_once(anon, token):
    code = _code(anon, token)
    opened = anon.get(f"/login?code={code}")  # the link shows a button; nothing is spent yet
    assert opened.status_code == 200 and "set-cookie" not in opened.headers
    assert f'name="code" value="{code}"' in opened.text
    r = anon.post("/login", data={"code": code})
    assert r.status_code == 303 and r.headers["location"] == "/"
    cookie = r.headers["set-cookie"].lower()
    assert "px_token=" in cookie and "httponly" in cookie and "samesite=strict" in cookie
    assert anon.get("/").status_code == 200

    anon.cookies.clear()
    again = anon.post("/login", data={"code": code})
    assert again.status_code == 401 and "already used" in again.text and "set-cookie" not in again.headers
    assert anon.post("/login", data={"code": ""}).status_code == 400
    r = anon.post("/login", data={"code": f"http://testserver/login?code={_code(anon, token)}"})
    assert r.status_code == 303  # the whole pasted link works too
    assert anon.post("/logout").headers["location"] == "/login"


def test_finding_12_a_token_never_signs_in(anon, token):
    """`/login?token=<attacker's token>` used to sign the victim in as the attacker."""
    r = anon.get(f"/login?token={token}")
    assert r.status_code == 401 and "set-cookie" not in r.headers and "predictorx web" in r.text
    r = anon.post("/login", data={"token": token})
    assert r.status_code == 400 and "set-cookie" not in r.headers
    r = anon.post("/login", data={"code": token})  # a token pasted as a code is no code
    assert r.status_code == 401 and "set-cookie" not in r.headers
    assert anon.get("/").status_code == 401


def test_issue29_10_a_cross_site_link_does_not_sign_in(anon, token):
    """Login CSRF: `GET /login?code=<attacker's code>` from another site's link used to spend the
    code and replace the victim's session with the attacker's. Only a same-origin POST signs in."""
    code = _code(anon, token)
    navigated = anon.get(f"/login?code={code}", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate",
                                                         "Sec-Fetch-Dest": "document"})
    assert navigated.status_code == 200 and "set-cookie" not in navigated.headers
    assert "Another site sent you here" in navigated.text
    assert anon.get(f"/login?code={code}").status_code == 200 and "px_token" not in anon.cookies
    forged = anon.post("/login", data={"code": code}, headers={"Sec-Fetch-Site": "cross-site"})
    assert forged.status_code == 403 and "set-cookie" not in forged.headers
    forged = anon.post("/login", data={"code": code}, headers={"Origin": "http://attacker.example"})
    assert forged.status_code == 403 and "set-cookie" not in forged.headers
    # The code is still unspent: the person's own click on the page signs in.
    signed_in = anon.post("/login", data={"code": code}, headers={"Origin": "http://testserver",
                                                                  "Sec-Fetch-Site": "same-origin"})
    assert signed_in.status_code == 303 and "px_token=" in signed_in.headers["set-cookie"]


def test_finding_12_cookie_lives_no_longer_than_its_token(anon, token, web_db):
    from predictorx.service import auth
    from predictorx.store.schema import Token, utcnow

    r = anon.post("/login", data={"code": _code(anon, token)})
    max_age = int(r.headers["set-cookie"].lower().split("max-age=")[1].split(";")[0])
    with web_db.read() as s:
        row = s.query(Token).filter_by(token_hash=auth.hash_token(anon.cookies.get("px_token"))).one()
    assert 0 < max_age <= (row.expires_at - utcnow()).total_seconds() + 1


def test_a_daemon_token_does_not_open_the_web_ui(client, token):
    _local_daemon(client, token)
    daemon_token = client.post("/api/daemon/register", headers={"Authorization": f"Bearer {token}"},
                               json={"daemon_id": str(uuid.uuid4()), "name": "ci"}).json()["token"]
    client.cookies.set("px_token", daemon_token)
    r = client.get("/")
    assert r.status_code in (401, 403) and "Projects" not in r.text


# -- errors are pages --------------------------------------------------------------------------

def test_unknown_ids_and_addresses_answer_a_404_page(client):
    pid = _project(client)
    for path in ("/projects/nope", "/issues/12345", "/issues/nope", "/tasks/nope", "/tasks/nope/header",
                 "/tasks/nope/messages", "/projects/nope/resources", "/projects/nope/tasks", "/no/such/page"):
        r = client.get(path)
        assert r.status_code == 404, path
        assert r.headers["content-type"].startswith("text/html") and "Not found" in r.text, path
    r = client.post(f"/projects/{pid}/resources/nope", data={"label": "x"}, headers=HX)
    assert r.status_code == 404 and "not found" in r.text
    assert client.get("/api/nothing").headers["content-type"] == "application/json"
    assert client.get("/tasks/x/messages?after=abc").status_code == 400


def test_bad_project_form_comes_back_with_the_message_and_creates_nothing(client):
    r = client.post("/projects", data={"title": "", "description": "kept"})
    assert r.status_code == 422 and "title" in r.text and "kept" in r.text and "<dialog" in r.text
    r = client.post("/projects", data={"title": "X", "status": "someday"}, headers=HX)
    assert r.status_code == 422 and "status must be one of" in r.text and 'id="project-form"' in r.text
    r = client.post("/projects", headers=HX, data={
        "title": "Half", "repo": "https://github.com/org/ok", "repo_urls": "ftp://nope"})
    assert r.status_code == 422 and "resource 2" in r.text and "not a git URL" in r.text
    assert 'value="Half"' in r.text and "ftp://nope" in r.text
    r = client.post("/projects", data={"title": "Led", "lead_id": "nobody"}, headers=HX)
    assert r.status_code == 422 and "not a member" in r.text
    assert "Half" not in client.get("/").text.split("<dialog")[0]


def test_bad_resource_input_is_answered_next_to_its_form(client):
    pid = _project(client)
    url = f"/projects/{pid}/resources"
    cases = [
        ({"form": "other", "resource_type": "notion_page", "payload": "{}"}, 400, "known types: github_repo"),
        ({"form": "other", "resource_type": "github_repo", "payload": "{oops"}, 422, "not valid JSON"),
        ({"form": "other", "resource_type": "github_repo", "payload": "[1]"}, 422, "must be a JSON object"),
        ({"form": "repo", "url": ""}, 422, "url is required"),
        ({"form": "repo", "url": "https://github.com/o/r", "ref": "a..b"}, 422, "not a valid git"),
    ]
    for data, status, message in cases:
        r = client.post(url, data=data, headers=HX)
        assert r.status_code == status and message in r.text, (data, r.text[:300])
    assert client.get(f"/api/projects/{pid}").json()["resources"] == []

    daemon_id = str(uuid.uuid4())  # a local folder names a registered daemon of the workspace (R-SEC-2)
    assert client.post("/api/daemon/register", json={"daemon_id": daemon_id, "name": "box", "capabilities": [
        "local-worktree-v1"], "runtimes": [{"provider": "command"}]}).status_code == 200
    client.post(url, data={"form": "other", "resource_type": "local_directory",
                           "payload": f'{{"local_path": "/srv/a", "daemon_id": "{daemon_id}"}}'}, headers=HX)
    rid = client.get(f"/api/projects/{pid}").json()["resources"][0]["id"]
    r = client.post(f"{url}/{rid}", data={"label": "a", "execution_mode": "sideways"}, headers=HX)
    assert r.status_code == 422 and "execution_mode must be one of" in r.text
    r = client.post(f"{url}/{rid}", data={"label": "a", "execution_mode": "worktree"}, headers=HX)
    assert r.status_code == 200
    assert client.get(f"/api/projects/{pid}").json()["resources"][0]["resource_ref"]["execution_mode"] == "worktree"


def test_plain_form_posts_redirect_or_show_the_panel_with_its_error(client):
    pid = _project(client)
    ok = client.post(f"/projects/{pid}/resources", data={"form": "repo", "url": "https://github.com/o/r"})
    assert ok.status_code == 303 and ok.headers["location"] == f"/projects/{pid}"
    bad = client.post(f"/projects/{pid}/resources", data={"form": "repo", "url": "nope"})
    assert bad.status_code == 422 and "not a git URL" in bad.text and "<html" in bad.text
    client.post(f"/projects/{pid}/issues", data={"title": "T"})
    bad = client.post("/issues/1/comments", data={"body": " "})
    assert bad.status_code == 422 and "<html" in bad.text and 'name="body"' in bad.text


def test_other_forms_refuse_bad_input_without_a_500(client):
    pid = _project(client)
    r = client.post(f"/projects/{pid}/issues", data={"title": ""}, headers=HX)
    assert r.status_code == 422 and 'id="new-issue-form"' in r.text
    r = client.post(f"/projects/{pid}/issues", data={"title": "T", "assignee": "ghost"}, headers=HX)
    assert r.status_code == 404 and "no agent or member named" in r.text
    assert client.get("/api/issues").json() == []
    client.post(f"/projects/{pid}/issues", data={"title": "T"}, headers=HX)
    assert client.post("/issues/1/comments", data={"body": "  "}, headers=HX).status_code == 422
    assert client.post("/issues/1/assign", data={"assignee": "ghost"}, headers=HX).status_code == 404
    assert client.post("/issues", data={"title": "x" * 600}, headers=HX).status_code == 422
    assert client.post("/projects", content=b"title=" + b"x" * 1_100_000,
                       headers={"content-type": "application/x-www-form-urlencoded"}).status_code == 400
    assert client.post("/projects", content=b"\xff\xfe=\x00", headers=HX).status_code == 422


def test_status_and_priority_changes_are_checked(client):
    pid = _project(client)
    r = client.post(f"/projects/{pid}/update", data={"status": "someday"}, headers=HX)
    assert r.status_code == 422 and "status must be one of" in r.text and 'id="project-status"' in r.text
    r = client.post(f"/projects/{pid}/update", data={"status": "in_progress", "priority": "urgent"}, headers=HX)
    assert r.status_code == 200
    assert client.get(f"/api/projects/{pid}").json()["priority"] == "urgent"
    client.post(f"/projects/{pid}/issues", data={"title": "T"}, headers=HX)
    r = client.post("/issues/1/update", data={"priority": "whenever"}, headers=HX)
    assert r.status_code == 422 and "priority must be one of" in r.text
    assert client.post("/issues/1/update", data={"status": "done"}, headers=HX).status_code == 200
    assert client.get("/api/issues/1").json()["status"] == "done"


def test_cancelling_a_finished_run_says_so(client, token):
    auth = {"Authorization": f"Bearer {token}"}
    client.post("/api/agents", json={"name": "claude", "provider": "claude"}, headers=auth)
    issue = client.post("/api/issues", json={"title": "T", "assignee": "claude"}, headers=auth).json()
    task_id = client.get(f"/api/issues/{issue['number']}/runs", headers=auth).json()[0]["id"]
    assert client.post(f"/tasks/{task_id}/cancel", headers=HX).status_code == 200
    r = client.post(f"/tasks/{task_id}/cancel", headers=HX)
    assert r.status_code == 409 and "already cancelled" in r.text


def test_user_text_is_escaped_everywhere(client):
    pid = _project(client, description="<img src=x onerror=alert(1)>")
    client.post(f"/projects/{pid}/resources", headers=HX,
                data={"form": "repo", "url": "https://github.com/o/r", "label": "<script>alert(1)</script>"})
    page = client.get(f"/projects/{pid}").text
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    assert "<img src=x" not in page


# -- resource types render through the registry (R-RES-1) --------------------------------------

class _Doc(ResourceType):
    name = "test_doc"
    title = "Document"
    form_fields = (registry.Field("id", "its id", required=True),
                   registry.Field("visibility", "who may read it", choices=("team", "public"), label="Who reads it"))
    web_form = registry.WebForm("doc", "+ Document", "Add document")

    def render_html(self, ref, label):
        return f'<a class="test-doc" href="https://docs.example/{ref["id"]}">doc {ref["id"]}</a>'


@pytest.fixture
def doc_type():
    registry.register(_Doc)
    yield
    registry.unregister("test_doc")


def test_a_new_resource_type_needs_no_web_code(client, doc_type):
    pid = _project(client)
    r = client.post(f"/projects/{pid}/resources", headers=HX,
                    data={"form": "other", "resource_type": "test_doc", "payload": '{"id": "42"}'})
    assert r.status_code == 200
    assert '<a class="test-doc" href="https://docs.example/42">doc 42</a>' in r.text and "Document" in r.text
    assert '<option value="test_doc">' in r.text
    # Its own fields in its edit form: a select of its choices, saved as the API saves it.
    r = client.post(f"/projects/{pid}/resources", headers=HX,
                    data={"form": "other", "resource_type": "test_doc", "payload": '{"id": "7", "visibility": "team"}'})
    assert r.status_code == 200 and "Who reads it" in r.text and '<select name="visibility">' in r.text
    row = next(x for x in client.get(f"/api/projects/{pid}").json()["resources"] if x["resource_ref"]["id"] == "7")
    r = client.post(f"/projects/{pid}/resources/{row['id']}", data={"label": "", "visibility": "public"}, headers=HX)
    assert r.status_code == 200, r.text
    saved = next(x for x in client.get(f"/api/projects/{pid}").json()["resources"] if x["id"] == row["id"])
    assert saved["resource_ref"] == {"id": "7", "visibility": "public"}
    # And its own "add" form, made of its fields.
    page = client.get(f"/projects/{pid}").text
    assert 'id="add-doc-form"' in page and "+ Document" in page and '<input name="id"' in page
    r = client.post(f"/projects/{pid}/resources", headers=HX, data={"form": "doc", "id": "9", "visibility": "team"})
    assert r.status_code == 200, r.text
    assert {"id": "9", "visibility": "team"} in [x["resource_ref"] for x in client.get(f"/api/projects/{pid}").json()["resources"]]


def test_a_row_of_an_unknown_type_shows_its_payload(client, web_db):
    pid = _project(client)
    with web_db.write() as s:
        s.add(ProjectResource(project_id=pid, resource_type="gone_type", resource_ref={"k": "<v>"}, position=0))
    r = client.get(f"/projects/{pid}")
    assert r.status_code == 200 and "gone_type" in r.text and "&lt;v&gt;" in r.text


# -- the local folder button and browser (R-WEB-2) --------------------------------------------

def test_local_folder_button_only_on_the_daemons_machine(client, local_client, token):
    pid = _project(client)
    assert 'id="add-local-folder"' not in local_client.get(f"/projects/{pid}").text  # no daemon here yet
    _local_daemon(client, token)
    assert 'id="add-local-folder"' in local_client.get(f"/projects/{pid}").text
    assert 'id="add-local-folder"' not in client.get(f"/projects/{pid}").text  # remote browser
    proxied = local_client.get(f"/projects/{pid}", headers={"X-Forwarded-For": "198.51.100.4"})
    assert 'id="add-local-folder"' not in proxied.text
    assert client.get(f"/projects/{pid}/local-folders").status_code == 403
    assert client.post(f"/projects/{pid}/local-folders", data={"path": "/srv"}).status_code == 403


def test_folder_browser_lists_folders_only(local_client, token, tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "code" / "app").mkdir(parents=True)
    (home / "code" / ".hidden").mkdir()
    (home / "code" / "secret.txt").write_text("never shown")
    monkeypatch.setenv("HOME", str(home))
    _local_daemon(local_client, token)
    pid = _project(local_client)
    r = local_client.get(f"/projects/{pid}/local-folders")
    assert r.status_code == 200 and str(home) in r.text and 'data-folder="code"' in r.text
    r = local_client.get(f"/projects/{pid}/local-folders", params={"path": str(home / "code")})
    assert 'data-folder="app"' in r.text and ".hidden" not in r.text and "secret.txt" not in r.text
    r = local_client.get(f"/projects/{pid}/local-folders", params={"path": str(home / "missing")})
    assert r.status_code == 200 and "does not exist" in r.text
    r = local_client.get(f"/projects/{pid}/local-folders", params={"path": "code"})
    assert f"<code class=\"mono\" id=\"selected-path\">{home / 'code'}</code>" in r.text
    r = local_client.get(f"/projects/{pid}/local-folders", params={"path": str(home) + "/a\x00b"})
    assert r.status_code == 200 and "not a valid path" in r.text


def test_saving_a_local_folder_applies_the_path_rules_and_the_409(local_client, token, tmp_path: Path,
                                                                   monkeypatch):
    home = tmp_path / "home"
    (home / "code").mkdir(parents=True)
    (home / "other").mkdir()
    monkeypatch.setenv("HOME", str(home))
    daemon_id = _local_daemon(local_client, token)
    pid = _project(local_client)
    url = f"/projects/{pid}/local-folders"
    r = local_client.post(url, data={"path": str(home), "execution_mode": "in_place"}, headers=HX)
    assert r.status_code == 422 and "home directory" in r.text
    r = local_client.post(url, data={"path": "/etc", "execution_mode": "in_place"}, headers=HX)
    assert r.status_code == 422 and "/etc" in r.text
    r = local_client.post(url, data={"path": str(home / "code"), "execution_mode": "worktree", "label": "code"},
                          headers=HX)
    assert r.status_code == 200 and r.headers["HX-Retarget"] == "#resources"
    stored = local_client.get(f"/api/projects/{pid}").json()["resources"]
    assert stored[0]["resource_ref"] == {"local_path": str(home / "code"), "daemon_id": daemon_id,
                                         "execution_mode": "worktree"}
    r = local_client.post(url, data={"path": str(home / "other"), "execution_mode": "in_place"}, headers=HX)
    assert r.status_code == 409 and "one local folder per machine" in r.text


# -- tables ------------------------------------------------------------------------------------

def test_agents_and_daemons_tables(client, token):
    auth = {"Authorization": f"Bearer {token}"}
    daemon_id = _local_daemon(client, token)
    client.post("/api/agents", json={"name": "claude", "provider": "claude", "model": "sonnet"}, headers=auth)
    agents = client.get("/agents").text
    assert "claude" in agents and "sonnet" in agents and "laptop · claude" in agents
    daemons = client.get("/daemons").text
    assert daemon_id in daemons and "this machine" in daemons and "online" in daemons


def test_projects_list_counts_resources_issues_and_runs(client, token):
    auth = {"Authorization": f"Bearer {token}"}
    pid = _project(client, repo_urls="https://github.com/o/a\nhttps://github.com/o/b", priority="urgent")
    client.post("/api/agents", json={"name": "claude", "provider": "claude"}, headers=auth)
    client.post("/api/issues", json={"title": "T", "project_id": pid, "assignee": "claude"}, headers=auth)
    row = client.get("/").text.split(f'href="/projects/{pid}"', 1)[1].split("</tr>", 1)[0]
    cells = [c.split("</td>")[0].strip() for c in row.split('<td class="num">')[1:]]
    assert cells == ["2", "1", "1"] and "urgent" in row


def test_a_login_code_signs_in_once_and_the_owner_token_stays_secret(web_db, token):
    from starlette.testclient import TestClient

    from predictorx.server.app import create_app

    app = create_app(web_db, migrate=False)

    def make_client(_db, cookie):
        c = TestClient(app, follow_redirects=False, headers={"Origin": "http://testserver"})
        if cookie:
            c.cookies.set("px_token", cookie)
        return c
    owner = make_client(web_db, token)
    link = owner.post("/api/login-link").json()["url"]
    path = link[link.index("/login"):]
    anon = make_client(web_db, None)
    assert anon.get(path, follow_redirects=False).status_code == 200  # the page with its button
    code = path.split("code=", 1)[1]
    first = anon.post("/login", data={"code": code}, follow_redirects=False)
    assert first.status_code == 303
    cookie = first.cookies.get("px_token")
    assert cookie and cookie != token
    assert anon.get("/api/projects", headers={"Authorization": f"Bearer {cookie}"}).status_code == 200
    second = make_client(web_db, None).post("/login", data={"code": code}, follow_redirects=False)
    assert second.status_code != 303 and "already used" in second.text
    code = path.split("code=")[1]
    assert anon.get("/api/projects", headers={"Authorization": f"Bearer {code}"}).status_code == 401


def test_a_plain_form_post_refused_inside_a_panel_gets_a_whole_page(client):
    """The fuzzer's 500 (fresh-clone run, 2026-12-05): a non-htmx post to a panel's form that the
    use case refused rendered the page around the panel without the signed-in person ('viewer' is
    undefined). It is a 4xx page with the sidebar now."""
    token = client.cookies.get("px_token")
    client.post("/api/issues", json={"title": "t"}, headers={"Authorization": f"Bearer {token}"})
    r = client.post("/issues/1/workflow-state/answer", data={"data": "", "headers": "Content-Type"})
    assert 400 <= r.status_code < 500 and "Sign out" in r.text, r.status_code


def test_pages_and_static_files_are_sent_compressed_and_the_api_is_not(client, token):
    """server/compression.py: a browser downloads htmx as ~17 KB, not 52 KB; a daemon's API
    answers are not compressed (small and frequent: CPU for nothing)."""
    script = client.get("/static/htmx.min.js", headers={"Accept-Encoding": "gzip"})
    assert script.headers["content-encoding"] == "gzip" and script.num_bytes_downloaded < len(script.content) / 2
    assert client.get("/issues", headers={"Accept-Encoding": "gzip"}).headers["content-encoding"] == "gzip"
    api = client.get("/api/issues", headers={"Accept-Encoding": "gzip", "Authorization": f"Bearer {token}"})
    assert api.status_code == 200 and "content-encoding" not in api.headers
    assert "content-encoding" not in client.get("/static/htmx.min.js", headers={"Accept-Encoding": "identity"}).headers
