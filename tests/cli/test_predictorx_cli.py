"""The seeds' commands, exactly as written, against a real server; errors are one sentence on
stderr with a non-zero exit, and change nothing."""

from __future__ import annotations

import json
import uuid

import pytest

from predictorx.program import main

from e2e.harness import Server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("cli")
    s = Server(base / "home", f"sqlite:///{base / 'px.db'}")
    yield s
    s.stop()


@pytest.fixture
def px(server, monkeypatch, capsys):
    """Run `predictorx ARGS` in-process as the server's owner; returns (exit code, stdout, stderr)."""
    monkeypatch.setenv("PREDICTORX_HOME", str(server.home))

    def run(*args: str) -> tuple[int, str, str]:
        code = 0
        try:
            main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        out = capsys.readouterr()
        return code, out.out, out.err
    return run


def _ok(result):
    code, out, err = result
    assert code == 0, err
    return out


def test_seed_commands_as_written(px, server):
    out = _ok(px("project", "create", "--title", "Agent UX 2026", "--repo", "https://github.com/org/repo",
                 "--repo", "git@gitea.example.com:org/other.git", "--output", "json"))
    project = json.loads(out)
    pid = project["id"]
    assert [r["resource_ref"]["url"] for r in project["resources"]] == [
        "https://github.com/org/repo", "git@gitea.example.com:org/other.git"]

    _ok(px("project", "resource", "add", pid, "--type", "github_repo", "--url", "https://gitlab.example.com/org/api", "--ref", "main"))
    daemon = str(uuid.uuid4())
    code, _, err = px("project", "resource", "add", pid, "--type", "local_directory", "--local-path", "/srv/x",
                      "--daemon-id", daemon)
    assert code == 1 and "not registered in this workspace" in err and "predictorx daemon start" in err
    # A local folder names a registered daemon of the workspace (R-SEC-2): the owner's machine.
    server.api("POST", "/api/daemon/register", {"daemon_id": daemon, "name": "box", "capabilities": ["local-worktree-v1"],
                                                 "runtimes": [{"provider": "command"}]})
    _ok(px("project", "resource", "add", pid, "--type", "local_directory", "--local-path", "/srv/checkout",
           "--daemon-id", daemon, "--ref-label", "main checkout", "--execution-mode", "worktree"))
    rows = json.loads(_ok(px("project", "resource", "list", pid, "--output", "json")))
    assert [r["resource_type"] for r in rows] == ["github_repo", "github_repo", "github_repo", "local_directory"]
    assert rows[2]["resource_ref"] == {"url": "https://gitlab.example.com/org/api", "ref": "main"}
    local = rows[3]
    assert local["label"] == "main checkout"
    assert local["resource_ref"] == {"local_path": "/srv/checkout", "daemon_id": daemon, "execution_mode": "worktree"}

    _ok(px("project", "resource", "update", pid, local["id"], "--local-path", "/srv/new/path"))
    _ok(px("project", "resource", "update", pid, local["id"], "--execution-mode", "in_place"))
    got = json.loads(_ok(px("project", "resource", "list", pid, "--output", "json")))[3]
    assert got["resource_ref"] == {"local_path": "/srv/new/path", "daemon_id": daemon, "execution_mode": "in_place"}
    assert got["label"] == "main checkout"

    code, _, err = px("project", "resource", "add", pid, "--type", "notion_page", "--ref", '{"page_id":"abc","title":"Spec"}')
    assert code == 1 and "unknown resource type 'notion_page'" in err and "github_repo" in err

    _ok(px("project", "resource", "remove", pid, local["id"]))
    assert len(json.loads(_ok(px("project", "resource", "list", pid, "--output", "json")))) == 3
    table = _ok(px("project", "resource", "list", pid))
    assert "https://gitlab.example.com/org/api" in table

    assert [d["id"] for d in json.loads(_ok(px("daemon", "list", "--output", "json")))] == [daemon]
    _ok(px("daemon", "list"))


