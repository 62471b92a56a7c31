"""hmans/beans' own `.beans/` folder (tests/fixtures/hmans-beans, Apache-2.0, commit in its README):
every file loads, and a round trip — through the file reader and through the API's import and
export — gives the same bytes (issue 24 item 4, R-HAR-11)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from predictorx.workflows import beanfile

FOLDER = Path(__file__).parents[1] / "fixtures" / "hmans-beans" / ".beans"


def _corpus() -> dict[str, str]:
    """As `predictorx bean import` reads a folder: every .md below it, dot-folders skipped."""
    return {p.relative_to(FOLDER).as_posix(): p.read_text(encoding="utf-8") for p in sorted(FOLDER.rglob("*.md"))
            if not any(part.startswith(".") for part in p.relative_to(FOLDER).parts[:-1])}


def test_every_file_loads_and_renders_back_byte_for_byte():
    files = _corpus()
    assert len(files) == 254 and sum(name.startswith("archive/") for name in files) == 139
    loaded = {name: beanfile.load(text, name) for name, text in files.items()}
    for name, bean in loaded.items():
        d = {**bean.__dict__, "key": bean.key}
        assert beanfile.dump(d) == files[name], name
    assert {b.key for b in loaded.values()} == {beanfile.parse_filename(n) for n in files}  # ids from names
    b = loaded["beans-18db--beans-milestones-command.md"]
    assert (b.key, b.title, b.status, b.type, b.priority, b.order, b.parent) == (
        "beans-18db", "beans milestones command", "created", "task", "normal", "VVt", "beans-mmyp")
    assert b.created_at == datetime(2025, 12, 27, 21, 44, 5, tzinfo=timezone.utc)
    assert b.body.startswith("Add `beans milestones` command") and "\n## Behavior\n" in b.body
    tagged = [x for x in loaded.values() if x.tags]
    assert len(tagged) == 14 and all(isinstance(t, str) for x in tagged for t in x.tags)
    assert sum(1 for x in loaded.values() if x.blocked_by) == 2
    assert sum(1 for x in loaded.values() if x.draft) == 11  # beans' draft is kept apart from todo
    assert sum(1 for x in loaded.values() if x.priority is None) == 13  # absent stays absent
    quoted = [n for n, t in files.items() if '\norder: "' in t]
    assert quoted and all(beanfile.dump({**loaded[n].__dict__}) == files[n] for n in quoted)


def test_corpus_round_trips_through_import_and_export(api):
    files = _corpus()
    n = api.post("/api/issues", json={"title": "beans' own beans"}).json()["number"]
    r = api.post(f"/api/issues/{n}/beans/import", json={"files": files})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["counts"] == {"created": 254, "updated": 0, "unchanged": 0, "refused": 0}
    assert next(f for f in out["files"] if f["file"] == "beans-18db--beans-milestones-command.md")["key"] == "beans-18db"
    exported = api.get(f"/api/issues/{n}/beans/export").json()
    assert exported["files"] == files  # every path and every byte
    assert set(exported["etags"]) == {beanfile.parse_filename(name) for name in files}

    again = api.post(f"/api/issues/{n}/beans/import", json={"files": files}).json()
    assert again["counts"] == {"created": 0, "updated": 0, "unchanged": 254, "refused": 0}

    name = "beans-18db--beans-milestones-command.md"
    changed = dict(files)
    changed[name] = files[name].replace("status: todo", "status: completed").replace(
        "priority: normal", "priority: high\ntags:\n    - cli")
    r = api.post(f"/api/issues/{n}/beans/import", json={"files": changed}).json()
    assert r["counts"] == {"created": 0, "updated": 1, "unchanged": 253, "refused": 0}
    entry = next(f for f in r["files"] if f["file"] == name)
    assert entry["result"] == "updated" and entry["changed"] == ["priority", "status", "tags"]
    bean = api.get(f"/api/issues/{n}/beans/beans-18db").json()
    assert (bean["status"], bean["priority"], bean["tags"], bean["version"]) == ("resolved", "high", ["cli"], 2)
    assert bean["parent"] == "beans-mmyp" and bean["order"] == "VVt"
    assert api.get(f"/api/issues/{n}/beans/export").json()["files"][name] == changed[name]


@pytest.mark.parametrize("name", ["../x.md", "/abs.md", ".worktrees/x.md", "a/../b.md", "x.txt"])
def test_a_file_name_outside_the_folder_is_refused(name):
    with pytest.raises(beanfile.BeanFileError, match="is not a bean file name"):
        beanfile.load("---\ntitle: x\nstatus: todo\n---\n", name)


def test_yaml_is_read_as_beans_go_structs_read_it_and_written_as_yaml_v3_writes_it():
    b = beanfile.load("---\ntitle: yes\nstatus: draft\norder: 07\nparent: null\ntags: [a, b]\nx: &a [1]\n---\n",
                      "k-1--x.md")
    assert (b.title, b.status, b.draft, b.order, b.parent, b.tags) == ("yes", "created", True, "07", None, ["a", "b"])
    assert b.warnings == ["fields beans does not know were left out: x"] and b.body == ""
    out = beanfile.dump({**b.__dict__, "title": "1.0", "order": "07", "tags": ["a", "b"]})
    assert out == '---\n# k-1\ntitle: "1.0"\nstatus: draft\ntags:\n    - a\n    - b\norder: "07"\n---\n\n'
    for bad, sentence in [("title: [x\n", "not valid YAML (line 3)"), ("- a\n", "not a YAML mapping"),
                          ("title: x\ntags: {a: 1}\n", "tags must be a list of strings"),
                          ("title: x\ncreated_at: soon\n", "created_at 'soon' is not an RFC 3339 time"),
                          ("x: " + "[" * 5000 + "]" * 5000 + "\n", "nests too deep"), ("title: ' '\n", "has no title")]:
        with pytest.raises(beanfile.BeanFileError, match=sentence.replace("(", r"\(").replace(")", r"\)")):
            beanfile.load(f"---\n{bad}---\n", "k-1.md")
