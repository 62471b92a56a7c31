"""Idle memory of a daemon (issue 3): a real server and one `predictorx daemon start --foreground`.

Waits until the daemon registered and holds its push connection, lets it idle (heartbeats, the GC
timer, the event stream) for --idle seconds, then reads its memory with psutil: RSS of the daemon
and of its children (none are expected while idle), plus USS and PSS (what it alone costs, and its
fair share of shared pages). Sampled once a second over the idle window; the maximum is reported.

Usage: .venv/bin/python bench/daemon_rss.py [--idle 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Daemon, Server, emit, log, machine, sqlite_url, tempdir

TARGET_MB = 80.0
MB = 1024 * 1024


def sample(pid: int) -> dict:
    proc = psutil.Process(pid)
    procs = [proc, *proc.children(recursive=True)]
    rss = uss = pss = 0
    names = []
    for p in procs:
        try:
            info = p.memory_full_info()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        rss += info.rss
        uss += info.uss
        pss += getattr(info, "pss", 0)
        names.append(p.name())
    return {"rss": rss, "uss": uss, "pss": pss, "rss_self": proc.memory_info().rss, "processes": len(procs),
            "names": names, "threads": proc.num_threads()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--idle", type=float, default=5.0)
    args = ap.parse_args()
    with tempdir("pxbench-rss-") as root:
        server = Server(root, sqlite_url(root))
        daemon = None
        try:
            log("starting one daemon")
            daemon = Daemon(server, root / "daemon")
            log(f"daemon {daemon.id} registered and connected; idling {args.idle} s")
            samples = []
            end = time.monotonic() + args.idle
            while time.monotonic() < end:
                time.sleep(1)
                samples.append(sample(daemon.proc.pid))
            info = server.api("GET", f"/api/daemons/{daemon.id}")
        finally:
            if daemon:
                daemon.stop()
            server.stop()
    peak = max(samples, key=lambda s: s["rss"])
    rss_mb = peak["rss"] / MB
    emit({
        "bench": "daemon_rss",
        "machine": machine(),
        "setup": {"server": "sqlite", "daemon": "predictorx daemon start --foreground (registered, push connection "
                  "open, no task)", "idle_s": args.idle, "samples": len(samples),
                  "runtimes_registered": [r["provider"] for r in info.get("runtimes", [])]},
        "target": f"rss incl. children <= {TARGET_MB} MB",
        "rss_including_children_mb": round(rss_mb, 1),
        "rss_daemon_only_mb": round(peak["rss_self"] / MB, 1),
        "uss_mb": round(peak["uss"] / MB, 1),
        "pss_mb": round(peak["pss"] / MB, 1),
        "processes": peak["processes"],
        "process_names": peak["names"],
        "threads": peak["threads"],
        "rss_samples_mb": [round(s["rss"] / MB, 1) for s in samples],
        "meets_target": rss_mb <= TARGET_MB,
    })


if __name__ == "__main__":
    main()
