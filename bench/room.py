"""agents-room benchmark: prints one JSON object with every figure issues 5 and 11 ask for.

    .venv/bin/python bench/room.py [--scale 1.0]

Everything runs against a temporary store (AGENTS_ROOM_DB in a temp dir) that is
removed at the end; ~/.agents-room is never touched.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agents_room.room import Room

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import percentile as _nearest_rank  # (the benches' one percentile)


def percentile(xs: list[float], p: float) -> float:
    return _nearest_rank(sorted(xs), p)

PY = sys.executable
WRITERS = 16
#: 2,000 made-up words: bodies with a realistic spread of common and rare terms for search
VOCAB = [f"{a}{b}{c}" for a in ("ka", "lo", "mi", "nu", "pe", "ro", "su", "ti", "va", "ze")
         for b in ("ban", "cor", "dil", "fen", "gat", "hum", "jor", "kel", "lim", "mos", "nep", "pul", "quo", "rid",
                   "sol", "tam", "ven", "wix", "yot", "zub")
         for c in ("a", "e", "i", "o", "u", "an", "er", "is", "on", "us")]


def ms(x: float) -> float:
    return round(x * 1000, 3)


def make_repo(root: Path, name: str) -> Path:
    d = root / name
    (d / ".git").mkdir(parents=True)
    (d / ".git" / "config").write_text(f'[remote "origin"]\n\turl = git@example.com:acme/{name}.git\n')
    return d


# ---------------------------------------------------------------- single-process send
def bench_send_single(tmp: Path, repo: Path, n: int = 3000) -> dict:
    r = Room.open(tmp / "single.db")
    a = r.join(cwd=str(repo), rooms=["bench"])["session"]
    for _ in range(3):
        r.join(cwd=str(repo), rooms=["bench"])
    lat = []
    t0 = time.perf_counter()
    for i in range(n):
        s = time.perf_counter()
        r.send(a, "*", f"message {i}")
        lat.append(time.perf_counter() - s)
    total = time.perf_counter() - t0
    r.close()
    return {"n": n, "recipients_each": 3, "p50_ms": ms(percentile(lat, 50)), "p99_ms": ms(percentile(lat, 99)),
            "msg_per_s": round(n / total), "target": "p50 <= 1 ms, >= 1000 msg/s"}


# ---------------------------------------------------------------- 16 writer processes
def _writer(db: str, cwd: str, n: int, barrier, out) -> None:
    r = Room.open(db)
    sid = r.join(cwd=cwd, rooms=["race"], repo_room=False)["session"]
    barrier.wait(timeout=60)
    ids = [r.send(sid, "*", f"{sid} {i}")["message_id"] for i in range(n)]
    out.put(ids)


def bench_send_multi(tmp: Path, repo: Path, per: int = 150) -> dict:
    db = tmp / "multi.db"
    r = Room.open(db)
    reader = r.join(cwd=str(repo), rooms=["race"], repo_room=False)["session"]
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(WRITERS + 1), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(db), str(repo), per, barrier, out)) for _ in range(WRITERS)]
    for p in procs:
        p.start()
    barrier.wait(timeout=60)
    t0 = time.perf_counter()
    sent = set()
    for _ in procs:
        sent |= set(out.get(timeout=120))
    total = time.perf_counter() - t0
    for p in procs:
        p.join(timeout=30)
    got = set()
    while True:
        batch = r.recv(reader, limit=500)["messages"]
        if not batch:
            break
        got |= {m["id"] for m in batch}
    r.close()
    return {"writers": WRITERS, "messages": len(sent), "recipients_each": WRITERS, "aggregate_msg_per_s": round(len(sent) / total),
            "lost": len(sent - got), "target": ">= 300 msg/s, 0 lost"}


# ---------------------------------------------------------------- MCP round trip
async def _mcp(db: Path, repo: Path, n: int) -> list[float]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=PY, args=["-m", "agents_room", "mcp"], env={"AGENTS_ROOM_DB": str(db)}, cwd=str(repo))
    async with Client(params, read_timeout_seconds=30) as c:
        res = await c.call_tool("room_join", {"rooms": ["bench"]})
        assert not res.is_error, res.content[0].text
        sid = res.structured_content["session"]
        peer = Room.open(db)
        peer.join(cwd=str(repo), rooms=["bench"])
        peer.close()
        for i in range(20):
            await c.call_tool("msg_send", {"session": sid, "to": "*", "body": f"warm {i}"})
        lat = []
        for i in range(n):
            s = time.perf_counter()
            r = await c.call_tool("msg_send", {"session": sid, "to": "*", "body": f"m {i}"})
            lat.append(time.perf_counter() - s)
            assert not r.is_error
    return lat


def bench_mcp(tmp: Path, repo: Path, n: int = 300) -> dict:
    lat = asyncio.run(_mcp(tmp / "mcp.db", repo, n))
    return {"n": n, "mean_ms": ms(statistics.mean(lat)), "p50_ms": ms(percentile(lat, 50)), "p95_ms": ms(percentile(lat, 95)),
            "target": "p95 <= 15 ms (MCP Agent Mail published mean: 118 ms)"}


# ---------------------------------------------------------------- big store
def build_big_store(db: Path, repo: Path, n_messages: int = 100_000) -> dict:
    r = Room.open(db)
    sessions = [r.join(cwd=str(repo), rooms=["big", f"team{i % 4}"], label=f"s{i}", harness="claude",
                       harness_key=f"chat-{i}", autonomy=i % 3)["session"] for i in range(20)]
    now = time.time()
    conn = r.conn
    room_ids = [x[0] for x in conn.execute("SELECT id FROM rooms")]
    rng = random.Random(5)
    conn.execute("BEGIN IMMEDIATE")
    msgs, mrooms, dels = [], [], []
    for mid in range(1, n_messages + 1):
        sender = sessions[mid % len(sessions)]
        created = now - (n_messages - mid) * 0.5
        expires = created + 600 if mid % 10 == 0 else None  # 10% carry a TTL; most of those have expired
        words = " ".join(rng.choice(VOCAB) for _ in range(14))
        msgs.append((mid, sender, "*", f"message {mid}: {words}", created, expires, 2))
        mrooms += [(mid, room_ids[0]), (mid, rng.choice(room_ids))]
        for rcpt in rng.sample(sessions, 2):
            state = "read" if mid < n_messages - 200 else "stored"
            dels.append((mid, rcpt, state))
    conn.executemany("INSERT INTO messages(id, sender, selector, body, created_at, expires_at, recipient_count) VALUES (?,?,?,?,?,?,?)", msgs)
    conn.executemany("INSERT OR IGNORE INTO message_rooms(message_id, room_id) VALUES (?,?)", mrooms)
    conn.executemany("INSERT OR IGNORE INTO deliveries(message_id, recipient, state) VALUES (?,?,?)", dels)
    conn.executemany("INSERT INTO events(at, kind, session_id) VALUES (?,?,?)",
                     [(now - 40 * 86400 + i, "join", sessions[i % 20]) for i in range(20_000)])
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    r.close()
    return {"messages": n_messages, "deliveries": len(dels), "sessions": len(sessions), "db_mb": round(db.stat().st_size / 1e6, 1)}


def bench_hooks(db: Path, repo: Path, n: int = 40) -> dict:
    """Whole hook process time, interleaved with a bare interpreter so both see the same machine load."""
    env = dict(os.environ, AGENTS_ROOM_DB=str(db))
    events = {
        "PostToolUse": {"tool_name": "Bash", "tool_input": {"command": "ls"}},
        "PreToolUse": {"tool_name": "Edit", "tool_input": {"file_path": str(repo / "a.py")}},
        "Stop": {"stop_hook_active": False},
    }
    lat: dict[str, list[float]] = {k: [] for k in [*events, "bare_python"]}
    for i in range(n):
        s = time.perf_counter()
        subprocess.run([PY, "-c", "pass"], timeout=30)
        lat["bare_python"].append(time.perf_counter() - s)
        for event, extra in events.items():
            payload = {"session_id": f"chat-{i % 20}", "cwd": str(repo), "hook_event_name": event, **extra}
            s = time.perf_counter()
            res = subprocess.run([PY, "-m", "agents_room", "hook", f"--event={event}", "--harness=claude"],
                                 input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=30)
            lat[event].append(time.perf_counter() - s)
            assert res.returncode == 0, res.stderr
    out: dict = {k: {"n": n, "p50_ms": ms(percentile(v, 50)), "p95_ms": ms(percentile(v, 95))} for k, v in lat.items()}
    out["target"] = "p95 <= 150 ms on a store of 100,000 messages"
    return out


def bench_doctor_prune(db: Path) -> dict:
    r = Room.open(db)
    s = time.perf_counter()
    rep = r.doctor()
    doctor = time.perf_counter() - s
    s = time.perf_counter()
    pr = r.prune()
    prune = time.perf_counter() - s
    r.close()
    return {"doctor_s": round(doctor, 3), "doctor_integrity": rep["integrity"], "prune_s": round(prune, 3),
            "pruned_expired_messages": pr["expired_messages"], "pruned_old_events": pr["old_events"],
            "target": "doctor <= 1 s, prune <= 2 s on 100,000 messages"}


# ---------------------------------------------------------------- lease contention
def _contender(db: str, cwd: str, rounds: int, barrier, out) -> None:
    r = Room.open(db)
    sid = r.join(cwd=cwd, label="contender")["session"]
    barrier.wait(timeout=60)
    lat, wins = [], 0
    for i in range(rounds):
        s = time.perf_counter()
        res = r.lease_acquire(sid, [f"src/hot{i % 4}.py"], ttl=60)
        lat.append(time.perf_counter() - s)
        if res["granted"]:
            wins += 1
            r.lease_release(sid)
    out.put((lat, wins))


def bench_leases(tmp: Path, repo: Path, rounds: int = 60) -> dict:
    db = tmp / "lease.db"
    Room.open(db).close()
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(WRITERS), ctx.Queue()
    procs = [ctx.Process(target=_contender, args=(str(db), str(repo), rounds, barrier, out)) for _ in range(WRITERS)]
    for p in procs:
        p.start()
    lat, wins = [], 0
    for _ in procs:
        l, w = out.get(timeout=120)
        lat += l
        wins += w
    for p in procs:
        p.join(timeout=30)
    return {"sessions": WRITERS, "acquires": len(lat), "granted": wins, "p50_ms": ms(percentile(lat, 50)),
            "p95_ms": ms(percentile(lat, 95)), "target": "p95 <= 20 ms with 16 contending sessions"}


# ---------------------------------------------------------------- msg_recv over stdio MCP (issue 11)
async def _mcp_recv(db: Path, repo: Path, n: int) -> list[float]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=PY, args=["-m", "agents_room", "mcp"], env={"AGENTS_ROOM_DB": str(db)}, cwd=str(repo))
    async with Client(params, read_timeout_seconds=30) as c:
        res = await c.call_tool("room_join", {"rooms": ["bench"], "label": "reader"})
        sid = res.structured_content["session"]
        peer = Room.open(db)
        other = peer.join(cwd=str(repo), rooms=["bench"], label="writer")["session"]
        for i in range(20):
            peer.send(other, sid, f"warm {i}")
            await c.call_tool("msg_recv", {"session": sid})
        lat = []
        for i in range(n):
            peer.send(other, sid, f"message {i} " + "y" * 200)  # one unread message each time, outside the timing
            s = time.perf_counter()
            r = await c.call_tool("msg_recv", {"session": sid})
            lat.append(time.perf_counter() - s)
            assert not r.is_error and len(r.structured_content["messages"]) == 1
        peer.close()
    return lat


def bench_mcp_recv(tmp: Path, repo: Path, n: int = 300) -> dict:
    lat = asyncio.run(_mcp_recv(tmp / "mcp-recv.db", repo, n))
    return {"n": n, "mean_ms": ms(statistics.mean(lat)), "p50_ms": ms(percentile(lat, 50)), "p95_ms": ms(percentile(lat, 95)),
            "target": "p95 <= 15 ms"}


# ---------------------------------------------------------------- search over 100,000 messages (issue 11)
def bench_search(db: Path, n: int = 200) -> dict:
    r = Room.open(db)
    sid = r.conn.execute("SELECT id FROM sessions WHERE label='s1'").fetchone()[0]
    rng = random.Random(11)
    kinds = {"one_word": lambda: rng.choice(VOCAB), "two_words": lambda: f"{rng.choice(VOCAB)} {rng.choice(VOCAB)}",
             "prefix": lambda: rng.choice(VOCAB)[:4] + "*", "phrase": lambda: f'"{rng.choice(VOCAB)} {rng.choice(VOCAB)}"'}
    out: dict = {}
    all_lat = []
    for name, make in kinds.items():
        lat, hits = [], []
        for _ in range(n // len(kinds)):
            q = make()
            s = time.perf_counter()
            res = r.search(sid, q, limit=20)
            lat.append(time.perf_counter() - s)
            hits.append(res["matches"])
        all_lat += lat
        out[name] = {"p50_ms": ms(percentile(lat, 50)), "p95_ms": ms(percentile(lat, 95)), "mean_results": round(statistics.mean(hits), 1)}
    r.close()
    out.update({"n": len(all_lat), "p95_ms": ms(percentile(all_lat, 95)), "target": "p95 <= 50 ms over 100,000 messages"})
    return out


# ---------------------------------------------------------------- the commit guard (issue 11)
def bench_guard(tmp: Path, files: int = 10_000, n: int = 20) -> dict:
    repo = tmp / "big-repo"
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@x", "AGENTS_ROOM_DB": str(tmp / "guard.db")}
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env, timeout=60)
    for i in range(files):
        d = repo / f"pkg{i % 100}"
        d.mkdir(exist_ok=True)
        (d / f"mod{i}.py").write_text(f"x = {i}\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env, timeout=300)
    subprocess.run(["git", "commit", "-qm", "base"], cwd=repo, check=True, env=env, timeout=300)
    holder = subprocess.Popen([PY, "-c", "import time; time.sleep(600)"])
    try:
        r = Room.open(tmp / "guard.db")
        h = r.join(cwd=str(repo), label="holder", pid=holder.pid)["session"]
        r.lease_acquire(h, [f"pkg{i}/**" for i in range(50, 60)] + ["pkg7/mod7.py"])
        for i in range(1, 60):  # other sessions' leases elsewhere in the store
            o = r.join(cwd=str(repo), label=f"o{i}")["session"]
            r.conn.execute("UPDATE sessions SET pid=NULL WHERE id=?", (o,))
        r.close()
        for i in range(0, 5):
            (repo / f"pkg{i}" / f"mod{i}.py").write_text("changed\n")
        subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env, timeout=60)
        import resource

        lat, cpu = [], []
        for _ in range(n):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            s = time.perf_counter()
            res = subprocess.run([PY, "-m", "agents_room", "guard", "check", "--repo", str(repo)], env=env,
                                 capture_output=True, text=True, timeout=60)
            lat.append(time.perf_counter() - s)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            # CPU of the check and its git calls: what it costs, whatever the machine's load
            cpu.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
            assert res.returncode == 0, res.stderr
        (repo / "pkg7" / "mod7.py").write_text("leased\n")
        subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env, timeout=60)
        refused = subprocess.run([PY, "-m", "agents_room", "guard", "check", "--repo", str(repo)], env=env,
                                 capture_output=True, text=True, timeout=60)
        assert refused.returncode == 3 and "pkg7/mod7.py" in refused.stderr
        bare = []
        for _ in range(n):  # the floor: starting this interpreter at all
            s = time.perf_counter()
            subprocess.run([PY, "-c", "pass"], timeout=60)
            bare.append(time.perf_counter() - s)
    finally:
        holder.kill()
        holder.wait(timeout=10)
    return {"files": files, "staged": 6, "n": n, "p50_ms": ms(percentile(lat, 50)), "p95_ms": ms(percentile(lat, 95)),
            "cpu_p50_ms": ms(percentile(cpu, 50)), "cpu_p95_ms": ms(percentile(cpu, 95)),
            "python_startup_p50_ms": ms(percentile(bare, 50)), "refuses_a_leased_file": True,
            "target": "<= 100 ms on a 10,000-file repository"}


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply every count (messages, rounds, files; a quick check: 0.01)")
    args = ap.parse_args()

    def n(count: int, least: int = 3) -> int:
        return max(least, int(count * args.scale))

    t0 = time.time()
    tmp = Path(tempfile.mkdtemp(prefix="agents-room-bench-"))
    os.environ["AGENTS_ROOM_DB"] = str(tmp / "unused.db")
    try:
        repo = make_repo(tmp, "api")
        result: dict = {"scale": args.scale, "cpus": os.cpu_count(), "python": sys.version.split()[0],
                        "loadavg_1m_at_start": os.getloadavg()[0]}
        result["msg_send_store_single_process"] = bench_send_single(tmp, repo, n(3000))
        result["msg_send_16_writer_processes"] = bench_send_multi(tmp, repo, n(150))
        result["msg_send_mcp_stdio_round_trip"] = bench_mcp(tmp, repo, n(300))
        result["msg_recv_mcp_stdio_round_trip"] = bench_mcp_recv(tmp, repo, n(300))
        result["lease_acquire_16_contending"] = bench_leases(tmp, repo, n(60))
        big = tmp / "big.db"
        result["big_store"] = build_big_store(big, repo, n(100_000, 200))
        result["hook_process_time_100k"] = bench_hooks(big, repo, n(40))
        result["search_100k"] = bench_search(big, n(200, 8))
        result["doctor_prune_100k"] = bench_doctor_prune(big)
        result["commit_guard_10k_files"] = bench_guard(tmp, n(10_000, 20), n(20))
        result["loadavg_1m_at_end"] = os.getloadavg()[0]
        result["wall_s"] = round(time.time() - t0, 1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
