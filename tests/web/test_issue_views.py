"""The issue list's view over HTTP (issue 26 §3): filters, search, sort and group from the query
string (the saved view's link), the board per project, the Labels control of an issue page and the
command palette's results. Bad values in a hand-edited link answer a sentence, never a 500."""

from __future__ import annotations

import re

from predictorx.service import issues as issue_svc
from predictorx.store.schema import Workspace

HX = {"HX-Request": "true"}
ROW = re.compile(r'<a class="strong" href="/issues/(\d+)">')
CARD = re.compile(r'<li id="c(\d+)">')


def _seed(client, web_db) -> str:
    project_id = client.post("/projects", data={"title": "Checkout"}).headers["location"].rsplit("/", 1)[-1]
    with web_db.write() as s:
        ws = s.query(Workspace).one()
        issue_svc.create_issue(s, ws.id, None, title="Flaky payment tests", priority="high", project_id=project_id)
        issue_svc.create_issue(s, ws.id, None, title="Dark mode contrast", priority="low")
        issue_svc.create_issue(s, ws.id, None, title="Slow search", status="backlog", priority="urgent",
                               project_id=project_id)
    return project_id


def test_the_url_is_the_view(client, web_db):
    project_id = _seed(client, web_db)
    assert ROW.findall(client.get("/issues").text) == ["3", "2", "1"]
    page = client.get("/issues?search=flaky").text
    assert ROW.findall(page) == ["1"] and 'value="flaky"' in page and "1 issue match" in page
    page = client.get(f"/issues?project={project_id}&sort=oldest").text
    assert ROW.findall(page) == ["1", "3"]
    assert f'<option value="{project_id}" selected>Checkout</option>' in page
    assert '<option value="oldest" selected>' in page
    grouped = client.get("/issues?group=priority").text
    headings = re.findall(r'<th colspan="7" scope="colgroup">([^<]+)</th>', grouped)
    assert headings == ["Urgent", "High", "Low"] and ROW.findall(grouped) == ["3", "1", "2"]
    none = client.get("/issues?search=nothing-like-this").text
    assert "No issues match this view" in none and ROW.findall(none) == []


def test_show_more_keeps_the_view_and_does_not_repeat_a_group_heading(client, web_db):
    from predictorx.server.web.issuelist import LIST_ROWS

    with web_db.write() as s:
        ws = s.query(Workspace).one()
        for n in range(LIST_ROWS + 5):
            issue_svc.create_issue(s, ws.id, None, title=f"Alpha {n}", status="todo")
    first = client.get("/issues?search=alpha&group=status").text
    assert first.count('scope="colgroup"') == 1
    assert f"/issues?offset={LIST_ROWS}&amp;search=alpha&amp;group=status" in first
    more = client.get(f"/issues?offset={LIST_ROWS}&search=alpha&group=status", headers=HX).text
    assert len(ROW.findall(more)) == 5 and 'scope="colgroup"' not in more


def test_a_project_board_shows_its_issues_and_a_move_keeps_it(client, web_db):
    project_id = _seed(client, web_db)
    board = client.get(f"/issues?view=board&project={project_id}").text
    assert sorted(CARD.findall(board)) == ["1", "3"] and "<h1>Board</h1>" in board and ">Checkout</a> ›" in board
    r = client.post("/issues/move", data={"m": "1 in_progress", "view_query": f"project={project_id}"}, headers=HX)
    assert r.status_code == 200 and sorted(CARD.findall(r.text)) == ["1", "3"]
    assert f'name="view_query" value="project={project_id}"' in r.text
    r = client.post("/issues/move", data={"m": "1 todo", "view_query": f"project={project_id}"})
    assert r.status_code == 303 and r.headers["location"] == f"/issues?view=board&project={project_id}#c1"
    more = client.get(f"/issues?column=backlog&offset=0&project={project_id}", headers=HX).text
    assert CARD.findall(more) == ["3"]


def test_bad_views_answer_a_sentence(client, web_db):
    _seed(client, web_db)
    for query, words in (("status=open", "status must be one of"), ("label=nothing", "no label named"),
                         ("sort=random", "sort must be one of"), ("assignee=ghost", "no agent or member named")):
        r = client.get(f"/issues?{query}")
        assert r.status_code == 422 and words in r.text, query
    r = client.post("/issues/move", data={"m": "1 done", "view_query": "status=open"}, headers=HX)
    assert r.status_code == 422 and "status must be one of" in r.text


def test_labels_on_the_issue_page_and_in_the_list(client, web_db):
    _seed(client, web_db)
    assert '{% include' not in client.get("/issues/1").text and 'hx-get="/issues/1/labels"' in client.get("/issues/1").text
    r = client.post("/issues/1/labels", data={"label": "payments"}, headers=HX)
    assert r.status_code == 200 and 'aria-label="Remove label payments"' in r.text
    assert client.post("/issues/1/labels", data={"label": ""}, headers=HX).status_code == 422
    assert "payments</span>" in client.get("/issues").text
    assert ROW.findall(client.get("/issues?label=payments").text) == ["1"]
    assert "payments</span>" in client.get("/issues?view=board").text
    r = client.post("/issues/1/labels/remove", data={"label": "payments"}, headers=HX)
    assert "Remove label payments" not in r.text and "None yet" in r.text
    assert client.post("/issues/1/labels", data={"label": "x"}).status_code == 303  # a plain form: back to the page


def test_the_palette_finds_issues_projects_and_agents(client, web_db):
    _seed(client, web_db)
    page = client.get("/palette?q=3", headers=HX).text
    assert 'data-href="/issues/3"' in page
    page = client.get("/palette?q=flak", headers=HX).text
    assert 'data-href="/issues/1"' in page
    page = client.get("/palette?q=check", headers=HX).text
    assert "Checkout" in page and "/issues?view=board&amp;project=" in page
    page = client.get("/palette?q=%3Cscript%3E", headers=HX).text
    assert "<script" not in page
    assert client.get("/palette?q=" + "x" * 300, headers=HX).status_code == 400
