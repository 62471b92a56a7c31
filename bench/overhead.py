"""What the platform costs while agents think (issue 30): the real Claude Code (tests/realcli's pin)
against a loopback model that streams its final answer slowly, through a real server and daemon,
beside bare `claude -p` runs of the same conversation.

For each N in `--concurrency` (default 1 4 8): N bare `claude -p` runs at once, then N tasks at
once through the server and one daemon (its `--max-tasks` is the largest N). The model (the
scripted Messages API of tests/realcli) has the CLI run `true` with its Bash tool, then streams
its answer as one small text delta every `--delta-interval` s (default 0.1) for
`--stream-seconds` (default 60, the one-minute run of the issue's own measurement): the CLI waits
on its model most of the run, as a real one does. A run's fixed costs (its claim, set-up and
finish) weigh twice as much per run-minute in a 30-s run (`--stream-seconds 30`).

CPU per process: the kernel's process accounting (acct(2), as root: each process's CPU as it
exits, so the short-lived hooks, the Bash tool's commands and the daemon's git calls count),
plus /proc/<pid>/stat of the processes alive at a phase's ends (less what they had used before
it). Without root the processes are sampled every `--sample-interval` s instead (what a process
uses after its last sample is then lost; `cpu_source` says which). PSS from
/proc/<pid>/smaps_rollup, sampled each second and averaged over the phase.

Printed per run, for each N (CPU seconds, PSS MB):
- `cli`: the `claude` process itself;
- `per_run`: everything else a run has: its MCP servers (agents-room, predictorx), hooks, the
  Bash tool's commands, the daemon's git and agents-room calls (a bare run: its tool's commands);
- `daemon`, `server`: those processes themselves (a share of one, per run);
- `daemon_cpu_s_per_run_minute` (target ≤ 0.05 at every N; by clock ticks of 10 ms, and beside it
  `…_ns` by the daemon's process CPU clock and `…_schedstat` by its live threads' schedstat, both in
  ns: a 60-s run is a handful of ticks of the daemon), `platform_over_cli` = (per_run +
  daemon + server) ÷ cli (target ≤ 0.2 at N=4), `task_over_bare` = a task's CPU ÷ a bare run's
  (target ≤ 1.3); beside it `platform_added_over_cli`, the same less the bare run's own `per_run`
  (its tool's commands, and the CLI's CPU after its last sample: both runs have them);
- `per_run_top_processes`, `per_run_process_counts`: the per-run processes by what they are.

Before the measured phases one short task and one bare run go unmeasured (`--no-warmup` skips
them): a fresh server builds each router's routes on its first request. The bench asks the server
whether its tasks ended only once the model has streamed every answer (and every 20 s before, in
case one failed): its own requests are not the platform's cost.

Usage: .venv/bin/python bench/overhead.py [--concurrency 1 4 8] [--stream-seconds 60]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))
from _common import Daemon, Server, emit, log, machine, sqlite_url, tempdir  # noqa: E402
from realcli.clis import CLAUDE  # noqa: E402
from realcli.modelserver import AnthropicServer  # noqa: E402
from realcli.modelserver.base import Recorded, Reply  # noqa: E402

TARGET_DAEMON_CPU_PER_RUN_MINUTE_S = 0.05
TARGET_PLATFORM_OVER_CLI_AT_4 = 0.2
TARGET_TASK_OVER_BARE = 1.3
CLI_NAMES = {"claude", "claude.exe"}  # its process name (comm), as the pinned package installs it


class SlowModel(AnthropicServer):
    """The scripted model, its final answer streamed one small delta at a time."""

    def __init__(self, stream_s: float, delta_interval_s: float) -> None:
        super().__init__(command="true", answer="done")
        self.stream_s, self.delta_interval_s = stream_s, delta_interval_s

    def reply(self, req: Recorded) -> Reply:
        reply = super().reply(req)
        if req.turn != "answer" or not reply.events or self.stream_s <= 0:
            return reply
        deltas = max(1, int(self.stream_s / self.delta_interval_s))
        events: list[tuple[str | None, Any]] = []
        for name, data in reply.events:
            if name == "content_block_delta" and data["delta"].get("type") == "text_delta":
                events += [(name, {**data, "delta": {"type": "text_delta", "text": f"word{i} "}}) for i in range(deltas)]
            else:
                events.append((name, data))
        return Reply(reply.status, events=events, pace_s=self.delta_interval_s)


# -- the kernel's process accounting ---------------------------------------------------------------

_ACCT_V3 = struct.Struct("<BBHIIIIIIf8H16s")  # struct acct_v3 (linux/acct.h)
_AHZ = 100


def _comp_t(value: int) -> int:
    return (value & 0x1FFF) << (3 * (value >> 13))


@dataclass
class Exited:
    pid: int
    ppid: int
    comm: str
    cpu_s: float


class Accounting:
    """acct(2) into a file of our own while the bench runs (root only)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.libc = ctypes.CDLL(None, use_errno=True)
        path.touch()
        self.on = self.libc.acct(str(path).encode()) == 0

    def offset(self) -> int:
        return self.path.stat().st_size if self.on else 0

    def since(self, offset: int) -> list[Exited]:
        if not self.on:
            return []
        data = self.path.read_bytes()[offset:]
        out = []
        for i in range(0, len(data) - _ACCT_V3.size + 1, _ACCT_V3.size):
            f = _ACCT_V3.unpack_from(data, i)
            if f[1] != 3:
                continue
            cpu = (_comp_t(f[10]) + _comp_t(f[11])) / _AHZ
            out.append(Exited(pid=f[6], ppid=f[7], comm=f[18].split(b"\0")[0].decode(errors="replace"), cpu_s=cpu))
        return out

    def stop(self) -> None:
        if self.on:
            self.libc.acct(None)


