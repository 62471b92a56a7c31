"""Importing an hmans/beans folder (issue 24 item 4, R-HAR-11): per-file answers and the valid files
imported (`strict`: all or none), beans matched by id and never by title, a changed file updating
the bean under the etag rules, the parent a bean id or nothing, a workflow's bean left to its steps.
Before: the reader refused YAML lists, one bad file refused the folder, two beans with one title
merged, re-importing a changed status changed nothing and the export wrote `parent: issue-N`."""

from __future__ import annotations

from tests.workflows.test_bean_governance import _paper_at_plan


def _file(title: str, status: str = "todo", extra: str = "", body: str = "Do it.") -> str:
    return (f"---\n# ignored\ntitle: {title}\nstatus: {status}\ntype: task\npriority: normal\n"
            f"created_at: 2026-01-02T03:04:05Z\nupdated_at: 2026-01-02T03:04:05Z\n{extra}---\n\n{body}\n")


def _issue(api) -> int:
    return api.post("/api/issues", json={"title": "Import beans"}).json()["number"]


def test_two_beans_with_one_title_stay_two_and_are_named_by_id(api):
    n = _issue(api)
    files = {"p-aaaa--same.md": _file("Same"), "p-bbbb--same.md": _file("Same", "in-progress")}
    out = api.post(f"/api/issues/{n}/beans/import", json={"files": files}).json()
    assert out["counts"]["created"] == 2
    beans = api.get(f"/api/issues/{n}/beans").json()
    assert sorted((b["key"], b["title"], b["status"]) for b in beans) == [
        ("p-aaaa", "Same", "created"), ("p-bbbb", "Same", "in-progress")]
    ambiguous = api.get(f"/api/issues/{n}/beans/Same")
    assert ambiguous.status_code == 409 and "name one by its id: p-aaaa, p-bbbb" in ambiguous.json()["detail"]
    assert api.get(f"/api/issues/{n}/beans/p-bbbb").json()["status"] == "in-progress"
    # the file's own id wins over a title: renaming one in its file updates that one only
    files["p-aaaa--same.md"] = _file("Renamed")
    again = api.post(f"/api/issues/{n}/beans/import", json={"files": files}).json()
    assert again["counts"] == {"created": 0, "updated": 1, "unchanged": 1, "refused": 0}
    assert api.get(f"/api/issues/{n}/beans/p-aaaa").json()["title"] == "Renamed"


def test_each_file_is_answered_and_the_valid_ones_imported_strict_imports_none(api):
    n = _issue(api)
    files = {"ok-1--fine.md": _file("Fine", extra="tags:\n    - a\n    - b\nblocking:\n    - ok-2\n"),
             "ok-2--also.md": _file("Also"),
             "bad-1--yaml.md": "---\ntitle: [unclosed\nstatus: todo\n---\n",
             "bad-2--status.md": _file("Odd", status="doing"),
             "archive/ok-2--twin.md": _file("Twin")}
    strict = api.post(f"/api/issues/{n}/beans/import", json={"files": files, "strict": True})
    assert strict.status_code == 422 and "3 of 5 files can not be imported, so none was" in strict.json()["detail"]
    assert api.get(f"/api/issues/{n}/beans").json() == []
    r = api.post(f"/api/issues/{n}/beans/import", json={"files": files})
    assert r.status_code == 200
    by_file = {f["file"]: f for f in r.json()["files"]}
    assert {k: v["result"] for k, v in by_file.items()} == {
        "ok-1--fine.md": "created", "ok-2--also.md": "created", "bad-1--yaml.md": "refused",
        "bad-2--status.md": "refused", "archive/ok-2--twin.md": "refused"}
    assert "front matter is not valid YAML" in by_file["bad-1--yaml.md"]["reason"]
    assert "status 'doing' is not one of todo, draft" in by_file["bad-2--status.md"]["reason"]
    assert "has the bean id 'ok-2' of" in by_file["archive/ok-2--twin.md"]["reason"]
    fine = api.get(f"/api/issues/{n}/beans/ok-1").json()
    assert (fine["tags"], fine["blocking"], fine["created_at"][:19]) == (["a", "b"], ["ok-2"], "2026-01-02T03:04:05")


