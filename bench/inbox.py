"""Issue 27 §3: the inbox page of a person with 10,000 items — its weight (HTML + the scripts and
styles it loads, target ≤ 100 KB) and its latency, p50/p99 (target p99 ≤ 100 ms), on SQLite and
PostgreSQL. Also `/api/inbox` (a page of 50), the sidebar's count, and "Show more" deep in the list
(the page after the 5,000th item: keyset paging, so as quick as the first). Beside each latency, the
server process's own CPU time per request, and `/api/health` (no database, on the event loop) as the
machine's floor: on a loaded machine the latencies say more about the machine than about the page.

A real server per backend; the items are written straight into its database (10,000 for the owner,
a quarter unread, over 30 days; 10,000 more for another person, which the owner's page must not
read), then each page is asked `--requests` times after one untimed request.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import uuid
from datetime import datetime, timedelta, timezone

import psutil
from sqlalchemy import insert

from _common import Server, backends, database, emit, log, machine, redact, summary_ms, tempdir

ITEMS = 10_000
TARGET_MS = 100
TARGET_KB = 100
KINDS = ("run_failed", "run_budget", "assigned", "review", "gate", "mention", "comment", "permission")


def seed(server: Server, url: str, items: int) -> None:
    from predictorx.store.db import Database
    from predictorx.store.inbox_schema import InboxItem
    from predictorx.store.schema import Member, User

    me = server.api("GET", "/api/me")
    ws = server.api("GET", "/api/workspaces")[0]["id"]
    owner = me["user"]["id"]
    db = Database(url)
    rnd = random.Random(27)
    now = datetime.now(timezone.utc)
    other = str(uuid.uuid4())
    with db.engine.begin() as conn:
        conn.execute(insert(User.__table__), [{"id": other, "name": "other", "created_at": now}])
        conn.execute(insert(Member.__table__), [{"workspace_id": ws, "user_id": other, "role": "member",
                                                 "created_at": now}])
    for person in (owner, other):
        done = 0
        while done < items:
            n = min(5000, items - done)
            rows = []
            for i in range(done, done + n):
                at = now - timedelta(seconds=rnd.randrange(30 * 86400))
                kind = KINDS[i % len(KINDS)]
                rows.append({"id": str(uuid.uuid4()), "workspace_id": ws, "user_id": person, "kind": kind,
                             "state": "unread" if rnd.random() < 0.25 else rnd.choice(("read", "done")),
                             "source_key": f"bench:{i}", "title": f"reviewer's run on #{i} failed: Make checkout faster",
                             "detail": "exit code 1: the tests failed (3 of 412) — see the run's messages",
                             "link": f"/tasks/{uuid.uuid4()}", "issue_id": None, "task_id": None,
                             "created_at": at, "updated_at": at})
            with db.engine.begin() as conn:
                conn.execute(insert(InboxItem.__table__), rows)
            done += n
        log(f"seeded {items:,} items for {'the owner' if person == owner else 'another person'}")
    with db.engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE inbox_item" if db.engine.dialect.name == "postgresql" else "ANALYZE")
        conn.commit()
    db.dispose()


def weight(server: Server, path: str) -> tuple[int, int]:
    """Bytes of the page's HTML plus the scripts and styles it loads: (uncompressed, sent) — sent is
    what tests/page_weight.py counts (gzip on the wire, as a browser downloads it; Lighthouse's
    "total byte weight"); uncompressed is what the browser then holds."""
    gzip = {"Accept-Encoding": "gzip"}
    page = server.http.get(path, cookies={"px_token": server.token}, headers=gzip)
    html = page.text
    total, sent = len(html.encode()), int(page.num_bytes_downloaded)
    for asset in re.findall(r'(?:src|href)="(/static/[^"]+\.(?:js|css))"', html):
        answer = server.http.get(asset, headers=gzip)
        total, sent = total + len(answer.content), sent + int(answer.num_bytes_downloaded)
    return total, sent


def timed(call, n: int) -> list[float]:
    import time

    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        out.append(time.perf_counter() - t0)
    return out


def measure(server: Server, requests: int) -> dict:
    cookies = {"px_token": server.token}
    deep = None
    cursor = None
    for _ in range(100):  # to the page after the 5,000th item, 50 at a time
        answer = server.api("GET", "/api/inbox", params={"state": "all", "limit": 50, **({"cursor": cursor} if cursor else {})})
        cursor = answer["next"]
    deep = cursor
    calls = {
        "page": lambda: server.http.get("/inbox", cookies=cookies),
        "page_all": lambda: server.http.get("/inbox", params={"state": "all"}, cookies=cookies),
        "show_more_after_5000": lambda: server.http.get("/inbox/items", params={"state": "all", "cursor": deep},
                                                        cookies=cookies),
        "count": lambda: server.http.get("/inbox/count", cookies=cookies),
        "api": lambda: server.http.get("/api/inbox"),
    }
    result: dict = {}
    server_process = psutil.Process(server.proc.pid)
    for name, call in calls.items():
        call().raise_for_status()
        cpu = server_process.cpu_times()
        result[name] = summary_ms(timed(lambda: call().raise_for_status(), requests))
        after = server_process.cpu_times()
        # the server's own CPU per request: what the machine's load (not this page) does not change
        result[name]["server_cpu_ms_per_request"] = round((after.user + after.system - cpu.user - cpu.system)
                                                          / requests * 1000, 2)
        log(f"{name}: p99 {result[name]['p99_ms']} ms, server CPU {result[name]['server_cpu_ms_per_request']} ms")
    result["health_baseline"] = summary_ms(timed(lambda: server.http.get("/api/health").raise_for_status(), requests))
    page = server.http.get("/inbox", cookies=cookies).text
    result["page_items_shown"] = page.count('class="inbox-item ')
    for key, path in (("page", "/inbox"), ("page_all", "/inbox?state=all")):
        whole, sent = weight(server, path)
        result[f"{key}_kb"], result[f"{key}_sent_kb"] = round(whole / 1024, 1), round(sent / 1024, 1)
    worst = max(result[k]["p99_ms"] for k in ("page", "page_all", "show_more_after_5000"))
    result["worst_page_p99_ms"] = worst
    # The weight is what a browser downloads (gzip), as tests/page_weight.py and Lighthouse count it;
    # the uncompressed sizes are reported beside it.
    result["meets"] = worst <= TARGET_MS and max(result["page_sent_kb"], result["page_all_sent_kb"]) <= TARGET_KB
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--items", type=int, default=ITEMS)
    ap.add_argument("--requests", type=int, default=200, help="requests per measured call")
    ap.add_argument("--no-postgres", action="store_true")
    ap.add_argument("--only", choices=("sqlite", "postgres"), help="one backend")
    args = ap.parse_args()
    out = {"bench": "inbox", "items": args.items, "target_p99_ms": TARGET_MS, "target_kb": TARGET_KB,
           "machine": machine(), "backends": {}}
    for name, base in backends(not args.no_postgres):
        if args.only and name != args.only:
            continue
        with tempdir(f"px-bench-inbox-{name}-") as root, database(name, base, root) as url:
            server = Server(root, url)
            try:
                seed(server, url, args.items)
                out["backends"][name] = {"database": redact(url), **measure(server, args.requests),
                                         "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
            finally:
                server.stop()
    emit(out)


if __name__ == "__main__":
    main()
