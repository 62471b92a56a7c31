"""The issue board and lists at scale (issue 13 §2, §7), over HTTP: a column opens with a few
compact cards and "Show more" brings the next ones without repeating any; a move by a card's button
or a drop puts the card on top of its column; the board, the issue list and a project page of 1,000
issues stay under the page budget."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from predictorx.server.web.issuelist import COLUMN_CARDS, MORE_CARDS
from predictorx.service import issues as issue_svc
from predictorx.store.schema import Workspace

from page_weight import PAGE_BUDGET, page_weight

HX = {"HX-Request": "true"}
CARD = re.compile(r'<li id="c(\d+)">')


def _fill(web_db, n: int, status: str = "todo") -> None:
    with web_db.write() as s:
        ws = s.query(Workspace).one()
        for i in range(n):
            issue_svc.create_issue(s, ws.id, None, title=f"Issue number {i} with a title of some length", status=status)


def test_a_column_opens_on_a_few_cards_and_show_more_brings_the_rest_once(client, web_db):
    total = COLUMN_CARDS + MORE_CARDS + 5
    _fill(web_db, total)
    board = client.get("/issues?view=board").text
    first = CARD.findall(board)
    assert len(first) == COLUMN_CARDS and f"Show {MORE_CARDS} more" in board
    assert f'hx-get="/issues?column=todo&amp;offset={COLUMN_CARDS}"' in board
    more = client.get(f"/issues?column=todo&offset={COLUMN_CARDS}", headers=HX).text
    second = CARD.findall(more)
    assert len(second) == MORE_CARDS and "Show 5 more" in more
    last = client.get(f"/issues?column=todo&offset={COLUMN_CARDS + MORE_CARDS}", headers=HX).text
    third = CARD.findall(last)
    assert len(third) == 5 and "Show" not in last
    shown = [int(n) for n in first + second + third]
    assert sorted(shown) == list(range(1, total + 1))  # every card once, none twice
    assert shown == sorted(shown, reverse=True)  # unchanged issues: the newest first

    r = client.get("/issues?column=nowhere&offset=0", headers=HX)
    assert r.status_code == 400 and "no board column &#39;nowhere&#39;" in r.text


def test_a_move_puts_the_card_on_top_of_its_column_and_refocuses_it(client, web_db):
    _fill(web_db, 30)
    r = client.post("/issues/move", data={"m": "2 in_progress"}, headers=HX)
    assert r.status_code == 200, r.text
    column = r.text.split('data-status="in_progress"')[1].split("</section>")[0]
    assert CARD.findall(column) == ["2"]
    assert '"px-focus": {"card": "c2", "button": "next"}' in r.headers["HX-Trigger-After-Settle"]
    r = client.post("/issues/move", data={"m": "2 todo"}, headers=HX)
    todo = r.text.split('data-status="todo"')[1].split("</section>")[0]
    assert CARD.findall(todo)[0] == "2"  # on top, though 2 is one of the oldest issues
    assert '"button": "prev"' in r.headers["HX-Trigger-After-Settle"]
    # A plain form (no JavaScript) goes back to the board at the card.
    r = client.post("/issues/move", data={"m": "3 done"})
    assert r.status_code == 303 and r.headers["location"] == "/issues?view=board#c3"
    # Bad moves: a sentence, never a 500.
    for bad in ({}, {"m": "2"}, {"m": "2 nowhere"}, {"m": "x todo"}):
        r = client.post("/issues/move", data=bad, headers=HX)
        assert r.status_code == 400 and "choose the column" in r.text, bad
    r = client.post("/issues/move", data={"m": "9999 todo"}, headers=HX)
    assert r.status_code == 404


def test_a_board_of_a_thousand_issues_stays_under_the_page_budget(client, web_db):
    statuses = issue_svc.ISSUE_STATUSES
    for st in statuses:
        _fill(web_db, 1000 // len(statuses), st)
    html = client.get("/issues?view=board").text
    assert len(CARD.findall(html)) == COLUMN_CARDS * len(statuses)
    assert len(html.encode()) < 150_000  # the HTML itself, as generated
    total = page_weight(client.get, "/issues?view=board")
    assert total < PAGE_BUDGET, total


def test_the_trimmed_css_and_js_mean_what_their_sources_say(client):
    """What the browser loads is the source less comments and whitespace, nothing else."""
    from predictorx.server.web.render import STATIC_DIR

    for name in ("px.css", "px.js"):
        source = (STATIC_DIR / name).read_text()
        r = client.get(f"/static/{name}")
        assert r.status_code == 200 and len(r.content) < len(source.encode()) * 0.95
        bare = re.sub(r"/\*.*?\*/", "", source, flags=re.S) if name.endswith(".css") else \
            re.sub(r"^\s*//.*$", "", source, flags=re.M)
        words = re.findall(r"[\w#.-]+", bare)
        assert re.findall(r"[\w#.-]+", r.text) == words, name
        assert client.get(f"/static/{name}", headers={"If-None-Match": r.headers["etag"]}).status_code == 304


@pytest.mark.browser
def test_show_more_in_the_browser_and_a_dragged_card_moves(page, web_db, axe):
    _fill(web_db, COLUMN_CARDS + 4)
    page.goto("/issues?view=board")
    todo = page.locator("section.column[data-status=todo] .cards > li[id]")
    expect(todo).to_have_count(COLUMN_CARDS)
    assert not axe(page)
    page.get_by_role("button", name="Show 4 more").click()
    expect(todo).to_have_count(COLUMN_CARDS + 4)
    expect(page.get_by_role("button", name="Show 4 more")).to_have_count(0)
    page.wait_for_function("document.querySelector('#c1').draggable")  # loaded cards drag like the first ones
    page.locator(f"#c{COLUMN_CARDS + 4}").drag_to(page.locator("section.column[data-status=done]"))
    expect(page.locator(f"section.column[data-status=done] #c{COLUMN_CARDS + 4}")).to_be_visible()
    expect(todo).to_have_count(COLUMN_CARDS)  # the board came back: its columns opened again




def test_the_list_and_a_project_page_of_a_thousand_issues_stay_small_and_show_more(client, web_db):
    from predictorx.server.web.issuelist import LIST_ROWS
    from predictorx.server.web.issues import PROJECT_ROWS

    r = client.post("/projects", data={"title": "Big"})
    project_id = r.headers["location"].rsplit("/", 1)[-1]
    with web_db.write() as s:
        ws = s.query(Workspace).one()
        for i in range(1000):
            issue_svc.create_issue(s, ws.id, None, title=f"Issue number {i} with a title of some length",
                                   project_id=project_id)
    listing = client.get("/issues").text
    assert listing.count('<tr><td class="num') == LIST_ROWS and page_weight(client.get, "/issues") < PAGE_BUDGET
    more = client.get(f"/issues?offset={LIST_ROWS}", headers=HX).text
    assert more.count('<tr><td class="num') == LIST_ROWS and f"offset={2 * LIST_ROWS}" in more
    assert f'<a class="strong" href="/issues/{1000 - LIST_ROWS}">' in more  # the next ones, none twice

    page = client.get(f"/projects/{project_id}").text
    assert page.count('class="issue-row"') == PROJECT_ROWS
    assert page_weight(client.get, f"/projects/{project_id}") < PAGE_BUDGET
    assert ">1000</span>" in page  # the count is of all of them
    more = client.get(f"/projects/{project_id}/issues?offset={PROJECT_ROWS}", headers=HX).text
    assert more.count('class="issue-row"') == 2 * PROJECT_ROWS and "Show more issues" in more


@pytest.mark.browser
def test_a_long_discussion_opens_on_its_latest_comments_and_shows_the_rest(page, live):
    from predictorx.server.web.issues import COMMENTS_SHOWN

    issue = live.post("/api/issues", {"title": "Talky"})
    for i in range(COMMENTS_SHOWN + 10):
        live.post(f"/api/issues/{issue['number']}/comments", {"body": f"Comment number {i}, **bold**."})
    html = live.api.get(f"/issues/{issue['number']}", cookies={"px_token": live.token}).text
    assert html.count('class="comment ') == COMMENTS_SHOWN and "Comment number 9," not in html
    assert f"Comment number {COMMENTS_SHOWN + 9}," in html and "Show 10 earlier comments" in html
    page.goto(f"/issues/{issue['number']}")
    comments = page.locator("#comments li.comment")
    expect(comments).to_have_count(COMMENTS_SHOWN)
    page.get_by_role("link", name="Show 10 earlier comments").click()
    expect(comments).to_have_count(COMMENTS_SHOWN + 10)
    expect(comments.first).to_contain_text("Comment number 0,")
    expect(page.get_by_role("link", name="Show 10 earlier comments")).to_have_count(0)
