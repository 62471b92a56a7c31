"""Issue 26: the issue page with 1,000 comments in Chromium — first contentful paint (target
≤ 1 s) and weight (HTML + scripts + styles, target < 150 KB) — and how long a change made in one
tab takes to show in another tab of the same issue (the live redraw over /api/events).

A real server process (SQLite) filled through its HTTP API; Debian's Chromium through Playwright.
Prints one JSON object (with the load average). The page measurement is bench/web.py's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import Server, emit, log, machine, sqlite_url, tempdir
from web import CHROMIUM_ARGS, _chromium, _page_timings

PAGE_BYTES = 150_000


def _fill(server: Server, comments: int) -> int:
    issue = server.api("POST", "/api/issues", {"title": "A long discussion", "body": "## Why\n\n- one\n- two"})
    for n in range(comments):
        server.api("POST", f"/api/issues/{issue['number']}/comments",
                   {"body": f"Comment {n}: **some** Markdown with `code` and a [link](https://example.com/{n})."})
    log(f"{comments} comments posted")
    return issue["number"]


def _signed_in(browser, url: str, link: str):
    context = browser.new_context(viewport={"width": 1360, "height": 900}, base_url=url)
    page = context.new_page()
    page.goto(link)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()
    if "/login" in page.url:
        raise SystemExit(f"the bench could not sign in (still on {page.url})")
    page.close()
    return context


def _live_redraw(server: Server, browser, number: int, repeat: int) -> dict:
    """Tab B open on the issue; the status changed through the API: ms until B's select shows it."""
    context = _signed_in(browser, server.url, server.api("POST", "/api/login-link")["url"])
    page = context.new_page()
    page.goto(f"/issues/{number}")
    page.wait_for_function("document.body.classList.contains('live-on')")
    took = []
    for i in range(repeat):
        status = ("done", "todo")[i % 2]
        start = time.monotonic()
        server.api("PATCH", f"/api/issues/{number}", {"status": status})
        page.wait_for_function(f"document.getElementById('issue-status').value === '{status}'", polling=10)
        took.append((time.monotonic() - start) * 1000)
    context.close()
    return {"median_ms": round(statistics.median(took), 1), "max_ms": round(max(took), 1),
            "runs_ms": [round(t, 1) for t in took]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--comments", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5, help="page loads (and live changes) per measurement")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with tempdir("px-bench-web-issue-") as root:
        server = Server(root, sqlite_url(root))
        try:
            number = _fill(server, args.comments)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
                context = _signed_in(browser, server.url, server.api("POST", "/api/login-link")["url"])
                issue_page = _page_timings(context, f"/issues/{number}", args.repeat)
                log("issue page measured")
                live = _live_redraw(server, browser, number, args.repeat)
                log("live redraw measured")
                browser.close()
        finally:
            server.stop()
    emit({"bench": "web_issue", "comments": args.comments, "issue_page": issue_page, "live_redraw": live,
          "targets": {"issue_page_first_paint_ms": 1000, "issue_page_bytes": PAGE_BYTES},
          "met": {"issue_page": (issue_page["first_contentful_paint_ms_median"] or 1e9) <= 1000,
                  "issue_page_bytes": issue_page["weight"]["total_bytes"] < PAGE_BYTES},
          "machine": machine()})


if __name__ == "__main__":
    main()
