"""The forge relay (service/forgerelay.py): a daemon pushes a task's branch through the server with
a relay pass, and the forge's credential reaches no daemon. In front of a real git smart-HTTP forge
(tests/forgestand: `git http-backend` behind nginx), requests made by hand as git makes them:

- the push target and the finish's answer carry the relay's path and a pass, never the token (nor
  its Basic form);
- the pass opens its own task's relay only — another task's path, another daemon's pass, an
  expired, garbled or missing pass are refused (404 / 401) and nothing reaches the forge;
- a push of another ref, or a delete of the task's branch, is refused 403 and the forge's refs
  stay as they were, while the same request for the task's branch lands;
- a fetch (upload-pack) is relayed only for a task that continues a branch.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
import subprocess
import uuid

import pytest

from predictorx.service import relaypass

pytest.importorskip("predictorx.forges.github", reason="forge-clients' GitHub client is not merged here yet")

pytest_plugins = ["forgestand.fixtures"]

REPO = "acme/shop"
ZERO = "0" * 40
#: git's empty pack: a push whose new tip the forge holds already sends no objects.
EMPTY_PACK = (lambda head: head + hashlib.sha1(head).digest())(b"PACK" + struct.pack(">II", 2, 0))


def _pkt(line: str) -> bytes:
    data = line.encode()
    return f"{len(data) + 4:04x}".encode() + data


def _commands(*updates: tuple[str, str, str]) -> bytes:
    lines = [f"{old} {new} {ref}" + ("\0report-status" if i == 0 else "") + "\n"
             for i, (old, new, ref) in enumerate(updates)]
    return b"".join(_pkt(line) for line in lines) + b"0000"


def _secrets(standin) -> list[str]:
    return [standin.token, base64.b64encode(f"{standin.git_username}:{standin.token}".encode()).decode()]


def _basic(token: str, user: str = relaypass.USERNAME) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()}


def _daemon(api, name: str) -> str:
    r = api.post("/api/daemon/register", json={"daemon_id": str(uuid.uuid4()), "name": name,
                                               "runtimes": [{"provider": "command"}]})
    assert r.status_code == 200, r.text
    return r.json()["token"]


@pytest.fixture
def world(api, github_standin):
    standin = github_standin
    standin.create_repo(REPO, {"app.py": "print('v1')\n"})
    r = api.post("/api/forges", json={"kind": "github", "name": "gh", "base_url": standin.base_url,
                                      "api_url": standin.api_url, "credential": standin.token})
    assert r.status_code == 201, r.text
    daemons = {name: _daemon(api, name) for name in ("ran", "other")}
    tasks = {}
    for name in daemons:  # an agent of each daemon, a task of each
        r = api.post("/api/agents", json={"name": f"bot-{name}", "provider": "command", "command": ["true"],
                                          "runtime": name})
        assert r.status_code == 201, r.text
        assert api.post("/api/issues", json={"title": name, "assignee": f"bot-{name}"}).status_code == 201
        claimed = api.as_(daemons[name]).post("/api/daemon/claim", json={"limit": 1}).json()
        assert claimed["tasks"], claimed
        task = claimed["tasks"][0]["task"]
        assert api.as_(daemons[name]).post(f"/api/daemon/tasks/{task['id']}/status",
                                           json={"status": "running"}).status_code == 200
        tasks[name] = task["id"]
    return api, standin, daemons, tasks


def _branch(task_id: str, standin) -> dict[str, str]:
    return {"mode": "worktree", "branch": f"agent/bot/{task_id}", "repo_path": "/somewhere/shop",
            "origin_url": standin.repo(REPO).clone_url}


def _target(api, daemon: str, task_id: str, standin) -> dict:
    r = api.as_(daemon).post(f"/api/daemon/tasks/{task_id}/push-target", json=_branch(task_id, standin))
    assert r.status_code == 200, r.text
    assert all(s not in r.text for s in _secrets(standin)), "a push target carries the forge's token"
    return r.json()["forge_push"]


def _push(api, task_id: str, pass_: str, body: bytes, **headers: str):
    return api.client.post(f"/api/daemon/tasks/{task_id}/git/git-receive-pack", content=body, headers={
        **_basic(pass_), "Content-Type": "application/x-git-receive-pack-request", **headers})


def test_targets_and_the_finish_carry_a_relay_pass_never_the_forge_token(world):
    api, standin, daemons, tasks = world
    task_id = tasks["ran"]
    target = _target(api, daemons["ran"], task_id, standin)
    assert target["remote_url"] == f"/api/daemon/tasks/{task_id}/git"
    assert target["username"] == relaypass.USERNAME and target["token"].startswith("pxr1.")
    r = api.as_(daemons["ran"]).get(f"/api/daemon/tasks/{task_id}/forge-target")
    # (the running task's own review is not reported yet: no branch to name, nothing of the forge shown)
    assert r.status_code == 404 and all(s not in r.text for s in _secrets(standin))
    done = api.as_(daemons["ran"]).post(f"/api/daemon/tasks/{task_id}/finish", json={
        "status": "completed", "review": {**_branch(task_id, standin), "tip": "c" * 40}})
    assert done.status_code == 200, done.text
    assert done.json()["forge_push"]["remote_url"] == f"/api/daemon/tasks/{task_id}/git"
    assert all(s not in done.text for s in _secrets(standin)), "the finish's answer carries the forge's token"
    r = api.as_(daemons["ran"]).get(f"/api/daemon/tasks/{task_id}/forge-target")
    assert r.status_code == 200 and r.json()["token"].startswith("pxr1.")
    assert all(s not in r.text for s in _secrets(standin)), "forge-target carries the forge's token"


def test_the_pass_pushes_its_branch_only_and_never_deletes_it(world):
    api, standin, daemons, tasks = world
    task_id = tasks["ran"]
    target = _target(api, daemons["ran"], task_id, standin)
    main = standin.branch_head(REPO, "main")
    side = standin.commit_on_server(REPO, "side", {"app.py": "print('side')\n"})  # a commit the forge holds
    refs = api.client.get(f"/api/daemon/tasks/{task_id}/git/info/refs", params={"service": "git-receive-pack"},
                           headers=_basic(target["token"]))
    assert refs.status_code == 200 and refs.headers["content-type"] == "application/x-git-receive-pack-advertisement"
    assert main.encode() in refs.content and all(s not in refs.text for s in _secrets(standin))
    forwarded = len(standin.git_requests)

    for updates in ([(main, side, "refs/heads/main")],  # another ref
                    [(ZERO, side, f"refs/heads/{target['branch']}"), (main, side, "refs/heads/main")],  # one of two
                    [(ZERO, side, "refs/tags/v1")]):
        r = _push(api, task_id, target["token"], _commands(*updates) + EMPTY_PACK)
        assert r.status_code == 403 and target["branch"] in r.text, r.text
    assert standin.branch_head(REPO, "main") == main and len(standin.git_requests) == forwarded  # nothing sent

    r = _push(api, task_id, target["token"], _commands((ZERO, side, f"refs/heads/{target['branch']}")) + EMPTY_PACK)
    assert r.status_code == 200 and b"ok refs/heads/" in r.content, r.content  # the same request, its own branch
    assert standin.branch_head(REPO, target["branch"]) == side
    r = _push(api, task_id, target["token"], _commands((side, ZERO, f"refs/heads/{target['branch']}")))
    assert r.status_code == 403 and "delete" in r.text
    assert standin.branch_head(REPO, target["branch"]) == side
    r = _push(api, task_id, target["token"], b"not a pkt-line")
    assert r.status_code == 400


def test_a_pass_opens_its_own_tasks_relay_only(world, monkeypatch):
    api, standin, daemons, tasks = world
    mine = _target(api, daemons["ran"], tasks["ran"], standin)["token"]
    theirs = _target(api, daemons["other"], tasks["other"], standin)["token"]
    path = f"/api/daemon/tasks/{tasks['ran']}/git/info/refs"
    params = {"service": "git-receive-pack"}
    before = len(standin.git_requests)

    def refs(headers: dict[str, str], where: str = path):
        return api.client.get(where, params=params, headers=headers)

    assert refs(_basic(theirs)).status_code == 404  # another daemon's pass (its own task's): not here
    assert refs(_basic(mine), f"/api/daemon/tasks/{tasks['other']}/git/info/refs").status_code == 404
    for headers in ({}, _basic("garbled"), _basic(mine[:-4] + "AAAA"), _basic(mine, "x-access-token"),
                    {"Authorization": "Bearer " + daemons["ran"]}, {"Authorization": "Basic !!"}):
        r = refs(headers)
        assert r.status_code == 401 and r.headers["www-authenticate"] == 'Basic realm="Predictor X relay"', headers
    forged = relaypass.sign(tasks["ran"], "not-the-daemon", "agent/bot/x", "c", standin.repo(REPO).clone_url)
    assert refs(_basic(forged)).status_code == 404  # signed, but the task is not that daemon's
    real_clock = relaypass.clock
    monkeypatch.setattr(relaypass, "clock", lambda: real_clock() + relaypass.VALID_S + 1)
    r = refs(_basic(mine))
    assert r.status_code == 401 and "expired" in r.text
    monkeypatch.setattr(relaypass, "clock", real_clock)
    assert len(standin.git_requests) == before  # none of those reached the forge…
    assert refs(_basic(mine)).status_code == 200  # …and the pass itself does
    assert standin.git_requests[before:] == [(f"/{REPO}.git/info/refs?service=git-receive-pack", 200)]


def test_a_fetch_only_for_a_task_that_continues_a_branch(world):
    api, standin, daemons, tasks = world
    mine = _target(api, daemons["ran"], tasks["ran"], standin)["token"]
    r = api.client.get(f"/api/daemon/tasks/{tasks['ran']}/git/info/refs", params={"service": "git-upload-pack"},
                        headers=_basic(mine))
    assert r.status_code == 403 and "continues no branch" in r.text
    r = api.client.post(f"/api/daemon/tasks/{tasks['ran']}/git/git-upload-pack", content=b"0000",
                         headers={**_basic(mine), "Content-Type": "application/x-git-upload-pack-request"})
    assert r.status_code == 403
    r = api.client.get(f"/api/daemon/tasks/{tasks['ran']}/git/info/refs", params={"service": "git-archive"},
                        headers=_basic(mine))
    assert r.status_code == 403


def _big_commit(tmp_path) -> tuple[str, bytes]:
    """A root commit holding 11 MiB that does not compress, and its pack."""
    def git(*args: str, **kw) -> bytes:
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True, timeout=60,
                              **kw).stdout
    git("init", "-q")
    (tmp_path / "big.bin").write_bytes(os.urandom(11 * 1024 * 1024))
    git("add", "big.bin")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "big")
    sha = git("rev-parse", "HEAD").decode().strip()
    return sha, git("pack-objects", "--stdout", "--revs", "-q", input=f"{sha}\n".encode())


def test_a_pack_streams_past_the_body_limit_under_the_relays_own(world, monkeypatch, tmp_path):
    """BodyGuard's 10 MiB is for the API's JSON; a pack goes on to the forge under
    PREDICTORX_MAX_PUSH_BYTES (413 past it, before the forge hears of it)."""
    api, standin, daemons, tasks = world
    target = _target(api, daemons["ran"], tasks["ran"], standin)
    sha, pack = _big_commit(tmp_path)
    body = _commands((ZERO, sha, f"refs/heads/{target['branch']}")) + pack
    assert len(body) > 10 * 1024 * 1024
    monkeypatch.setenv("PREDICTORX_MAX_PUSH_BYTES", str(10 * 1024 * 1024))
    before = len(standin.git_requests)
    r = _push(api, tasks["ran"], target["token"], body)
    assert r.status_code == 413 and "PREDICTORX_MAX_PUSH_BYTES" in r.text
    assert len(standin.git_requests) == before and standin.branch_head(REPO, target["branch"]) is None
    monkeypatch.delenv("PREDICTORX_MAX_PUSH_BYTES")
    r = _push(api, tasks["ran"], target["token"], body)
    assert r.status_code == 200 and b"ok refs/heads/" in r.content, r.content[:300]
    assert standin.branch_head(REPO, target["branch"]) == sha


def test_a_pass_made_before_its_connection_moved_host_sends_nothing(world):
    """An owner moves the connection to another host (with its new token): a pass made before names
    the old host's repository, and the new token must not go there."""
    api, standin, daemons, tasks = world
    mine = _target(api, daemons["ran"], tasks["ran"], standin)["token"]
    conn = api.get("/api/forges").json()
    conn = (conn.get("connections") if isinstance(conn, dict) else conn)[0]
    r = api.patch(f"/api/forges/{conn['id']}", json={"base_url": "http://127.0.0.2:9", "api_url": "http://127.0.0.2:9/api",
                                                      "credential": "moved-token-0000"})
    assert r.status_code == 200, r.text
    before = len(standin.git_requests)
    r = api.client.get(f"/api/daemon/tasks/{tasks['ran']}/git/info/refs", params={"service": "git-receive-pack"},
                       headers=_basic(mine))
    assert r.status_code == 409 and "no longer belongs" in r.text, r.text
    assert len(standin.git_requests) == before


