"""A team's worth of daemons on one server (issue 14): what a queued task costs when many people's
daemons hold their push streams.

`--people` members (default 20), each with one daemon and one agent of their own. Each daemon is
a coroutine that does what `predictorx daemon` does with its stream: on `hello` and `task_queued`
it claims (limit 4); each task it gets it reports running and finishes at once. The driver assigns
`--tasks` issues (default 200) at `--rate` per second (default 20), round robin over the people's
agents. Only the agent's owner's daemons may run a task (R-SEC-6), so every claim by another
daemon is an empty one.

Reported: the server's CPU per assigned task; claim requests per task and how many were empty;
events written to daemon streams per task (by type); assign returned → the owner's daemon holds
the task (p50/p99); the load average. Run it with `PYTHONPATH` at an older tree's `src` to compare.

Usage: .venv/bin/python bench/fanout.py [--people 20] [--tasks 200] [--rate 20] [--postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from pathlib import Path

import httpx2 as httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Server, database, emit, log, machine, postgres_base_url, summary_ms, tempdir


class Daemon:
    def __init__(self, url: str, token: str) -> None:
        self.client = httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        self.events: Counter = Counter()
        self.claims = 0
        self.empty = 0
        self.got: dict[str, float] = {}  # task id → when this daemon held it
        self.ready = asyncio.Event()
        self._wake = asyncio.Event()

    async def listen(self) -> None:
        async with self.client.stream("GET", "/api/daemon/events", timeout=None) as r:
            async for line in r.aiter_lines():
                if not line.startswith("data:"):
                    continue
                event = json.loads(line[5:])
                self.events[event.get("type")] += 1
                if event.get("type") == "hello":
                    self.ready.set()
                if event.get("type") in ("hello", "task_queued"):
                    self._wake.set()

    async def work(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while True:
                r = await self.client.post("/api/daemon/claim", json={"limit": 4})
                self.claims += 1
                tasks = r.json()["tasks"]
                if not tasks:
                    self.empty += 1
                    break
                for item in tasks:
                    tid = item["task"]["id"]
                    self.got[tid] = time.time()
                    await self.client.post(f"/api/daemon/tasks/{tid}/status", json={"status": "running"})
                    await self.client.post(f"/api/daemon/tasks/{tid}/finish", json={"status": "completed"})


async def run(server: Server, people: int, tasks: int, rate: float) -> dict:
    ws = server.api("GET", "/api/workspaces")[0]["id"]
    daemons: list[Daemon] = []
    for i in range(people):
        member = server.api("POST", f"/api/workspaces/{ws}/members", {"name": f"person-{i}", "role": "member"})
        person = httpx.Client(base_url=server.url, headers=server.headers(member["token"]), timeout=60)
        did = f"00000000-0000-4000-8000-{i:012d}"
        reg = person.post("/api/daemon/register", json={"daemon_id": did, "name": f"laptop-{i}",
                                                          "runtimes": [{"provider": "command", "version": "1"}]})
        reg.raise_for_status()
        person.post("/api/agents", json={"name": f"bot-{i}", "provider": "command", "command": ["true"],
                                         "max_concurrent_tasks": 4}).raise_for_status()
        person.close()
        daemons.append(Daemon(server.url, reg.json()["token"]))
    jobs = [asyncio.create_task(d.listen()) for d in daemons] + [asyncio.create_task(d.work()) for d in daemons]
    await asyncio.wait_for(asyncio.gather(*(d.ready.wait() for d in daemons)), 60)
    await asyncio.sleep(0.5)  # the hello claims are done
    for d in daemons:
        d.events.clear()
        d.claims = d.empty = 0
    log(f"{people} daemons connected; assigning {tasks} tasks at {rate}/s")
    owner = httpx.AsyncClient(base_url=server.url, headers=server.headers(), timeout=60)
    assigned: dict[str, tuple[float, int]] = {}
    cpu0, t0 = server.cpu_seconds(), time.monotonic()
    for i in range(tasks):
        due = t0 + i / rate
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        issue = (await owner.post("/api/issues", json={"title": f"fanout {i}", "assignee": f"bot-{i % people}"})).json()
        returned = time.time()
        runs = (await owner.get(f"/api/issues/{issue['number']}/runs")).json()
        assigned[runs[0]["id"]] = (returned, i % people)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and sum(len(d.got) for d in daemons) < tasks:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # the last finishes' events
    cpu = server.cpu_seconds() - cpu0
    for j in jobs:
        j.cancel()
    await asyncio.gather(*jobs, return_exceptions=True)
    await owner.aclose()
    for d in daemons:
        await d.client.aclose()
    to_held = [daemons[who].got[tid] - at for tid, (at, who) in assigned.items() if tid in daemons[who].got]
    wrong = sum(1 for tid, (_, who) in assigned.items() for k, d in enumerate(daemons) if k != who and tid in d.got)
    events: Counter = Counter()
    for d in daemons:
        events.update(d.events)
    claims, empty = sum(d.claims for d in daemons), sum(d.empty for d in daemons)
    return {"people_with_a_daemon": people, "tasks": tasks, "rate_per_s": rate,
            "held_by_their_owners_daemon": len(to_held), "held_by_another_daemon": wrong,
            "server_cpu_ms_per_task": round(cpu * 1000 / tasks, 2),
            "claim_requests_per_task": round(claims / tasks, 2), "empty_claims_per_task": round(empty / tasks, 2),
            "daemon_stream_events_per_task": round(sum(events.values()) / tasks, 2),
            "daemon_stream_events_by_type": dict(events),
            "assign_returned_to_held_by_owners_daemon": summary_ms(to_held)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--people", type=int, default=20)
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--rate", type=float, default=20.0)
    ap.add_argument("--postgres", action="store_true", help="PostgreSQL instead of SQLite")
    args = ap.parse_args()
    name, base = ("postgres", postgres_base_url()) if args.postgres else ("sqlite", None)
    if args.postgres and base is None:
        sys.exit("PostgreSQL is not reachable: set PREDICTORX_BENCH_POSTGRES_URL")
    with tempdir("pxbench-fanout-") as root, database(name, base, root) as url:
        server = Server(root, url, PREDICTORX_DAEMON_TIMEOUT="600")
        try:
            result = asyncio.run(run(server, args.people, args.tasks, args.rate))
        finally:
            server.stop()
    emit({"bench": "fanout", "backend": name, **result, "machine": machine()})


if __name__ == "__main__":
    main()
