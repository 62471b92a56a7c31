"""Issue 24 §6 on the issue page: a pending classification is shown as its question in plain words
(the rule and the scores only in the tooltip), a decided one as its category in plain words and the
workflow it started."""

from __future__ import annotations

import html
import re

from starlette.testclient import TestClient

from predictorx.server.app import create_app
from predictorx.server.run import bootstrap

PAGE = {"HX-Request": "true", "Origin": "http://testserver"}  # a browser's form post names its page


def _panel(c: TestClient, n: int) -> str:
    r = c.get(f"/issues/{n}/workflows", headers={"HX-Request": "true"})
    assert r.status_code == 200
    return r.text


def _visible(page: str) -> str:
    """The text a person reads: no tags, no attribute values (the tooltips)."""
    return html.unescape(re.sub(r"<[^>]*>", " ", page))


def test_the_issue_page_asks_the_pending_question_in_plain_words(db):
    token = bootstrap(db, "http://testserver")
    with TestClient(create_app(db, migrate=False), follow_redirects=False) as c:
        c.cookies.set("px_token", token)
        h = {"Authorization": f"Bearer {token}"}
        n = c.post("/api/issues", json={"title": "Почему экспорт падает на больших файлах?"}, headers=h).json()["number"]
        page = _panel(c, n)
        seen = _visible(page)
        assert "Waiting for a judgement:" in seen and "No workflow was started" in seen
        assert "Что это за запрос" in seen  # the question, in the request's language
        assert "a question to answer or a bug report" in seen  # the candidates in plain words
        assert "information_request" not in seen and "ru.bug.misbehaves" not in seen  # no ids in the text
        assert re.search(r'title="[^"]*ru\.bug\.misbehaves', page) or re.search(r'title="[^"]*too close', page)
        n2 = c.post("/api/issues", json={"title": "The login page crashes with a 500"}, headers=h).json()["number"]
        page = _panel(c, n2)
        seen = _visible(page)
        assert "Classified as a bug report by the classification table; it started bug-triage" in " ".join(seen.split())
        assert "en.bug.misbehaves" not in seen and 'title="en.bug.misbehaves' in page


def test_a_person_answers_the_question_on_the_issue_page(db):
    token = bootstrap(db, "http://testserver")
    with TestClient(create_app(db, migrate=False), follow_redirects=False) as c:
        c.cookies.set("px_token", token)
        h = {"Authorization": f"Bearer {token}"}
        n = c.post("/api/issues", json={"title": "Edit the API docs page of the platform"}, headers=h).json()["number"]
        [pending] = c.get(f"/api/issues/{n}/classifications", headers=h).json()
        page = _panel(c, n)
        assert 'action="/issues/%d/classifications"' % n in page and f'value="{pending["id"]}"' in page
        # the two candidates come first in the choice, in plain words
        choice = page.split('name="category"', 1)[1].split("</select>", 1)[0]
        options = re.findall(r'<option value="(\w+)"', choice)
        assert set(options[:2]) == {"feature_request", "content_authoring"} and len(options) == 8
        refused = c.post(f"/issues/{n}/classifications", headers=PAGE,
                         data={"classification": pending["id"], "category": "content_authoring", "reason": "docs"})
        assert refused.status_code == 422 and "needs the folio it is for" in refused.text
        assert c.get(f"/api/issues/{n}/workflows", headers=h).json() == []  # a refused answer changes nothing
        ok = c.post(f"/issues/{n}/classifications", headers=PAGE,
                    data={"classification": pending["id"], "category": "content_authoring", "folio": "document",
                          "reason": "the docs folio; no platform change"})
        assert ok.status_code == 200 and "Waiting for a judgement" not in ok.text
        assert "Classified as writing content by judgement" in " ".join(_visible(ok.text).split())
        assert [i["process_id"] for i in c.get(f"/api/issues/{n}/workflows", headers=h).json()] == \
            ["authoring-a-document"]