def test_a_pass_closes_when_its_daemon_is_revoked(world):
    """A member is removed: their daemons' tokens are revoked (R-SEC-5), and a relay pass one of those
    daemons was handed — for a task it finished, which keeps its daemon — must not push with the
    workspace's forge credential for the rest of its ten minutes."""
    api, standin, _, _ = world
    ws = api.get("/api/workspaces").json()[0]["id"]
    r = api.post(f"/api/workspaces/{ws}/members", json={"name": "Ann", "role": "member"})
    assert r.status_code == 201, r.text
    ann_id, ann = r.json()["user_id"], api.as_(r.json()["token"])
    daemon = api.as_(_daemon(ann, "ann-laptop"))
    assert ann.post("/api/agents", json={"name": "bot-ann", "provider": "command", "command": ["true"],
                                         "runtime": "ann-laptop"}).status_code == 201
    assert ann.post("/api/issues", json={"title": "ann's", "assignee": "bot-ann"}).status_code == 201
    task_id = daemon.post("/api/daemon/claim", json={"limit": 1}).json()["tasks"][0]["task"]["id"]
    assert daemon.post(f"/api/daemon/tasks/{task_id}/status", json={"status": "running"}).status_code == 200
    done = daemon.post(f"/api/daemon/tasks/{task_id}/finish", json={
        "status": "completed", "review": {**_branch(task_id, standin), "tip": "c" * 40}})
    assert done.status_code == 200, done.text
    pass_ = done.json()["forge_push"]["token"]
    path = f"/api/daemon/tasks/{task_id}/git/info/refs"
    params = {"service": "git-receive-pack"}
    assert api.client.get(path, params=params, headers=_basic(pass_)).status_code == 200  # (it opened)

    assert api.delete(f"/api/workspaces/{ws}/members/{ann_id}").status_code == 204
    assert daemon.post("/api/daemon/heartbeat", json={"task_ids": []}).status_code == 401
    before = len(standin.git_requests)
    r = api.client.get(path, params=params, headers=_basic(pass_))
    assert r.status_code in (401, 404), (r.status_code, r.text[:200])
    side = standin.commit_on_server(REPO, "side", {"app.py": "print('side')\n"})
    branch = done.json()["forge_push"]["branch"]
    r = _push(api, task_id, pass_, _commands((ZERO, side, f"refs/heads/{branch}")) + EMPTY_PACK)
    assert r.status_code in (401, 404), (r.status_code, r.text[:200])
    assert len(standin.git_requests) == before and standin.branch_head(REPO, branch) is None


