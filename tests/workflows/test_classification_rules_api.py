"""Issue 24 §6: the classification table is data a workspace extends (its own TOML rule files,
/api/classification/rules, `predictorx classify-rules`), and a request the table is not sure of
starts nothing: it is pending with a question that the next task's sweep carries (the prompt's
section) and a judgement answers."""

from __future__ import annotations

from predictorx.workflowmcp.sweep_text import render

GERMAN = """
language = "de"
lead = ["bitte"]
[labels]
bug_report = "ein Fehlerbericht"
content_authoring = "Inhalt schreiben"
[[signal]]
id = "de.bug.kaputt"
category = "bug_report"
weight = 5
terms = ["kaputt", "stürzt ab", "funktioniert nicht"]
[[signal]]
id = "de.author.schreib"
category = "content_authoring"
weight = 5
at = "start"
terms = ["schreib*", "entwirf", "überarbeite"]
[[folio]]
id = "de.folio.paper"
type = "paper"
terms = ["artikel*", "beweis*"]
"""


def _put(api, name: str, source: str):
    return api.client.put(f"/api/classification/rules/{name}", json={"source": source},
                          headers={"Authorization": f"Bearer {api.token}"})


def _member(api, role: str, name: str):
    ws = api.get("/api/workspaces").json()[0]["id"]
    r = api.post(f"/api/workspaces/{ws}/members", json={"name": name, "role": role})
    assert r.status_code in (200, 201), r.text
    return api.as_(r.json()["token"])


def test_a_workspace_adds_a_language_and_its_issues_are_routed_by_it(api):
    before = api.post("/api/classify", json={"text": "Der Export stürzt ab"}).json()
    assert before["method"] == "pending" and before["workflow"] is None
    r = _put(api, "german", GERMAN)
    assert r.status_code == 200, r.text
    assert [x["name"] for x in api.get("/api/classification/rules").json()] == ["german"]
    assert "de.bug.kaputt" in api.get("/api/classification/rules/german").json()["source"]
    after = api.post("/api/classify", json={"text": "Der Export stürzt ab"}).json()
    assert (after["category"], after["workflow"], after["rule"]) == ("bug_report", "bug-triage", "de.bug.kaputt")
    issue = api.post("/api/issues", json={"title": "Bitte schreib die Einleitung des Artikels"}).json()
    [c] = api.get(f"/api/issues/{issue['number']}/classifications").json()
    assert (c["method"], c["workflow"]) == ("table", "authoring-a-paper")
    assert api.delete("/api/classification/rules/german").status_code == 204
    assert api.post("/api/classify", json={"text": "Der Export stürzt ab"}).json()["method"] == "pending"
    assert api.delete("/api/classification/rules/german").status_code == 404


def test_a_workspace_file_can_silence_a_shipped_signal_by_its_id(api):
    assert api.post("/api/classify", json={"text": "Run the test suite"}).json()["category"] == "tool_invocation"
    silence = '[[signal]]\nid = "en.tool.verb-first"\ncategory = "tool_invocation"\nweight = 0\nterms = ["run"]\n'
    assert _put(api, "quiet", silence).status_code == 200
    assert api.post("/api/classify", json={"text": "Run the test suite"}).json()["method"] == "pending"


def test_a_broken_rules_file_is_refused_with_the_entry_named_and_nothing_stored(api):
    for source, words in [("language = [", "is not valid TOML"),
                          ('[[signal]]\nid = "x.y"\ncategory = "poetry"\nterms = ["a"]', "category must be one of"),
                          ('[[signal]]\nid = "x.y"\ncategory = "bug_report"\nterms = [" "]', "an empty term"),
                          ('[[signal]]\ncategory = "bug_report"\nterms = ["a"]', "needs an id"),
                          ('colour = "red"', "unknown key 'colour'"),
                          # a workspace's own regex could backtrack for minutes on every request
                          ('[[signal]]\nid = "x.y"\ncategory = "bug_report"\nregex = ["(a+)+$"]', "not regex")]:
        r = _put(api, "bad", source)
        assert r.status_code == 422 and words in r.json()["detail"], (source, r.text)
        assert "Traceback" not in r.text
    assert _put(api, "../etc", GERMAN).status_code in (404, 422)
    assert api.get("/api/classification/rules").json() == []