def test_generic_json_ref_reaches_the_validator(px):
    pid = json.loads(_ok(px("project", "create", "--title", "J", "--output", "json")))["id"]
    _ok(px("project", "resource", "add", pid, "--type", "github_repo",
           "--ref", '{"url": "file:///srv/repo.git", "ref": "v1.2"}'))
    rows = json.loads(_ok(px("project", "resource", "list", pid, "--output", "json")))
    assert rows[0]["resource_ref"] == {"url": "file:///srv/repo.git", "ref": "v1.2"}


def test_bad_repo_aborts_project_creation(px):
    before = _ok(px("project", "list", "--output", "json"))
    code, out, err = px("project", "create", "--title", "Half", "--repo", "https://github.com/org/ok",
                        "--repo", "not a url")
    assert code == 1 and out == ""
    assert err.startswith("predictorx: ") and "not a git URL" in err and err.count("\n") == 1
    assert _ok(px("project", "list", "--output", "json")) == before


@pytest.mark.parametrize("args,expected", [
    (("project", "get", "nope"), "not found"),
    (("project", "resource", "add", "nope", "--type", "github_repo", "--url", "https://h/o/r"), "not found"),
    (("issue", "get", "999999"), "not found"),
    (("task", "cancel", "nope"), "not found"),
    (("agent", "create", "--name", "x", "--provider", "nonsense"), "unknown provider"),
    (("agent", "create", "--name", "bad name!", "--provider", "claude"), "agent name"),
    (("issue", "create", "--title", "t", "--assignee", "nobody-here"), "no agent or member"),
])
def test_errors_are_one_sentence_and_nonzero(px, args, expected):
    code, out, err = px(*args)
    assert code != 0 and out == ""
    assert expected in err and err.startswith("predictorx: ")


def test_malformed_json_ref_is_a_usage_error(px):
    pid = json.loads(_ok(px("project", "create", "--title", "K", "--output", "json")))["id"]
    code, _, err = px("project", "resource", "add", pid, "--type", "notion_page", "--ref", '{"page_id": ')
    assert code == 2 and "does not parse" in err
    assert json.loads(_ok(px("project", "resource", "list", pid, "--output", "json"))) == []


def test_relative_local_path_is_refused(px):
    pid = json.loads(_ok(px("project", "create", "--title", "L", "--output", "json")))["id"]
    code, _, err = px("project", "resource", "add", pid, "--type", "local_directory", "--local-path", "rel/dir",
                      "--daemon-id", str(uuid.uuid4()))
    assert code == 1 and "absolute" in err
    code, _, err = px("project", "resource", "add", pid, "--type", "local_directory", "--local-path", "/srv/x",
                      "--daemon-id", "not-a-uuid")
    assert code == 1 and "UUID" in err


def test_issue_agent_and_workspace_commands(px):
    _ok(px("agent", "create", "--name", "scripted", "--provider", "command", "--command", "sh -c 'echo hi'"))
    agents = json.loads(_ok(px("agent", "list", "--output", "json")))
    assert any(a["name"] == "scripted" and a["command"] == ["sh", "-c", "echo hi"] for a in agents)
    issue = json.loads(_ok(px("issue", "create", "--title", "Hello", "--body", "text", "--output", "json")))
    n = str(issue["number"])
    _ok(px("issue", "comment", n, "looks good"))
    got = json.loads(_ok(px("issue", "get", f"#{n}", "--output", "json")))
    assert got["comments"][0]["body"] == "looks good"
    out = _ok(px("issue", "assign", n, "--agent", "scripted"))
    assert "queued" in out
    runs = json.loads(_ok(px("issue", "runs", n, "--output", "json")))
    assert runs[0]["status"] == "queued" and runs[0]["agent_name"] == "scripted"
    _ok(px("task", "cancel", runs[0]["id"]))
    assert json.loads(_ok(px("task", "get", runs[0]["id"], "--output", "json")))["status"] == "cancelled"
    assert any(i["number"] == issue["number"] for i in json.loads(_ok(px("issue", "list", "--output", "json"))))
    _ok(px("workspace", "create", "--name", "Team B"))
    slugs = [w["slug"] for w in json.loads(_ok(px("workspace", "list", "--output", "json")))]
    assert slugs == ["default", "team-b"]


