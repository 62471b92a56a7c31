"""The forge loop's latencies (issue 22 Measure), on SQLite, against the GitHub stand-in
(tests/forgestand: its REST API in-process, git smart HTTP through nginx + git http-backend).

1. Webhook received → the follow-up's agent process started: a "changes requested" review is
   delivered, signed, to `POST /api/forges/{id}/webhook`; the agent (a `command` agent, sandbox
   off so it may write its stamp outside its worktree) writes CLOCK_REALTIME as its first
   instruction. Latency = stamp − the moment the delivery was sent. Each follow-up completes and
   its push lands before the next review (one at a time: latency, not queueing). Target p50 ≤ 1 s.
2. Run ended → PR opened (with push), against a bare `git push` of the same branch to the same git
   server, in interleaved pairs (one run, then its bare push, nothing else running): the run's end
   is the agent's own last instruction (it writes CLOCK_REALTIME after its commit, just before it
   exits), so everything the daemon does after the agent (delivering the branch, the push, its
   report, the server's PR open) counts. "Opened" is measured twice: when the stand-in answered
   the PR's POST (the forge created it; watched in this process) and when the server's event
   stream (`GET /api/events`, what the task and issue pages hold) says the PR is open — nothing
   polls the server meanwhile, so no request of the bench's shares the CPU with its work. The
   bare push sends the same branch, from the
   person's folder, to a second repository on the same stand-in that holds the same history (so
   it carries the same new objects), with the same credential path as the daemon's push (the
   token in git's environment as an Authorization header, forgepush.credential_env); a third push
   with the token in the URL (as a person types it: git asks without it first and gets 401) is
   reported beside it. The pair's bare pushes start once the task has finished. The daemon's step
   times and the server's (predictorx/steptimes.py, PREDICTORX_STEP_TIMES) give where the time goes, p50 per step from
   the agent's end. Target: p50 ratio ≤ 1.5.

Usage: .venv/bin/python bench/forge_loop.py [--followups 15] [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))
from _common import Daemon, EventWatch, Server, emit, log, machine, sqlite_url, summary_ms, tempdir, wait_until  # noqa: E402
from forgestand import start_standin  # noqa: E402
from predictorx.daemon.forgepush import credential_env  # noqa: E402
from predictorx.forges.base import PushTarget  # noqa: E402

TARGET_FOLLOWUP_P50_MS = 1000.0
TARGET_PR_RATIO = 1.5


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=60).stdout.strip()


def agent_script(stamps: Path, ends: Path) -> str:
    return (f'echo "$PREDICTORX_TASK_ID $(date +%s.%N)" >> {stamps}; n=$(ls runs 2>/dev/null | wc -l); mkdir -p runs; '
            'echo "run $n of $PREDICTORX_TASK_ID" > runs/$n.txt; git add runs && git -c user.name=bench -c user.email=b@example.com '
            f'commit -qm "run $n"; echo "$PREDICTORX_TASK_ID $(date +%s.%N)" >> {ends}')


def stamp_of(stamps: Path, task_id: str) -> float | None:
    if not stamps.exists():
        return None
    for line in stamps.read_text().splitlines():
        tid, _, at = line.partition(" ")
        if tid == task_id:
            return float(at)
    return None


def step_times(path: Path, task_id: str) -> dict[str, float]:
    """The daemon's and the server's step times of one task (predictorx/steptimes.py), the first of each step."""
    found: dict[str, float] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            tid, step, at = line.split(" ")
            name = f"server: {step}" if step.startswith("s_") else f"daemon: {step}"
            if tid == task_id and name not in found:
                found[name] = float(at)
    return found


def pr_events(server: Server) -> EventWatch:
    """When each task's PR is first said to be open (`pull_request_changed`, state open or draft)."""
    return EventWatch(server, lambda e: e.get("type") == "pull_request_changed" and e.get("state") in ("open", "draft"))


def runs_of(server: Server, number: int) -> list[dict]:
    return server.api("GET", f"/api/issues/{number}/runs")


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--followups", type=int, default=15)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    with tempdir("px-bench-forge-") as root:
        forge = start_standin("github", root / "standin")
        server = daemon = None
        try:
            server = Server(root, sqlite_url(root), PREDICTORX_FORGE_POLL_INTERVAL="0",
                            PREDICTORX_STEP_TIMES=str(root / "steps.txt"))
            daemon = Daemon(server, root / "daemon", PREDICTORX_STEP_TIMES=str(root / "steps.txt"))
            before = machine()
            figures = measure(server, daemon, forge, root, args)
            emit({"bench": "forge_loop", "database": "sqlite", "machine": before,
                  "loadavg_1_5_15_after": [round(x, 2) for x in os.getloadavg()], **figures})
        finally:
            for p in (daemon, server):
                if p is not None:
                    p.stop()
            forge.stop()


