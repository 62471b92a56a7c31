"""An issue page is bounded whatever its discussion (issue 29 §5): comments are rendered once when
written, a page carries a bounded number of bytes of them, a comment too long to render shows its
start and a link to its raw text, and earlier comments come a page at a time."""

from __future__ import annotations

import re

from predictorx import richtext
from predictorx.service import discussion

HX = {"HX-Request": "true"}
TABLE_ROW = "| " + " | ".join(f"cell {i}" for i in range(10)) + " |\n"


def _table(chars: int) -> str:
    head = "| " + " | ".join(f"h{i}" for i in range(10)) + " |\n|" + "---|" * 10 + "\n"
    return head + TABLE_ROW * (chars // len(TABLE_ROW))


def _issue(client) -> int:
    r = client.post("/api/issues", json={"title": "Tables"})
    assert r.status_code == 201, r.text
    return r.json()["number"]


def _comment(client, number: int, body: str) -> None:
    r = client.post(f"/api/issues/{number}/comments", json={"body": body})
    assert r.status_code == 201, r.text


def test_twenty_huge_tables_make_a_small_page_with_raw_links(client):
    number = _issue(client)
    huge = _table(99_000)
    for _ in range(20):
        _comment(client, number, huge)
    page = client.get(f"/issues/{number}")
    assert page.status_code == 200
    assert len(page.content) < 200_000, len(page.content)  # was 11 MB (20 × 100 KB tables, rendered)
    assert page.text.count("show raw") == 20 and "<table>" not in page.text
    raw_link = re.search(r'href="(/issues/\d+/comments/[^"]+/raw)"', page.text).group(1)
    raw = client.get(raw_link)
    assert raw.status_code == 200 and raw.headers["content-type"].startswith("text/plain")
    assert raw.text == huge and raw.headers["x-content-type-options"] == "nosniff"


def test_a_page_carries_a_bounded_number_of_bytes_and_pages_back(client):
    number = _issue(client)
    big = _table(richtext.RENDER_MAX_CHARS - 2_000)  # rendered, and large
    count = 2 * discussion.PAGE_BYTES // len(richtext.render(big)) + 3
    for i in range(count):
        _comment(client, number, f"Comment {i}\n\n{big}")
    page = client.get(f"/issues/{number}").text
    shown = page.count('class="comment ')
    assert 1 <= shown < count and f"Comment {count - 1}" in page and "Comment 0\n" not in page
    assert len(page) < discussion.PAGE_BYTES + 2 * richtext.HTML_MAX_BYTES
    seen = shown
    link = re.search(r'hx-get="(/issues/\d+/comments\?before=[^"]+)"', page)
    while link:  # "Show earlier comments", as htmx asks for it, until the first comment
        more = client.get(link.group(1).replace("&amp;", "&"), headers=HX)
        assert more.status_code == 200 and len(more.content) < discussion.PAGE_BYTES + 2 * richtext.HTML_MAX_BYTES
        seen += more.text.count('class="comment ')
        link = re.search(r'hx-get="(/issues/\d+/comments\?before=[^"]+)"', more.text)
    assert seen == count and "<p>Comment 0</p>" in more.text


def test_mentions_are_marked_in_the_stored_html(client, token):
    r = client.post("/api/agents", json={"name": "claude-1", "provider": "claude"})
    assert r.status_code in (200, 201), r.text
    number = _issue(client)
    _comment(client, number, "Please look, @claude-1 — **now**; not `@claude-1` in code.")
    page = client.get(f"/issues/{number}").text
    assert '<span class="mention">@claude-1</span>' in page and "<strong>now</strong>" in page
    assert "<code>@claude-1</code>" in page


def test_a_comment_of_another_issue_is_not_found(client):
    first, second = _issue(client), _issue(client)
    _comment(client, first, "x" * 40_000)
    link = re.search(r'href="/issues/\d+/comments/([^"]+)/raw"', client.get(f"/issues/{first}").text).group(1)
    assert client.get(f"/issues/{second}/comments/{link}/raw").status_code == 404
    assert client.get(f"/issues/{second}/comments?before={link}", headers=HX).status_code == 404
    assert client.get(f"/issues/{second}?before={link}").status_code == 404
