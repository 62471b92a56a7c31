"""Load test (issue 14): locust, headless, 200 users on the main API mix for 60 s, on loopback.

Two set-ups, one JSON object:
- `replicas`: 2 `predictorx server start` processes on one PostgreSQL schema behind nginx (the
  config `predictorx server nginx-config` prints), locust → nginx;
- `up`: one `predictorx up --no-demo` on SQLite (server + web + its local daemon), locust → it.

The mix is bench/locustfile.py (reads mostly, some writes, 0.5–1.5 s think time per user).
Reported per set-up: requests, failures, requests/s, p50/p95/p99/max ms (locust's aggregated
figures), server CPU per request, and the load average. Target: 0 errors; p99 reported.

Usage: .venv/bin/python bench/load.py [--users 200] [--seconds 60] [--only replicas|up]
Needs locust (`pip install -e '.[bench]'`) and nginx.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    PYTHON, Server, emit, free_port, log, machine, postgres_base_url, postgres_schema, tempdir, wait_until,
)

HERE = Path(__file__).resolve().parent
SEED_ISSUES = 50


def seed(url: str, token: str) -> list[int]:
    h = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=h, timeout=60) as c:
        c.post("/api/projects", json={"title": "load"}).raise_for_status()
        c.post("/api/agents", json={"name": "loader", "provider": "command", "command": ["true"]}).raise_for_status()
        return [c.post("/api/issues", json={"title": f"seed {i}"}).json()["number"] for i in range(SEED_ISSUES)]


def run_locust(url: str, token: str, issues: list[int], users: int, seconds: int, root: Path) -> dict:
    locust = shutil.which("locust", path=str(Path(PYTHON).parent)) or shutil.which("locust")
    if locust is None:
        raise SystemExit("locust is not installed: .venv/bin/pip install -e '.[bench]'")
    prefix = root / "locust"
    env = {**os.environ, "PX_TOKEN": token, "PX_ISSUES": ",".join(map(str, issues))}
    cmd = [locust, "-f", str(HERE / "locustfile.py"), "--headless", "-u", str(users), "-r", str(max(1, users // 5)),
           "-t", f"{seconds}s", "--host", url, "--csv", str(prefix), "--only-summary", "--stop-timeout", "5",
           "--loglevel", "WARNING"]
    log(f"locust: {users} users for {seconds} s against {url}")
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=seconds + 120)
    if not Path(f"{prefix}_stats.csv").exists():
        raise RuntimeError(f"locust wrote no statistics (exit {p.returncode}): {p.stderr[-2000:]}")
    rows = list(csv.DictReader(open(f"{prefix}_stats.csv")))
    agg = next(r for r in rows if r["Name"] == "Aggregated")
    failures = list(csv.DictReader(open(f"{prefix}_failures.csv"))) if Path(f"{prefix}_failures.csv").exists() else []

    def num(row: dict, key: str) -> float:
        try:
            return float(row[key])
        except (KeyError, ValueError):
            return float("nan")
    per = {r["Name"]: {"requests": int(num(r, "Request Count")), "failures": int(num(r, "Failure Count")),
                       "p50_ms": num(r, "50%"), "p99_ms": num(r, "99%")} for r in rows if r["Name"] != "Aggregated"}
    return {"users": users, "seconds": seconds, "requests": int(num(agg, "Request Count")),
            "failures": int(num(agg, "Failure Count")), "requests_per_s": round(num(agg, "Requests/s"), 1),
            "p50_ms": num(agg, "50%"), "p95_ms": num(agg, "95%"), "p99_ms": num(agg, "99%"),
            "max_ms": num(agg, "Max Response Time"), "per_request": per,
            "failure_kinds": [{k: f[k] for k in ("Method", "Name", "Error", "Occurrences")} for f in failures][:10],
            "locust_exit": p.returncode}


def cpu_of(pids: list[int]) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            for p in [proc, *proc.children(recursive=True)]:
                t = p.cpu_times()
                total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def replicas(args: argparse.Namespace) -> dict:
    from predictorx.server.nginx import start_standalone

    base = postgres_base_url()
    if base is None:
        return {"skipped": "PostgreSQL not reachable"}
    with tempdir("pxbench-load-rep-") as root, postgres_schema(base) as url:
        a = Server(root / "a", url)
        (root / "b" / "server-home").mkdir(parents=True)
        shutil.copy(a.home / "config.json", root / "b" / "server-home" / "config.json")
        b = Server(root / "b", url)
        port = free_port()
        proxy = start_standalone(str(root / "nginx"), [f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"], port)
        try:
            proxy_url = f"http://127.0.0.1:{port}"
            wait_until(lambda: _healthy(proxy_url), 20, what="nginx")
            issues = seed(proxy_url, a.token)
            cpu0 = cpu_of([a.proc.pid, b.proc.pid])
            res = run_locust(proxy_url, a.token, issues, args.users, args.seconds, root)
            cpu = cpu_of([a.proc.pid, b.proc.pid]) - cpu0
            res["server_cpu_ms_per_request"] = round(cpu * 1000 / max(1, res["requests"]), 2)
            res["setup"] = "2 server processes on one PostgreSQL schema behind nginx"
            res["machine"] = machine()
            return res
        finally:
            os.killpg(proxy.pid, signal.SIGTERM)
            proxy.wait(10)
            a.stop()
            b.stop()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/api/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def up(args: argparse.Namespace) -> dict:
    with tempdir("pxbench-load-up-") as root:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "PREDICTORX_HOME": str(root / "home"), "PREDICTORX_WORKSPACES_ROOT": str(root / "ws"),
               "PREDICTORX_LOG_LEVEL": "WARNING"}
        env.pop("PREDICTORX_DATABASE_URL", None)
        log_file = open(root / "up.log", "wb")
        proc = subprocess.Popen([PYTHON, "-m", "predictorx", "up", "--no-demo", "--port", str(port)], env=env,
                                stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_until(lambda: _healthy(url) and (root / "home" / "config.json").exists(), 60, what="predictorx up")
            import json

            token = json.loads((root / "home" / "config.json").read_text())["token"]
            issues = seed(url, token)
            cpu0 = cpu_of([proc.pid])
            res = run_locust(url, token, issues, args.users, args.seconds, root)
            cpu = cpu_of([proc.pid]) - cpu0
            res["server_cpu_ms_per_request"] = round(cpu * 1000 / max(1, res["requests"]), 2)
            res["setup"] = "one `predictorx up --no-demo` on SQLite (server, web and its local daemon)"
            res["machine"] = machine()
            return res
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
            log_file.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, default=200)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--only", choices=("replicas", "up"))
    args = ap.parse_args()
    out = {"bench": "load", "tool": "locust (headless, FastHttpUser), bench/locustfile.py",
           "targets": {"failures": "0", "p99_ms": "reported"}, "machine": machine()}
    if args.only in (None, "replicas"):
        out["replicas"] = replicas(args)
    if args.only in (None, "up"):
        out["up_sqlite"] = up(args)
    out["meets_target"] = {k: out[k].get("failures") == 0 for k in ("replicas", "up_sqlite")
                           if k in out and "failures" in out[k]}
    emit(out)


if __name__ == "__main__":
    main()