def measure(server: Server, daemon: Daemon, forge, root: Path, args: argparse.Namespace) -> dict:
    repo = forge.create_repo("octo/app")
    twin = forge.create_repo("octo/app-bare")  # the bare push's target: the same history
    twin_url = forge.create_repo("octo/app-bare-url")  # the same, pushed to with the token in the URL
    folder = root / "folder"
    git(root, "clone", "-q", forge.authed_url(repo.path), str(folder))
    git(folder, "remote", "set-url", "origin", repo.clone_url)
    git(folder, "push", "-q", "-f", forge.authed_url(twin.path), "main:main")
    git(folder, "push", "-q", "-f", forge.authed_url(twin_url.path), "main:main")
    stamps, ends = root / "stamps.txt", root / "ends.txt"
    conn = server.api("POST", "/api/forges", {"kind": "github", "name": "gh", "base_url": forge.base_url,
                                              "api_url": forge.api_url, "credential": forge.token})
    hook = f"{server.url}/api/forges/{conn['id']}/webhook"
    server.api("POST", "/api/agents", {"name": "coder", "provider": "command", "sandbox": False,
                                       "command": ["sh", "-c", agent_script(stamps, ends)]})
    project = server.api("POST", "/api/projects", {"title": "Bench", "resources": [{
        "resource_type": "local_directory", "label": "app",
        "resource_ref": {"local_path": str(folder), "daemon_id": daemon.id, "execution_mode": "worktree"}}]})
    server.api("PATCH", f"/api/projects/{project['id']}", {"forge_policy": {"max_followups": 20, "draft": False}})

    # -- 2: run ended → PR opened, and the bare push of the same branch -----------------------------
    # The bare push: the same branch, from the person's folder, to the same git server, with the same
    # credential path as the daemon's push (the token in git's environment, forgepush.credential_env).
    bare_env = {**os.environ, **credential_env(PushTarget(remote_url=twin.clone_url, branch="main",
                                                          username=forge.git_username, token=forge.token))}
    events = pr_events(server)
    events.start()
    assert events.ready.wait(30), "the event stream said no hello"
    opened, bare, bare_url, created, since_finish, loads = [], [], [], [], [], []
    steps: dict[str, list[float]] = {}
    first_issue = first_task = None
    for i in range(args.runs):
        load_before = os.getloadavg()[0]
        calls_before = len(forge.calls)
        issue = server.api("POST", "/api/issues", {"title": f"Run {i}", "project_id": project["id"], "assignee": "coder"})
        task_id = runs_of(server, issue["number"])[0]["id"]
        # Watched on the stand-in and on the event stream (both in this process): no request of the
        # bench's competes with the server's work before the PR is shown open.
        wait_until(lambda: any(c.method == "POST" and c.path.endswith("/pulls") for c in forge.calls[calls_before:]),
                   60, 0.005, "the PR's POST on the forge")
        seen = wait_until(lambda: events.seen.get(task_id), 60, 0.005, "the PR's open on the event stream")
        pr = server.api("GET", f"/api/tasks/{task_id}/pr")
        assert pr.get("number"), pr
        # The PR may open before the task's finish (the push is reported first): the pair's bare push
        # starts once the daemon is done with the task, so the two never share the machine.
        task = wait_until(lambda: (t := server.api("GET", f"/api/tasks/{task_id}")) and t.get("finished_at") and t,
                          60, 0.01, "the task's finish")
        ended = stamp_of(ends, task_id)
        assert ended is not None, "the agent wrote no end stamp"
        opened.append(seen - ended)
        post = [c for c in forge.calls if c.method == "POST" and c.path.endswith("/pulls")][-1]
        created.append(post.answered_at - ended)
        since_finish.append(seen - _ts(task["finished_at"]))
        for step, at in step_times(root / "steps.txt", task_id).items():
            steps.setdefault(step, []).append(at - ended)
        steps.setdefault("server: finish recorded (finished_at)", []).append(_ts(task["finished_at"]) - ended)
        steps.setdefault("forge: PR POST arrived", []).append(post.at - ended)
        steps.setdefault("forge: PR POST answered", []).append(post.answered_at - ended)
        t0 = time.monotonic()
        subprocess.run(["git", "push", "-q", twin.clone_url, f"{pr['branch']}:refs/heads/{pr['branch']}"], cwd=folder,
                       env=bare_env, check=True, capture_output=True, timeout=60)
        bare.append(time.monotonic() - t0)
        t0 = time.monotonic()  # as a person types it: the token in the URL (git asks without it first, gets 401)
        git(folder, "push", "-q", forge.authed_url(twin_url.path), f"{pr['branch']}:refs/heads/{pr['branch']}")
        bare_url.append(time.monotonic() - t0)
        loads.append((load_before + os.getloadavg()[0]) / 2)
        if first_issue is None:
            first_issue, first_task = issue, task_id
        log(f"run {i}: PR #{pr['number']} created {created[-1] * 1000:.0f} ms / seen {opened[-1] * 1000:.0f} ms after "
            f"the agent ended ({since_finish[-1] * 1000:.0f} ms after its finish); bare push {bare[-1] * 1000:.0f} ms "
            f"({bare_url[-1] * 1000:.0f} ms with the token in the URL); "
            f"load {loads[-1]:.1f}")

    # -- 1: webhook → follow-up's agent process started ----------------------------------------------
    pr = server.api("GET", f"/api/tasks/{first_task}/pr")
    latencies = []
    for i in range(args.followups):
        head = forge.branch_head(repo.path, pr["branch"])
        forge.submit_review(repo.path, pr["number"], "changes_requested", body=f"Round {i}.",
                            comments=[("runs/0.txt", 1, f"Change {i}.")])
        delivery = forge.webhook("review", repo.path, pr["number"])
        before = len(runs_of(server, first_issue["number"]))
        sent = time.time()
        assert forge.deliver(hook, delivery, secret=conn["webhook_secret"]) == 200
        runs = wait_until(lambda: (r := runs_of(server, first_issue["number"])) and len(r) > before and r, 30, 0.01,
                          "the follow-up")
        follow = runs[-1]["id"]
        started = wait_until(lambda: stamp_of(stamps, follow), 30, 0.01, "the agent's stamp")
        latencies.append(started - sent)
        wait_until(lambda: server.api("GET", f"/api/tasks/{follow}")["status"] in ("completed", "failed"), 60, 0.02, "the follow-up to end")
        wait_until(lambda: forge.branch_head(repo.path, pr["branch"]) != head, 60, 0.02, "the follow-up's push")
        log(f"follow-up {i}: agent started {latencies[-1] * 1000:.0f} ms after the webhook was sent")

    followup = summary_ms(latencies)
    pr_posts = [c for c in forge.calls if c.method == "POST" and c.path.endswith("/pulls")]
    api_peers = {c.peer for c in forge.calls if c.peer}
    pr_open, push, after_finish = summary_ms(opened), summary_ms(bare), summary_ms(since_finish)
    ratio = round(pr_open["p50_ms"] / push["p50_ms"], 2) if push.get("p50_ms") else None
    pairs = sorted(o / b for o, b in zip(opened, bare))
    created_ratio = round(summary_ms(created)["p50_ms"] / push["p50_ms"], 2) if push.get("p50_ms") else None
    return {"webhook_to_followup_agent_started": {**followup, "target_p50_ms": TARGET_FOLLOWUP_P50_MS,
                                                  "met": followup.get("p50_ms", 1e9) <= TARGET_FOLLOWUP_P50_MS},
            "run_ended_to_pr_opened_with_push": pr_open,
            "run_ended_to_pr_created_on_the_forge": summary_ms(created), "bare_git_push_same_branch": push,
            "bare_git_push_same_branch_token_in_url": summary_ms(bare_url),
            "steps_after_the_agent_ended_p50_ms": {k: summary_ms(v)["p50_ms"] for k, v in
                                                   sorted(steps.items(), key=lambda kv: statistics.median(kv[1]))},
            "finish_received_to_pr_opened (negative: the PR opened before the finish)": after_finish,
            "pr_opened_over_bare_push_p50": {"ratio": ratio, "target": TARGET_PR_RATIO,
                                             "met": ratio is not None and ratio <= TARGET_PR_RATIO,
                                             "median_of_pair_ratios": round(statistics.median(pairs), 2) if pairs else None,
                                             "pr_created_on_forge_over_bare_push_p50": created_ratio,
                                             "pr_opened_over_bare_push_token_in_url_p50": round(
                                                 pr_open["p50_ms"] / summary_ms(bare_url)["p50_ms"], 2) if bare_url else None,
                                             "load_1min_during_pairs_median": round(statistics.median(loads), 2) if loads else None},
            "forge_api_connections": {"pr_posts": len(pr_posts), "their_connections": len({c.peer for c in pr_posts}),
                                      "api_calls": sum(1 for c in forge.calls if c.peer),
                                      "connections_of_all_calls": len(api_peers)},
            "notes": "GitHub stand-in on loopback (API in-process uvicorn, git via nginx + git http-backend); "
                     "agent = sh command, sandbox off; PR seen open = its pull_request_changed event on /api/events"}


if __name__ == "__main__":
    tempfile.tempdir = None
    main()