def test_a_forwarded_header_the_forge_request_cannot_carry_is_a_sentence_not_a_500(world):
    """HTTP header values arrive as Latin-1; the relay forwards git's own headers (Git-Protocol,
    User-Agent, …) and a byte past ASCII in one made building the forge's request raise: a 500."""
    api, standin, daemons, tasks = world
    target = _target(api, daemons["ran"], tasks["ran"], standin)
    before = len(standin.git_requests)
    for name in ("Git-Protocol", "User-Agent", "Accept"):
        r = api.client.get(f"/api/daemon/tasks/{tasks['ran']}/git/info/refs", params={"service": "git-receive-pack"},
                           headers={**_basic(target["token"]), name: b"version=2\xe9"})
        assert r.status_code == 400, (name, r.status_code, r.text[:200])
        assert all(s not in r.text for s in _secrets(standin))
    assert len(standin.git_requests) == before


def test_a_daemon_naming_the_default_branch_gets_no_pass_for_it(world):
    """The pass's branch is the one the daemon names in its push target (no PR yet): naming `main`
    got a pass for refs/heads/main, and the relay force-updated the repository's default branch
    with the workspace's credential. A task's branch is an `agent/...` one (docs/forges.md)."""
    api, standin, daemons, tasks = world
    task_id = tasks["ran"]
    main = standin.branch_head(REPO, "main")
    side = standin.commit_on_server(REPO, "side", {"app.py": "print('side')\n"})
    r = api.as_(daemons["ran"]).post(f"/api/daemon/tasks/{task_id}/push-target",
                                     json={**_branch(task_id, standin), "branch": "main"})
    if r.status_code == 200 and r.json().get("forge_push"):  # (none: nothing to push with)
        target = r.json()["forge_push"]
        pushed = _push(api, task_id, target["token"], _commands((main, side, "refs/heads/main")) + EMPTY_PACK)
        assert standin.branch_head(REPO, "main") == main, f"the relay moved main ({pushed.status_code})"
        assert target["branch"] != "main" and pushed.status_code == 403, pushed.text
    else:
        assert r.status_code in (200, 400, 404, 422), r.text
    assert standin.branch_head(REPO, "main") == main
