"""Real multi-process races: one lease, 16 contenders -> one winner; 16 senders -> nothing lost."""

import multiprocessing as mp
import traceback

from agents_room.room import Room

N = 16
PER_SENDER = 40


def _lease_worker(db, cwd, barrier, out):
    try:
        r = Room.open(db)
        sid = r.join(cwd=cwd, label="contender")["session"]
        barrier.wait(timeout=30)
        res = r.lease_acquire(sid, ["src/shared.py"], ttl=300)
        out.put(("ok", sid, bool(res["granted"]), res.get("conflicts", [{}])[0].get("holder") if res["conflicts"] else None))
    except BaseException:  # noqa: BLE001 — the thread reports any failure to the test
        out.put(("error", traceback.format_exc(), None, None))


def test_sixteen_processes_race_for_one_lease(db, repos):
    # no store yet: all 16 create and migrate it at once
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(N), ctx.Queue()
    procs = [ctx.Process(target=_lease_worker, args=(str(db), str(repos["api"]), barrier, out)) for _ in range(N)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in range(N)]
    for p in procs:
        p.join(timeout=30)
    errors = [r[1] for r in results if r[0] == "error"]
    assert not errors, errors[0]
    winners = [r[1] for r in results if r[2]]
    assert len(winners) == 1
    # every loser was told who holds it: the winner
    assert {r[3] for r in results if not r[2]} == {winners[0]}
    r = Room.open(db)
    assert r.conn.execute("SELECT count(*) FROM leases").fetchone()[0] == 1


def _send_worker(db, cwd, barrier, out):
    try:
        r = Room.open(db)
        sid = r.join(cwd=cwd, rooms=["race"], repo_room=False)["session"]
        barrier.wait(timeout=30)
        ids = [r.send(sid, "*", f"{sid} #{i}")["message_id"] for i in range(PER_SENDER)]
        out.put(("ok", sid, ids))
    except BaseException:  # noqa: BLE001 — the thread reports any failure to the test
        out.put(("error", traceback.format_exc(), None))


def test_sixteen_processes_send_concurrently_nothing_lost(db, repos):
    r = Room.open(db)
    reader = r.join(cwd=str(repos["web"]), rooms=["race"], repo_room=False)["session"]
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(N), ctx.Queue()
    procs = [ctx.Process(target=_send_worker, args=(str(db), str(repos["api"]), barrier, out)) for _ in range(N)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in range(N)]
    for p in procs:
        p.join(timeout=30)
    errors = [x[1] for x in results if x[0] == "error"]
    assert not errors, errors[0]
    sent = {mid for x in results for mid in x[2]}
    assert len(sent) == N * PER_SENDER
    got = []
    while True:
        batch = r.recv(reader, limit=500)["messages"]
        if not batch:
            break
        got += [m["id"] for m in batch]
    assert set(got) == sent and len(got) == len(sent)