def test_only_admins_change_the_rules_and_another_workspace_does_not_see_them(api):
    member = _member(api, "member", "mem")
    assert _put(member, "german", GERMAN).status_code == 403
    assert _put(api, "german", GERMAN).status_code == 200
    assert member.get("/api/classification/rules").status_code == 200
    assert member.delete("/api/classification/rules/german").status_code == 403
    outsider = _member(api, "member", "outsider")
    ws2 = outsider.post("/api/workspaces", json={"name": "Elsewhere", "slug": "elsewhere"}).json()["id"]
    h = {"X-Workspace": ws2}
    assert outsider.get("/api/classification/rules", headers=h).json() == []
    assert outsider.get("/api/classification/rules/german", headers=h).status_code == 404
    got = outsider.post("/api/classify", json={"text": "Der Export stürzt ab"}, headers=h).json()
    assert got["method"] == "pending"  # the German rules are the first workspace's only


def test_an_unsure_issue_starts_nothing_and_its_question_reaches_the_next_tasks_prompt(api):
    api.post("/api/agents", json={"name": "bot", "provider": "command", "command": ["true"]})
    issue = api.post("/api/issues", json={"title": "Edit the API docs page of the platform", "assignee": "bot"}).json()
    n = issue["number"]
    assert api.get(f"/api/issues/{n}/workflows").json() == []  # nothing auto-started
    [c] = api.get(f"/api/issues/{n}/classifications").json()
    assert c["method"] == "pending" and set(c["candidates"]) == {"feature_request", "content_authoring"}
    assert c["question"].startswith("This looks like it may need changes to the platform")
    [task] = [t for t in api.get("/api/tasks").json() if t["issue_id"] == issue["id"]]
    sweep = api.get(f"/api/tasks/{task['id']}/harness/sweep").json()
    assert [p["id"] for p in sweep["pending_classifications"]] == [c["id"]]
    prompt = render(sweep)
    assert c["question"] in prompt and "classification_judge" in prompt and c["id"] in prompt
    r = api.post(f"/api/issues/{n}/classifications",
                 json={"category": "content_authoring", "folio": "document", "classification": c["id"],
                       "reason": "the person says: the docs folio, no platform change"})
    assert r.status_code == 200 and r.json()["workflow"] == "authoring-a-document"
    assert [i["process_id"] for i in api.get(f"/api/issues/{n}/workflows").json()] == ["authoring-a-document"]
    sweep = api.get(f"/api/tasks/{task['id']}/harness/sweep").json()
    assert sweep["pending_classifications"] == [] and "waits for your judgement" not in render(sweep)
    again = api.post(f"/api/issues/{n}/classifications",
                     json={"category": "bug_report", "classification": c["id"], "reason": "x"})
    assert again.status_code == 404 and "no classification waiting" in again.json()["detail"]


def test_a_workspaces_terms_are_bounded_and_a_long_request_costs_no_more_than_its_start(api):
    many = '[[signal]]\nid = "x.many"\ncategory = "bug_report"\nterms = [' + \
        ", ".join(f'"ab{i}*"' for i in range(1999)) + "]\n"
    for k in range(2):
        assert _put(api, f"many{k}", many.replace("x.many", f"x.many{k}")).status_code == 200
    r = _put(api, "many2", many.replace("x.many", "x.many2"))
    assert r.status_code == 422 and "5997 terms; at most 5000" in r.json()["detail"]
    late = "Penguins. " * 2000 + "The export crashes"
    assert api.post("/api/classify", json={"text": late}).json()["method"] == "pending"  # read: the start