# -- sampling the process trees ---------------------------------------------------------------------

def _children_cpu(pid: int) -> float:
    """CPU seconds of the children `pid` has waited for, theirs included (/proc/<pid>/stat)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            f = fh.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(f[13]) + int(f[14])) / os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, str, float, int] | None:
    """(ppid, name, CPU seconds of the process itself, start ticks) from /proc/<pid>/stat."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    name = raw[raw.index(b"(") + 1: raw.rindex(b")")].decode(errors="replace")
    f = raw.rsplit(b")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(f[1]), name, (int(f[11]) + int(f[12])) / tick, int(f[19])


def _pss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _label(pid: int) -> str | None:
    """What a process is, for the per-process breakdown: its program, and for an interpreter or a
    shell the script or module it runs ("python mcp_stdio.py", "python -m agents_room")."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
    except OSError:
        return None
    if not argv:
        return None
    exe = os.path.basename(argv[0])
    if exe.startswith(("python", "node", "sh", "bash")):
        rest = iter(argv[1:])
        for arg in rest:
            if arg in ("-m", "-c"):
                return f"{exe} {arg} {next(rest, '')[:40] if arg == '-m' else ''}".strip()
            if not arg.startswith("-"):
                return f"{exe} {os.path.basename(arg)[:40]}"
    return exe


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (st := _stat(int(name))) is not None:
            tree.setdefault(st[0], []).append(int(name))
    return tree


@dataclass
class Seen:
    pid: int
    name: str
    category: str
    first_cpu: float  # at its first sight (0 if it started within the phase)
    last_cpu: float
    pss_mb: float = 0.0
    label: str = ""


@dataclass
class Phase:
    """The processes below `roots` (pid → whose tree: "platform" or "bare") over one phase."""

    roots: dict[int, str]
    seen: dict[tuple[int, int], Seen] = field(default_factory=dict)
    pss_sums: dict[str, float] = field(default_factory=dict)
    pss_samples: int = 0
    #: CPU seconds of the per-run processes by what they are (`_label`), filled in by cpu()
    by_label: dict[str, float] = field(default_factory=dict)
    count_by_label: dict[str, int] = field(default_factory=dict)

    def category(self, pid: int, name: str, parent: int) -> str:
        kind = self.roots.get(pid)
        if kind is not None:
            return "cli" if kind == "bare" else kind  # a bare run's root is the CLI itself
        # The CLI under the daemon, wherever the sandbox's wrappers (sh, bwrap) put it: it starts no
        # `claude` of its own, so every process of that name in a run's tree is the CLI.
        return "cli" if name in CLI_NAMES else "per_run"

    def sample(self, at_start: bool = False, pss: bool = False) -> None:
        tree = _children()
        todo = [(pid, None) for pid in self.roots]
        sums: dict[str, float] = {}
        while todo:
            pid, parent = todo.pop()
            st = _stat(pid)
            if st is None:
                continue
            key = (pid, st[3])
            item = self.seen.get(key)
            category = self.category(pid, st[1], parent if parent is not None else -1)
            if item is None:
                item = self.seen[key] = Seen(pid, st[1], category, st[2] if at_start else 0.0, st[2])
            item.last_cpu, item.category = st[2], category  # (the leader is `sh`, then `claude`: same pid)
            item.label = _label(pid) or item.label or st[1]
            if pss:
                sums[item.category] = sums.get(item.category, 0.0) + _pss_mb(pid)
            todo += [(child, pid) for child in tree.get(pid, [])]
        if pss:
            self.pss_samples += 1
            for cat, mb in sums.items():
                self.pss_sums[cat] = self.pss_sums.get(cat, 0.0) + mb

    def cpu(self, exited: list[Exited]) -> dict[str, float]:
        """CPU seconds per category over the phase: acct's figure for what exited (also what was
        never sampled: found through its parent), /proc's for what is still alive."""
        totals: dict[str, float] = {}
        by_pid = {e.pid: e for e in exited}
        live_pids = {s.pid for s in self.seen.values()}
        categories = {s.pid: s.category for s in self.seen.values()}
        for s in self.seen.values():
            e = by_pid.get(s.pid)
            # At least its last sample: acct's figure for a process that exited can be below it
            # (seen for Claude Code's node by 0.06-0.09 s; the rest then counted as its children's).
            final = max(e.cpu_s, s.last_cpu) if e is not None and _stat(s.pid) is None else s.last_cpu
            totals[s.category] = totals.get(s.category, 0.0) + max(0.0, final - s.first_cpu)
            if s.category == "per_run":
                self._by_label(s.label, max(0.0, final - s.first_cpu))
        for e in exited:  # exited before any sample saw it
            if e.pid in live_pids:
                continue
            cat = self._category_of_unseen(e, by_pid, categories)
            if cat is not None:
                totals[cat] = totals.get(cat, 0.0) + e.cpu_s
                if cat == "per_run":
                    self._by_label(f"{e.comm} (unsampled)", e.cpu_s)
        return totals

    def _by_label(self, label: str, cpu_s: float) -> None:
        self.by_label[label] = self.by_label.get(label, 0.0) + cpu_s
        self.count_by_label[label] = self.count_by_label.get(label, 0) + 1

    def top_counts(self, n: int, runs: int) -> dict[str, float]:
        """The per-run processes started most often, per run (acct counts one under 10 ms as 0 s)."""
        top = sorted(self.count_by_label.items(), key=lambda kv: -kv[1])[:n]
        return {label: round(count / runs, 2) for label, count in top}

    def top_labels(self, n: int, runs: int) -> dict[str, float]:
        """The per-run processes that cost most, per run (CPU seconds)."""
        top = sorted(self.by_label.items(), key=lambda kv: -kv[1])[:n]
        return {label: round(cpu / runs, 4) for label, cpu in top}

    def _category_of_unseen(self, e: Exited, by_pid: dict[int, Exited], categories: dict[int, str]) -> str | None:
        """A process no sample saw is the run's if an ancestor is (acct names each one's parent)."""
        parent = e.ppid
        for _ in range(50):
            if parent in categories:
                return "cli" if e.comm in CLI_NAMES else "per_run"
            if parent not in by_pid:
                return None
            parent = by_pid[parent].ppid
        return None

    def alive_cpu(self, category: str) -> float:
        """What the phase's processes of `category` still alive at its end used within it."""
        return sum(max(0.0, s.last_cpu - s.first_cpu) for s in self.seen.values()
                   if s.category == category and _stat(s.pid) is not None)

    def pss(self) -> dict[str, float]:
        return {cat: mb / max(1, self.pss_samples) for cat, mb in self.pss_sums.items()}


