"""ACP agents through Predictor X against the same agent started bare (issue 25's Measure).

For each shipped ACP profile named (default: qwen, copilot, gemini), with the pinned CLI of
tests/realcli/node_modules against its scripted model server on loopback:

- bare: the agent's ACP server spawned by a minimal client here (initialize → session/new →
  session/prompt over stdio, every permission request answered with its first allow option),
  spawn → the model server's first request of that prompt; no daemon, no MCP servers;
- platform: a server on SQLite and one daemon; `POST /api/issues` with the agent assigned →
  the model server's first request naming the issue (the daemon also hands the agent
  agents-room's and predictorx's MCP servers, which the bare run does not start);
- the adapter's cost: the daemon process's own CPU seconds over the platform runs, per message
  the runs stored (the agents' CPU is not in it; a run's fixed cost — claim, sandbox plan, context,
  finish — is spread over its messages, so few messages per run read high).

One unmeasured pair warms both up first. (Not `bench/acp.py`: bench/ is on sys.path in the benches
and some tests, and a module named `acp` there hid the agent-client-protocol package.)

Runs alternate (bare, platform, bare, …) so both see the same load; the load average is printed.
Target (issue 25): platform p50 ≤ 1.3 × bare p50.

Usage: .venv/bin/python bench/acp_agents.py [--profiles qwen copilot gemini] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))
from _common import Daemon, Server, emit, log, machine, sqlite_url, summary_ms, tempdir, wait_until  # noqa: E402
from realcli.clis import ACP_ONLY, ALL, BIN  # noqa: E402

from predictorx.agentconfig import acp_profiles  # noqa: E402

TARGET_RATIO_P50 = 1.3
#: profile → the CLI whose config and model server it uses (as tests/realcli/test_acp.py)
CLI_OF = {"gemini": "gemini", "opencode": "opencode", "qwen": "qwen", "kilo": "kilo", "copilot": "copilot",
          "claude-code-acp": "claude", "codex-acp": "codex"}
#: npm-packaged agents of issue 25's second round (tests/realcli/clis_npm.py).
CLI_OF.update({"pi": "pi", "cline": "cline"})
# The Python-packaged ones (tests/realcli/pyclis.py, in .venv-agents/bin): profile and CLI share a name.
CLI_OF.update({name: name for name in ACP_ONLY if name in acp_profiles.PROFILES and name not in CLI_OF})
_ISSUE = re.compile(r"working on issue #(\d+)")


class _Bare:
    """A minimal ACP client over the agent's stdio: just enough to send one prompt."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path):
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        self.next_id = 0

    def call(self, method: str, params: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
        self.next_id += 1
        mine = self.next_id
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": mine, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the agent closed its stdout during {method}")
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("method") == "session/request_permission":
                options = msg["params"].get("options") or []
                pick = next((o for o in options if str(o.get("kind", "")).startswith("allow")), options[0])
                self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {
                    "outcome": {"outcome": "selected", "optionId": pick["optionId"]}}}) + "\n")
                self.proc.stdin.flush()
            elif msg.get("id") == mine and "method" not in msg:
                return msg
        raise TimeoutError(method)

    def close(self) -> None:
        try:
            os.killpg(self.proc.pid, 9)
        except ProcessLookupError:
            pass
        self.proc.wait(10)


def bare_run(argv: list[str], env: dict[str, str], cwd: Path, model: Any, marker: str) -> float:
    seen = len(model.requests)
    started = time.time()
    agent = _Bare(argv, env, cwd)
    try:
        agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = agent.call("session/new", {"cwd": str(cwd), "mcpServers": []})["result"]["sessionId"]
        agent.call("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": marker}]})
    finally:
        agent.close()
    first = next(r for r in model.requests[seen:] if r.turn in ("tool", "answer") and marker in r.text)
    return first.at - started


def _own_cpu(pid: int) -> float:
    import psutil

    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def bench_profile(name: str, runs: int, root: Path) -> dict[str, Any]:
    profile = acp_profiles.get(name)
    cli = ALL.get(CLI_OF[name]) or ACP_ONLY[CLI_OF[name]]
    if not (BIN / profile.executable).exists() and cli.path() is None:
        return {"skipped": f"{profile.executable} is not in tests/realcli/node_modules or .venv-agents (run `make test` once)"}
    model = cli.server_class("true", "ok")
    model.start()
    home = root / name
    env = {**os.environ, **cli.environment(home / "cli-home", model), **profile.env}
    (home / "bare").mkdir(parents=True)
    server = Server(home / "server", sqlite_url(home))
    daemon = Daemon(server, home / "daemon", max_tasks=1, PREDICTORX_WORKSPACES_ROOT=str(home / "ws"),
                    **cli.environment(home / "cli-home", model))
    try:
        server.api("POST", "/api/agents", {"name": f"{name}-acp", "provider": "acp", "command": profile.command(),
                                           "model": cli.model})
        bare, platform, messages = [], [], 0
        cpu0 = _own_cpu(daemon.proc.pid)
        for i in range(-1, runs):  # run -1 warms both up (the CLI's first start reads its files from disk)
            if i == 0:
                bare, platform, messages, cpu0 = [], [], 0, _own_cpu(daemon.proc.pid)
            bare.append(bare_run(profile.command(), env, home / "bare", model, f"bare run {i}: say hello"))
            seen = len(model.requests)
            issue = server.api("POST", "/api/issues", {"title": f"bench {name} {i}", "assignee": f"{name}-acp"})
            assigned = time.time()
            task_id = server.api("GET", f"/api/issues/{issue['number']}/runs")[0]["id"]
            task = wait_until(lambda: (t := server.api("GET", f"/api/tasks/{task_id}"))["status"]
                              in ("completed", "failed", "cancelled") and t, 300, 0.2, f"task {task_id}")
            first = next((r.at for r in model.requests[seen:] if r.turn in ("tool", "answer")
                          and (m := _ISSUE.search(r.text)) and int(m.group(1)) == issue["number"]), None)
            if task["status"] == "completed" and first is not None:
                platform.append(first - assigned)
            messages += len(server.api("GET", f"/api/tasks/{task_id}/messages"))
        cpu = _own_cpu(daemon.proc.pid) - cpu0
    finally:
        daemon.stop()
        server.stop()
        model.stop()
    b, p = summary_ms(bare), summary_ms(platform)
    ratio = round(p["p50_ms"] / b["p50_ms"], 2) if platform and bare else None
    return {"bare_spawn_to_first_request": b, "platform_assignment_to_first_request": p,
            "ratio_p50": ratio, "target_ratio_p50": TARGET_RATIO_P50, "completed": len(platform), "runs": runs,
            "daemon_cpu_ms_per_message": round(cpu * 1000 / max(1, messages), 2), "messages": messages,
            "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profiles", nargs="+", default=["qwen", "copilot", "gemini"], choices=sorted(CLI_OF))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    results: dict[str, Any] = {"machine": machine(), "profiles": {}}
    with tempdir("pxbench-acp-") as root:
        for name in args.profiles:
            log(f"{name}: {args.runs} bare and {args.runs} platform runs, alternating")
            results["profiles"][name] = bench_profile(name, args.runs, root)
    emit(results)


if __name__ == "__main__":
    main()