def test_a_changed_file_updates_the_bean_unless_it_changed_here_since_the_export(api):
    n = _issue(api)
    api.post(f"/api/issues/{n}/beans/import", json={"files": {"e-1--edit.md": _file("Edit")}})
    exported = api.get(f"/api/issues/{n}/beans/export").json()
    assert exported["etags"] == {"e-1": 1}
    edited = {"e-1--edit.md": exported["files"]["e-1--edit.md"].replace("status: todo", "status: completed")}
    api.post(f"/api/issues/{n}/beans/e-1/note", json={"text": "changed here meanwhile"})  # version 2
    r = api.post(f"/api/issues/{n}/beans/import", json={"files": edited, "etags": exported["etags"]}).json()
    assert r["counts"]["refused"] == 1 and "is at version 2 here, not 1" in r["files"][0]["reason"]
    assert api.get(f"/api/issues/{n}/beans/e-1").json()["status"] == "created"
    strict = api.post(f"/api/issues/{n}/beans/import", json={"files": edited, "etags": exported["etags"],
                                                            "strict": True})
    assert strict.status_code == 409
    r = api.post(f"/api/issues/{n}/beans/import", json={"files": edited, "etags": {"e-1": 2}}).json()
    assert r["files"][0]["result"] == "updated" and r["files"][0]["changed"] == ["status"]
    bean = api.get(f"/api/issues/{n}/beans/e-1").json()
    assert (bean["status"], bean["version"]) == ("resolved", 3)
    assert bean["notes"][-1]["op"] == "import" and "status created → resolved" in bean["notes"][-1]["text"]


def test_the_parent_is_a_bean_id_or_nothing(api):
    n = _issue(api)
    files = {"c-1--child.md": _file("Child", extra="parent: e-9\n"),
             "o-1--old.md": _file("Old export", extra="parent: issue-3\n")}
    r = api.post(f"/api/issues/{n}/beans/import", json={"files": files}).json()
    old = next(f for f in r["files"] if f["file"] == "o-1--old.md")
    assert old["result"] == "created" and old["warnings"] == ["parent 'issue-3' is an issue, not a bean: left out"]
    assert api.get(f"/api/issues/{n}/beans/o-1").json()["parent"] is None
    assert api.get(f"/api/issues/{n}/beans/c-1").json()["parent"] == "e-9"
    api.post(f"/api/issues/{n}/beans", json={"title": "Made here"})
    out = api.get(f"/api/issues/{n}/beans/export").json()["files"]
    assert "\nparent: e-9\n" in out["c-1--child.md"] and not any("parent: issue-" in t for t in out.values())


def test_import_leaves_the_status_of_a_workflows_bean_to_its_steps(api):
    n, agent = _paper_at_plan(api)
    exported = agent.get(f"/api/issues/{n}/beans/export").json()["files"]
    name, text = next(iter(exported.items()))
    assert "status: in-progress" in text
    r = agent.post(f"/api/issues/{n}/beans/import",
                   json={"files": {name: text.replace("status: in-progress", "status: completed")}}).json()
    assert r["files"][0]["result"] == "refused"
    assert "belongs to workflow 'authoring-a-paper'" in r["files"][0]["reason"]
    assert agent.get(f"/api/issues/{n}/beans/Introduction").json()["status"] == "in-progress"


def test_a_field_too_long_for_its_column_refuses_that_file_only(api):
    n = _issue(api)
    files = {"l-1--long.md": _file("Long", extra=f"type: {'x' * 41}\n"), "l-2--fine.md": _file("Fine")}
    r = api.post(f"/api/issues/{n}/beans/import", json={"files": files}).json()
    assert r["counts"] == {"created": 1, "updated": 0, "unchanged": 0, "refused": 1}
    assert "type must be a string of up to 40 characters" in r["files"][0]["reason"]


def test_one_title_created_at_once_from_many_requests_is_one_bean(api):
    """Titles are no longer unique in the table (imports may repeat one); create still is idempotent."""
    from concurrent.futures import ThreadPoolExecutor

    n = _issue(api)
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda _: api.post(f"/api/issues/{n}/beans", json={"title": "Once"}), range(6)))
    assert all(a.status_code == 200 for a in answers)
    assert sum(a.json()["created"] for a in answers) == 1 and len({a.json()["id"] for a in answers}) == 1
    assert len(api.get(f"/api/issues/{n}/beans").json()) == 1


def test_a_bean_made_here_carries_the_beans_fields_and_exports_them(api):
    n = _issue(api)
    epic = api.post(f"/api/issues/{n}/beans", json={"title": "Epic", "type": "epic"}).json()
    child = api.post(f"/api/issues/{n}/beans", json={"title": "Child", "type": "feature", "priority": "high",
                                                     "tags": ["cli", "cli"], "parent": epic["key"],
                                                     "blocking": [epic["key"]]}).json()
    assert (child["type"], child["tags"], child["parent"], child["blocking"]) == (
        "feature", ["cli"], epic["key"], [epic["key"]])
    text = api.get(f"/api/issues/{n}/beans/export").json()["files"][f"{child['key']}--child.md"]
    assert ("type: feature\npriority: high\ntags:\n    - cli\ncreated_at: " in text
            and f"\nparent: {epic['key']}\nblocking:\n    - {epic['key']}\n---\n" in text)
    for bad, sentence in [({"parent": "issue-3"}, "never an issue"), ({"tags": ["Big Tag"]}, "is not a beans tag"),
                          ({"type": "Epic!"}, "type is one lower-case word")]:
        r = api.post(f"/api/issues/{n}/beans", json={"title": "Bad", **bad})
        assert r.status_code == 422 and sentence in r.json()["detail"], r.text
