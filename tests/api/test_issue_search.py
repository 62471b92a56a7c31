"""Finding issues through `GET /api/issues` (issue 26 §3), on SQLite (FTS5) and PostgreSQL (GIN):
filters, full-text search over titles, descriptions and comments (kept current as they change),
sort, and labels set and taken off through the API. Bad values answer a sentence, never a 500."""

from __future__ import annotations


def _numbers(api, **params) -> list[int]:
    r = api.get("/api/issues", params=params)
    assert r.status_code == 200, r.text
    return [i["number"] for i in r.json()]


def _world(api) -> dict:
    project = api.post("/api/projects", json={"title": "Checkout"}).json()
    api.post("/api/agents", json={"name": "bot", "provider": "command", "command": ["true"]})
    made = [
        api.post("/api/issues", json={"title": "Flaky payment tests", "body": "The checkout suite fails on CI",
                                      "priority": "high", "project_id": project["id"]}).json(),
        api.post("/api/issues", json={"title": "Dark mode for the board", "priority": "low"}).json(),
        api.post("/api/issues", json={"title": "Slow search", "status": "backlog", "priority": "urgent"}).json(),
    ]
    return {"project": project, "issues": made}


def test_filters_narrow_the_list_and_combine(api):
    w = _world(api)
    assert _numbers(api) == [3, 2, 1]
    assert _numbers(api, status="backlog") == [3]
    assert _numbers(api, status="backlog,todo") == [3, 2, 1]
    assert _numbers(api, priority=["high", "low"]) == [2, 1]
    assert _numbers(api, project=w["project"]["id"]) == [1]
    assert _numbers(api, project="Checkout") == [1]
    assert _numbers(api, project="none") == [3, 2]
    assert _numbers(api, project="none", priority="urgent") == [3]
    assert _numbers(api, sort="oldest") == [1, 2, 3]
    assert _numbers(api, sort="priority") == [3, 1, 2]
    assert _numbers(api, sort="title") == [2, 1, 3]
    api.post("/api/issues/2/assign", json={"assignee": "bot"})
    assert _numbers(api, assignee="bot") == [2]
    assert _numbers(api, assignee="none") == [3, 1]
    assert _numbers(api, assignee="me") == []


def test_search_finds_words_of_titles_descriptions_and_comments_as_they_change(api):
    _world(api)
    assert _numbers(api, search="flaky") == [1]
    assert _numbers(api, search="checko") == [1]  # a word's start is enough
    assert _numbers(api, search="CI suite") == [1]  # every word, any order, any case
    assert _numbers(api, search="board") == [2]
    assert _numbers(api, search="board flaky") == []
    assert _numbers(api, search="receipt") == []
    assert api.post("/api/issues/3/comments", json={"body": "Profiling shows the receipt query is slow"}).status_code == 201
    assert _numbers(api, search="receipt") == [3]
    assert api.patch("/api/issues/2", json={"title": "Contrast in dark mode"}).status_code == 200
    assert _numbers(api, search="board") == []
    assert _numbers(api, search="contrast") == [2]
    # Nothing in a query is syntax: quotes, operators and punctuation are only text.
    for odd in ('"', "NOT", "a OR b", "x* AND (", "flaky:*", "');--", "* ^ -"):
        assert api.get("/api/issues", params={"search": odd}).status_code == 200, odd
    assert _numbers(api, search="flaky)") == [1]
    assert _numbers(api, search="flaky", status="done") == []


def test_labels_are_set_taken_off_and_filter_the_list(api):
    _world(api)
    r = api.post("/api/labels", json={"name": "bug", "color": "#B42318"})
    assert r.status_code == 201 and r.json()["color"] == "#b42318"
    assert api.post("/api/labels", json={"name": "Bug"}).status_code == 409
    assert api.post("/api/labels", json={"name": "x", "color": "red"}).status_code == 422
    assert [x["name"] for x in api.post("/api/issues/1/labels", json={"label": "bug"}).json()] == ["bug"]
    # A new name makes the label (as Linear does), with a colour of its own.
    made = api.post("/api/issues/1/labels", json={"label": "payments"}).json()
    assert [x["name"] for x in made] == ["bug", "payments"] and made[1]["color"].startswith("#")
    api.post("/api/issues/2/labels", json={"label": "BUG"})  # names match whatever their case
    assert _numbers(api, label="bug") == [2, 1]
    assert _numbers(api, label=["bug", "payments"]) == [1]  # all of them
    listed = api.get("/api/issues", params={"label": "payments"}).json()[0]
    assert [x["name"] for x in listed["labels"]] == ["bug", "payments"]
    assert [x["name"] for x in api.delete("/api/issues/1/labels/payments").json()] == ["bug"]
    assert _numbers(api, label="payments") == []
    assert api.patch("/api/labels/bug", json={"name": "defect"}).json()["name"] == "defect"
    assert _numbers(api, label="defect") == [2, 1]
    assert api.delete("/api/labels/defect").status_code == 204
    assert api.get("/api/issues/1/labels").json() == []
    assert api.delete("/api/issues/1/labels/nothing").status_code == 404


def test_bad_filters_answer_a_sentence(api):
    _world(api)
    for params, words in (({"status": "open"}, "status must be one of"), ({"priority": "p0"}, "priority must be one of"),
                          ({"sort": "random"}, "sort must be one of"), ({"label": "nothing"}, "no label named"),
                          ({"assignee": "nobody-here"}, "no agent or member named"),
                          ({"project": "nowhere"}, "no project"), ({"search": "x" * 300}, "at most")):
        r = api.get("/api/issues", params=params)
        assert r.status_code in (400, 422) and words in r.text, (params, r.text)


def test_a_workspace_finds_only_its_own_issues(api, db):
    _world(api)
    other = api.post("/api/workspaces", json={"name": "Elsewhere", "slug": "elsewhere"}).json()
    headers = {"X-Workspace": other["id"]}
    assert api.post("/api/issues", json={"title": "Flaky elsewhere"}, headers=headers).status_code == 201
    assert _numbers(api, search="flaky") == [1]
    r = api.get("/api/issues", params={"search": "flaky"}, headers=headers)
    assert [i["title"] for i in r.json()] == ["Flaky elsewhere"]
    assert api.get("/api/labels", headers=headers).json() == []