def test_no_server_configured_says_what_to_do(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PREDICTORX_HOME", str(tmp_path / "empty"))
    with pytest.raises(SystemExit) as e:
        main(["project", "list"])
    assert e.value.code == 1
    assert "predictorx up" in capsys.readouterr().err


def test_unreachable_server_says_what_to_do(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PREDICTORX_SERVER_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("PREDICTORX_TOKEN", "pxu_x")
    with pytest.raises(SystemExit) as e:
        main(["issue", "list"])
    assert e.value.code == 1 and "cannot reach" in capsys.readouterr().err


def test_login_writes_a_private_config(server, monkeypatch, capsys, tmp_path):
    home = tmp_path / "other-home"
    monkeypatch.setenv("PREDICTORX_HOME", str(home))
    with pytest.raises(SystemExit) as ok:
        main(["login", "--server-url", server.url, "--token", server.token])
    assert ok.value.code == 0
    cfg = home / "config.json"
    assert oct(cfg.stat().st_mode & 0o777) == "0o600"
    assert json.loads(cfg.read_text())["server_url"] == server.url
    with pytest.raises(SystemExit) as listed:
        main(["project", "list", "--output", "json"])
    assert listed.value.code == 0
    with pytest.raises(SystemExit) as e:
        main(["login", "--server-url", server.url, "--token", "pxu_wrong"])
    assert e.value.code == 1 and "invalid or expired token" in capsys.readouterr().err


def test_titles_are_data_not_markup(px):
    _ok(px("project", "create", "--title", "[/]", "--description", "[/red] and [bold]x"))
    out = _ok(px("project", "list"))
    assert "[/]" in out
    pid = next(p["id"] for p in json.loads(_ok(px("project", "list", "--output", "json"))) if p["title"] == "[/]")
    assert "[/red] and [bold]x" in _ok(px("project", "get", pid))


def test_a_teammate_gets_a_token_and_logs_in(px, server, monkeypatch, capsys, tmp_path):
    added = json.loads(_ok(px("workspace", "member", "add", "--name", "carol", "--output", "json")))
    assert added["role"] == "member" and added["token"].startswith("pxu_")
    assert "carol" in _ok(px("workspace", "member", "list"))
    monkeypatch.setenv("PREDICTORX_HOME", str(tmp_path / "carol"))
    with pytest.raises(SystemExit) as e:
        main(["login", "--server-url", server.url, "--token", added["token"]])
    assert e.value.code == 0 and "as carol" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["token", "create", "--name", "ci"])
    assert e.value.code == 0 and capsys.readouterr().out.strip().startswith("pxu_")


def test_agent_update_by_its_owner(px):
    _ok(px("agent", "create", "--name", "upd", "--provider", "command", "--command", "true"))
    _ok(px("agent", "update", "upd", "--command", "echo hi", "--instructions", "be brief", "--max-concurrent-tasks", "2"))
    a = {x["name"]: x for x in json.loads(_ok(px("agent", "list", "--output", "json")))}["upd"]
    assert a["command"] == ["echo", "hi"] and a["instructions"] == "be brief" and a["max_concurrent_tasks"] == 2
    code, _, err = px("agent", "update", "upd")
    assert code == 2 and "nothing to change" in err


def test_agent_delete_archive_and_restore(px, server):
    """An agent with a run is refused deletion with a sentence offering the archive; archived, it
    leaves `agent list` for `agent list --archived`; restored, it is back; one that never ran goes."""
    _ok(px("agent", "create", "--name", "worked", "--provider", "command", "--command", "true"))
    _ok(px("issue", "create", "--title", "keep my history", "--assignee", "worked"))
    code, _, err = px("agent", "delete", "worked")
    assert code != 0 and "worked has 1 run" in err and "predictorx agent archive worked" in err
    code, _, err = px("agent", "archive", "worked")  # its run is still queued
    assert code != 0 and "cancel them first" in err
    for t in server.api("GET", "/api/tasks"):
        if t["agent_name"] == "worked" and t["status"] == "queued":
            server.api("POST", f"/api/tasks/{t['id']}/cancel")
    assert "Archived agent worked" in _ok(px("agent", "archive", "worked"))
    names = lambda *extra: {a["name"] for a in json.loads(_ok(px("agent", "list", *extra, "--output", "json")))}
    assert "worked" not in names() and "worked" in names("--archived")
    assert "Restored agent worked" in _ok(px("agent", "restore", "worked"))
    assert "worked" in names()
    _ok(px("agent", "create", "--name", "never-ran", "--provider", "claude"))
    assert "Deleted agent never-ran" in _ok(px("agent", "delete", "never-ran"))
    assert "never-ran" not in names()


def test_bean_import_and_export_of_a_beans_folder(px, tmp_path):
    """hmans/beans' own folder in and out byte for byte (archive/ too); a changed file updates its
    bean; a bad file is answered on its own and the others still import (issue 24 item 4)."""
    import shutil
    from pathlib import Path

    src = tmp_path / ".beans"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "hmans-beans" / ".beans", src)
    (src / "zz-1--broken.md").write_text("---\ntitle: [\n---\n", encoding="utf-8")
    n = str(json.loads(_ok(px("issue", "create", "--title", "Beans", "--output", "json")))["number"])
    code, out, err = px("bean", "import", n, "--from", str(src))
    assert code == 1 and "1 of 255 files were not imported" in err
    assert "refused   zz-1--broken.md: zz-1--broken.md front matter is not valid YAML" in out
    assert "254 new, 0 updated, 0 unchanged, 1 refused" in out
    (src / "zz-1--broken.md").unlink()
    dst = tmp_path / "out"
    _ok(px("bean", "export", n, "--to", str(dst)))
    for p in src.rglob("*.md"):
        assert (dst / p.relative_to(src)).read_bytes() == p.read_bytes(), p
    etags = json.loads((dst / ".predictorx-etags.json").read_text())
    assert len(etags) == 254 and etags["beans-18db"] == 1
    f = dst / "beans-18db--beans-milestones-command.md"
    f.write_text(f.read_text().replace("status: todo", "status: in-progress"), encoding="utf-8")
    out = _ok(px("bean", "import", n, "--from", str(dst)))
    assert "updated   beans-18db--beans-milestones-command.md: status" in out and "253 unchanged" in out
    assert json.loads((dst / ".predictorx-etags.json").read_text())["beans-18db"] == 2
    shown = json.loads(_ok(px("bean", "show", n, "beans-18db", "--output", "json")))
    assert (shown["status"], shown["parent"]) == ("in-progress", "beans-mmyp")
    # src's copy is older (its etags file says version 1): refused, unless told to overwrite
    code, _, err = px("bean", "import", n, "--from", str(src), "--strict")
    assert code == 1 and "bean beans-18db is at version 2 here, not 1" in err and "so none was (--strict)" in err
    assert "1 updated, 253 unchanged" in _ok(px("bean", "import", n, "--from", str(src), "--ignore-etags"))
    assert json.loads(_ok(px("bean", "show", n, "beans-18db", "--output", "json")))["status"] == "created"


def test_issue_edit_and_delete(px):
    issue = json.loads(_ok(px("issue", "create", "--title", "Draft", "--output", "json")))
    n, seen = str(issue["number"]), str(issue["version"])
    out = _ok(px("issue", "edit", n, "--title", "Final title", "--body", "## Steps", "--version", seen))
    assert f"Issue #{n} “Final title” saved" in out
    got = json.loads(_ok(px("issue", "get", n, "--output", "json")))
    assert (got["title"], got["body"]) == ("Final title", "## Steps")
    code, _, err = px("issue", "edit", n, "--title", "Stale", "--version", seen)  # changed since
    assert code != 0 and "changed the title to “Final title” after you loaded this issue" in err
    code, _, err = px("issue", "edit", n)
    assert code == 2 and "nothing to change" in err
    px("issue", "comment", n, "one")
    out = _ok(px("issue", "delete", n, "--yes"))
    assert out.strip() == f"Deleted issue #{n} “Final title” and 1 comment."
    code, _, err = px("issue", "get", n)
    assert code != 0 and "not found" in err