class Sampler:
    def __init__(self, phase: Phase, interval: float) -> None:
        self.phase, self.interval = phase, interval
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self.phase.sample(at_start=True, pss=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        self.thread.join(30)
        self.phase.sample()

    def _run(self) -> None:
        last_pss = time.monotonic()
        while not self.stop_event.wait(self.interval):
            pss = time.monotonic() - last_pss >= 1.0
            if pss:
                last_pss = time.monotonic()
            self.phase.sample(pss=pss)


class StreamWindow:
    """The daemon's own CPU while all n CLIs only wait on their model's stream: from the n-th
    answer request to the end of the first stream (`stream_s` after the first one began)."""

    def __init__(self, model: SlowModel, seen: int, n: int, daemon_pid: int) -> None:
        self.model, self.seen, self.n, self.pid = model, seen, n, daemon_pid
        #: (time, CPU s by ticks, CPU ns by the process clock) at the window's ends
        self.start: tuple[float, float, int] | None = None
        self.end: tuple[float, float, int] | None = None
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> StreamWindow:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        self.thread.join(30)

    def _run(self) -> None:
        while not self.stop_event.wait(0.05):  # (the bench's own polling: it is not measured)
            answers = [r.at for r in self.model.requests[self.seen:] if r.turn == "answer"]
            if self.start is None and len(answers) >= self.n:
                self.start = (time.time(), _own_cpu(self.pid), _own_cpu_ns(self.pid))
                first_ends = min(answers) + self.model.stream_s - 0.5
                if self.stop_event.wait(max(0.0, first_ends - time.time())):
                    return
                self.end = (time.time(), _own_cpu(self.pid), _own_cpu_ns(self.pid))
                return

    def seconds(self) -> float | None:
        return round(self.end[0] - self.start[0], 1) if self.start and self.end else None

    def per_run_minute(self, precise: bool = False) -> float | None:
        """The daemon's CPU s per run-minute in the window: by clock ticks, or (`precise`) by its
        process CPU clock."""
        if not (self.start and self.end) or self.end[0] - self.start[0] < 1:
            return None
        cpu = (self.end[2] - self.start[2]) / 1e9 if precise else self.end[1] - self.start[1]
        return round(cpu / (self.n * (self.end[0] - self.start[0]) / 60), 4)


# -- the two kinds of run ---------------------------------------------------------------------------

def bare_runs(n: int, env: dict[str, str], workdir: Path, acct: Accounting, interval: float) -> dict:
    """n bare `claude -p` at once: CPU (itself, its children) and PSS per run."""
    argv = [str(CLAUDE.path()), "-p", "--output-format", "stream-json", "--verbose",
            "--permission-mode", "bypassPermissions"]
    offset = acct.offset()
    t0 = time.monotonic()
    procs = [subprocess.Popen(argv, cwd=workdir, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for _ in range(n)]
    phase = Phase({p.pid: "bare" for p in procs})
    usage: list[float] = []
    with Sampler(phase, interval):
        for i, p in enumerate(procs):
            assert p.stdin is not None
            p.stdin.write(f"bare run {i}: say hello".encode())
            p.stdin.close()
        for p in procs:
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            usage.append(ru.ru_utime + ru.ru_stime)  # itself and the children it waited for
    wall = time.monotonic() - t0
    cpu = phase.cpu(acct.since(offset))
    pss = phase.pss()
    # wait4's figure is exact (µs) for the CLI with everything it waited for; acct's, per process,
    # is in 10 ms ticks: the CLI's own is taken from it, its children's is the difference.
    per_run = {"cli_cpu_s": cpu.get("cli", 0.0) / n, "per_run_cpu_s": max(0.0, sum(usage) - cpu.get("cli", 0.0)) / n,
               "per_run_cpu_s_by_process": cpu.get("per_run", 0.0) / n,
               "cli_pss_mb": pss.get("cli", 0.0) / n, "per_run_pss_mb": pss.get("per_run", 0.0) / n}
    per_run["total_cpu_s"] = sum(usage) / n
    per_run_by_process = phase.top_labels(8, n)
    failed = sum(1 for p in procs if p.returncode != 0)
    return {"runs": n, "failed": failed, "wall_s": round(wall, 1), "per_run": _round(per_run),
            "per_run_top_processes": per_run_by_process, "per_run_process_counts": phase.top_counts(12, n),
            "loadavg_1_5_15": _loadavg()}


#: How often the bench asks whether its tasks ended: its own requests are not the platform's cost,
#: and at 0.2 s they were most of the server's CPU in a 40 s run (~200 GETs, ~3 ms each). One
#: request for all of them (a GET per task every 2 s was still ~0.04 s of server CPU per task).
POLL_S = 2.0


def _wait_ended(server: Server, model: SlowModel, ids: list[str], seen: int) -> list[dict]:
    """The tasks `ids` once they ended. Asked of the server only once every answer has streamed
    (the model server says so, in this process), and every POLL_S before that only as a safety
    net for a task that fails before its answer: the bench's own requests are not the platform's."""
    deadline, last_asked = time.monotonic() + 600, time.monotonic()
    ended: dict[str, dict] = {}
    while time.monotonic() < deadline:
        answers = [r.at for r in model.requests[seen:] if r.turn == "answer"]
        streamed = len(answers) >= len(ids) and time.time() > max(answers) + model.stream_s
        if streamed or time.monotonic() - last_asked > 10 * POLL_S:
            last_asked = time.monotonic()
            for i in ids:  # (a GET of one task is ~2 ms of server CPU; a list of them all grows with the bench)
                if i not in ended and (t := server.api("GET", f"/api/tasks/{i}"))["status"] in (
                        "completed", "failed", "cancelled"):
                    ended[i] = t
            if len(ended) == len(ids):
                return [ended[i] for i in ids]
        time.sleep(0.5)
    raise TimeoutError(f"the {len(ids)} tasks did not end in 600 s")


def platform_runs(n: int, server: Server, daemon: Daemon, model: SlowModel, acct: Accounting, interval: float,
                  label: str) -> dict:
    """n tasks at once through the server and the daemon."""
    offset = acct.offset()
    phase = Phase({daemon.proc.pid: "platform", server.proc.pid: "server"})
    d0, s0, reaped0 = _own_cpu(daemon.proc.pid), _own_cpu(server.proc.pid), _children_cpu(daemon.proc.pid)
    d0_ns = _precise(daemon.proc.pid)
    seen_requests = len(model.requests)
    t0 = time.monotonic()
    window = StreamWindow(model, seen_requests, n, daemon.proc.pid)
    with Sampler(phase, interval), window:
        ids = []
        for i in range(n):
            issue = server.api("POST", "/api/issues", {"title": f"overhead {label} run {i}", "assignee": "claude-bench"})
            ids.append(server.api("GET", f"/api/issues/{issue['number']}/runs")[0]["id"])
        tasks = _wait_ended(server, model, ids, seen_requests)
    wall = time.monotonic() - t0
    daemon_cpu, server_cpu = _own_cpu(daemon.proc.pid) - d0, _own_cpu(server.proc.pid) - s0
    d1_ns = _precise(daemon.proc.pid)
    daemon_clock_s, daemon_sched_s = (d1_ns[0] - d0_ns[0]) / 1e9, (d1_ns[1] - d0_ns[1]) / 1e9
    reaped = _children_cpu(daemon.proc.pid) - reaped0  # the CLIs, their trees, git, orphans: exact
    cpu = phase.cpu(acct.since(offset))
    pss = phase.pss()
    run_minutes = sum(_duration_s(t) for t in tasks) / 60 or wall * n / 60
    others = reaped - cpu.get("cli", 0.0) + phase.alive_cpu("per_run")  # (+ agents-room's configuration process)
    per_run = {"cli_cpu_s": cpu.get("cli", 0.0) / n, "per_run_cpu_s": max(0.0, others) / n,
               "per_run_cpu_s_by_process": cpu.get("per_run", 0.0) / n, "daemon_cpu_s": daemon_cpu / n, "server_cpu_s": server_cpu / n,
               "cli_pss_mb": pss.get("cli", 0.0) / n, "per_run_pss_mb": pss.get("per_run", 0.0) / n,
               "daemon_pss_mb": pss.get("platform", 0.0) / n, "server_pss_mb": pss.get("server", 0.0) / n}
    added = per_run["per_run_cpu_s"] + per_run["daemon_cpu_s"] + per_run["server_cpu_s"]
    per_run["total_cpu_s"] = per_run["cli_cpu_s"] + added
    return {"runs": n, "failed": sum(1 for t in tasks if t["status"] != "completed"),
            "failure_reasons": sorted({str(t.get("failure_reason")) for t in tasks if t["status"] != "completed"})[:3],
            "wall_s": round(wall, 1), "run_minutes": round(run_minutes, 2), "per_run": _round(per_run),
            "per_run_top_processes": phase.top_labels(12, n), "per_run_process_counts": phase.top_counts(12, n),
            "daemon_cpu_s_per_run_minute": round(daemon_cpu / run_minutes, 4) if run_minutes else None,
            # the same by the daemon's process CPU clock (ns; every thread, ended ones too) and by
            # schedstat (ns; its threads alive at both ends): ticks cannot tell 4 from 5 in a run
            "daemon_cpu_s_per_run_minute_ns": round(daemon_clock_s / run_minutes, 4) if run_minutes else None,
            "daemon_cpu_s_per_run_minute_schedstat": round(daemon_sched_s / run_minutes, 4) if run_minutes else None,
            "daemon_cpu_s_precise": {"clock": round(daemon_clock_s / n, 4), "schedstat": round(daemon_sched_s / n, 4)},
            "daemon_cpu_s_per_run_minute_while_streaming": window.per_run_minute(),
            "daemon_cpu_s_per_run_minute_while_streaming_ns": window.per_run_minute(precise=True),
            "streaming_window_s": window.seconds(),
            "platform_over_cli": round(added / per_run["cli_cpu_s"], 3) if per_run["cli_cpu_s"] else None,
            "loadavg_1_5_15": _loadavg()}


def idle_cost(server: Server, daemon: Daemon, seconds: float) -> dict:
    """CPU seconds per minute of the daemon and the server with nothing to do."""
    d0, s0, t0 = _own_cpu(daemon.proc.pid), _own_cpu(server.proc.pid), time.monotonic()
    d0_ns = _own_cpu_ns(daemon.proc.pid)
    time.sleep(seconds)
    minutes = (time.monotonic() - t0) / 60
    return {"seconds": seconds, "daemon_cpu_s_per_minute": round((_own_cpu(daemon.proc.pid) - d0) / minutes, 4),
            "daemon_cpu_s_per_minute_ns": round((_own_cpu_ns(daemon.proc.pid) - d0_ns) / 1e9 / minutes, 4),
            "server_cpu_s_per_minute": round((_own_cpu(server.proc.pid) - s0) / minutes, 4)}


def _own_cpu(pid: int) -> float:
    st = _stat(pid)
    return st[2] if st else 0.0


def _own_cpu_ns(pid: int) -> int:
    """CPU nanoseconds of the process itself, every thread, those that ended too: its process CPU
    clock (clock_getcpuclockid(3), which Linux lets any process read). The clock-tick figure of
    /proc/<pid>/stat cannot tell 4 ticks from 5 in a 60-s run of the daemon."""
    try:
        return time.clock_gettime_ns((~pid << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    except OSError:
        return 0


def run_ns(pid: int) -> int:
    """Nanoseconds the live threads of `pid` have run (/proc/<pid>/task/*/schedstat, as
    bench/daemon_idle.py reads them; an ended thread's time is lost)."""
    total = 0
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for t in threads:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as fh:
                total += int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total


def _precise(pid: int) -> tuple[int, int]:
    """(process CPU clock ns, schedstat ns of its live threads) of `pid`."""
    return _own_cpu_ns(pid), run_ns(pid)


def _duration_s(task: dict) -> float:
    try:
        start = datetime.fromisoformat(task["started_at"].replace("Z", "+00:00"))
        end = datetime.fromisoformat(task["finished_at"].replace("Z", "+00:00"))
    except (KeyError, AttributeError, TypeError, ValueError):
        return 0.0
    return max(0.0, (end - start).total_seconds())


def _round(d: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 3) for k, v in d.items()}


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8], help="runs at once, each N in turn")
    ap.add_argument("--stream-seconds", type=float, default=60.0, help="how long the model streams its answer")
    ap.add_argument("--delta-interval", type=float, default=0.1, help="seconds between the answer's deltas")
    ap.add_argument("--idle-seconds", type=float, default=10.0, help="the idle daemon and server measured this long")
    ap.add_argument("--no-warmup", dest="warmup", action="store_false",
                    help="measure from the first task on (by default one short task and one bare run go first, "
                         "unmeasured: a fresh server builds each router's routes on its first request, ~0.05 s "
                         "per router, and a fresh daemon imports what a run needs once)")
    ap.add_argument("--sample-interval", type=float, default=0.05,
                    help="seconds between process samples (a CLI's CPU after its last sample is counted as its children's)")
    args = ap.parse_args()
    if CLAUDE.path() is None:
        sys.exit("the pinned Claude Code is not installed: run `make test` once (npm ci in tests/realcli)")
    if not sys.platform.startswith("linux"):
        sys.exit("bench/overhead.py reads /proc: Linux only")

    load_before = _loadavg()
    with tempdir("pxbench-overhead-") as root, SlowModel(args.stream_seconds, args.delta_interval) as model:
        acct = Accounting(Path(tempfile.mkdtemp(prefix="pxbench-acct-")) / "pacct")
        env = CLAUDE.environment(root / "cli-home", model)
        bare_env = {**{k: v for k, v in os.environ.items() if k != "CLAUDECODE" and not k.startswith("PREDICTORX_")
                       and not k.endswith("DATABASE_URL")}, **env}
        (root / "bare").mkdir()
        server = Server(root / "server", sqlite_url(root))
        daemon = None
        results: dict[str, Any] = {}
        idle: dict[str, Any] = {}
        try:
            daemon = Daemon(server, root / "daemon", max_tasks=max(args.concurrency),
                            PREDICTORX_WORKSPACES_ROOT=str(root / "ws"), **env)
            server.api("POST", "/api/agents", {"name": "claude-bench", "provider": "claude",
                                               "max_concurrent_tasks": max(args.concurrency)})
            if args.warmup:
                log("warm-up: one task and one bare run, not measured")
                warm = model.stream_s
                model.stream_s = 1.0
                try:
                    bare_runs(1, bare_env, root / "bare", acct, args.sample_interval)
                    platform_runs(1, server, daemon, model, acct, args.sample_interval, "warm-up")
                finally:
                    model.stream_s = warm
            log(f"the daemon and server idle for {args.idle_seconds:.0f} s")
            idle = idle_cost(server, daemon, args.idle_seconds)
            for n in args.concurrency:
                log(f"N={n}: {n} bare claude -p at once")
                bare = bare_runs(n, bare_env, root / "bare", acct, args.sample_interval)
                log(f"N={n}: {n} tasks at once through the server and daemon")
                task = platform_runs(n, server, daemon, model, acct, args.sample_interval, f"n{n}")
                bare_total = bare["per_run"]["total_cpu_s"]
                task["task_over_bare"] = round(task["per_run"]["total_cpu_s"] / bare_total, 3) if bare_total else None
                # What the platform adds, less what a bare run has too (its tool's commands, the CLI's
                # own git and shell, and the CLI's CPU after its last sample, counted as its children's).
                t, cli = task["per_run"], task["per_run"]["cli_cpu_s"]
                added = max(0.0, t["per_run_cpu_s"] - bare["per_run"]["per_run_cpu_s"]) + t["daemon_cpu_s"] + t["server_cpu_s"]
                task["platform_added_over_cli"] = round(added / cli, 3) if cli else None
                results[str(n)] = {"bare": bare, "task": task}
        finally:
            acct.stop()
            if daemon is not None:
                daemon.stop()
            server.stop()
            Path(acct.path).unlink(missing_ok=True)
            Path(acct.path).parent.rmdir()  # (its own mkdtemp folder: left behind in /tmp before)

    four = results.get("4", {}).get("task", {})
    emit({
        "bench": "overhead",
        "cli": f"claude {subprocess.run([str(CLAUDE.path()), '--version'], capture_output=True, text=True, timeout=30).stdout.strip()}",
        "stream_seconds": args.stream_seconds, "delta_interval_s": args.delta_interval,
        "cpu_source": "acct(2) + /proc" if acct.on else f"/proc sampled every {args.sample_interval} s",
        "idle": idle, "by_concurrency": results,
        "daemon_cpu_s_per_run_minute_max": max((r["task"]["daemon_cpu_s_per_run_minute"] or 0
                                                for r in results.values()), default=None),
        "daemon_cpu_s_per_run_minute_ns_max": max((r["task"]["daemon_cpu_s_per_run_minute_ns"] or 0
                                                   for r in results.values()), default=None),
        "daemon_cpu_s_per_run_minute_while_streaming_max": max(
            (r["task"]["daemon_cpu_s_per_run_minute_while_streaming"] or 0 for r in results.values()), default=None),
        "platform_over_cli_at_4": four.get("platform_over_cli"),
        "platform_added_over_cli_at_4": four.get("platform_added_over_cli"),
        "task_over_bare_max": max((r["task"]["task_over_bare"] or 0 for r in results.values()), default=None),
        "targets": {"daemon_cpu_s_per_run_minute": TARGET_DAEMON_CPU_PER_RUN_MINUTE_S,
                    "platform_over_cli_at_4": TARGET_PLATFORM_OVER_CLI_AT_4, "task_over_bare": TARGET_TASK_OVER_BARE},
        "loadavg_before": load_before, "loadavg_1_5_15": _loadavg(), "machine": machine(),
    })


if __name__ == "__main__":
    main()
