"""One real CLI wired up as a person would: a Predictor X server (SQLite), a daemon whose
environment points the CLI at a scripted model server, a project, an agent, issues."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from e2e.harness import Daemon, Server, git, make_repo, wait_until
from .clis import RealCli, Tripwire
from .modelserver import ModelServer

#: Turn 1's shell command: show the instruction file and resources.json, say where it runs, edit.
def work_command(cli: RealCli, extra: str = "") -> str:
    # No `$(…)`: Gemini CLI refuses command substitution in its shell tool.
    return (f"cat {cli.instruction_file} .predictorx/project/resources.json; echo; printf cwd=; /bin/pwd; "
            f"/bin/pwd | sed 's/^/edited by {cli.provider} in /' >> README.md{extra}")


class Scenario:
    def __init__(self, cli: RealCli, root: Path, *, daemon_env: dict[str, str] | None = None,
                 command: Any = None, answer: str = "All done: README.md has its new line.",
                 model: str | None = None, model_host: str | None = None, acp_command: list[str] | None = None) -> None:
        self.cli = cli
        self.root = root
        root.mkdir(parents=True)
        self.model: ModelServer = cli.server_class(command or work_command(cli), answer)
        if model_host:  # the CLI is pointed at this name instead of 127.0.0.1 (the daemon pins it)
            self.model.url = f"http://{model_host}:{self.model.port}"
        self.model.start()
        # Nothing here tests the sweep: a daemon busy starting a real CLI on a loaded machine (load
        # 12 seen) missed the harness's 3 s liveness window and its run was swept as lost.
        self.server = Server(root / "server-home", f"sqlite:///{root / 'px.db'}", PREDICTORX_DAEMON_TIMEOUT="30")
        # The daemon is started from a decoy folder: a CLI that works where it was started (the
        # inherited PWD) instead of where the task says would write here — and the tests look.
        self.decoy = root / "decoy"
        self.decoy.mkdir()
        #: The proxy and npm registry of every run: what a CLI tried to reach beyond its model server.
        self.tripwire = Tripwire()
        env = {**cli.environment(root / "cli-home", self.model, self.tripwire.url), "PWD": str(self.decoy),
               **(daemon_env or {})}
        self.daemon = Daemon(self.server, root / "daemon", cwd=self.decoy, **env)
        # acp_command: the same CLI as an ACP agent (provider acp, that command line; agents/acp.py).
        self.agent_name = f"{cli.provider}-acp" if acp_command else f"{cli.provider}-1"
        agent = self.server.api("POST", "/api/agents", {"name": self.agent_name,
                                                        "provider": "acp" if acp_command else cli.provider,
                                                        "command": acp_command, "model": model or cli.model,
                                                        "max_concurrent_tasks": 2})
        assert agent["sandbox"] is True  # the default (issue 29), and so the path these tests take

    def close(self) -> None:
        self.daemon.stop()
        self.server.stop()
        self.model.stop()
        self.tripwire.stop()

    # -- set-up ---------------------------------------------------------------------------------
    def person_repo(self, name: str = "myrepo") -> Path:
        return make_repo(self.root / name, {"README.md": "# myrepo\n", "src/app.py": "print('hi')\n",
                                            self.cli.instruction_file: "# Team rules\nBe kind to the tests.\n"})

    def project(self, folder: Path, mode: str) -> dict[str, Any]:
        return self.server.api("POST", "/api/projects", {
            "title": f"Real {self.cli.provider} {mode}", "description": "Scripted model, real CLI.",
            "resources": [{"resource_type": "local_directory", "label": "my checkout",
                           "resource_ref": {"local_path": str(folder), "daemon_id": self.daemon.id,
                                            "execution_mode": mode}}]})

    def assign(self, project: dict[str, Any], title: str = "Add a line to the README") -> tuple[dict, dict]:
        issue = self.server.api("POST", "/api/issues", {"title": title, "project_id": project["id"],
                                                        "assignee": self.agent_name})
        return issue, self.server.runs(issue["number"])[-1]

    # -- reading --------------------------------------------------------------------------------
    def wait(self, task_id: str, timeout: float = 120) -> dict[str, Any]:
        try:
            task = self.server.wait_task(task_id, timeout=timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}; model requests: {[(r.path, r.turn) for r in self.model.requests]}; "
                                 f"messages: {self.messages(task_id)[-6:]}; stderr: {self.stderr(task_id)}") from None
        assert task["status"] == "completed", (task, self.daemon.output()[-3000:], self.stderr(task_id))
        return task

    def messages(self, task_id: str) -> list[dict[str, Any]]:
        return self.server.api("GET", f"/api/tasks/{task_id}/messages")

    def stderr(self, task_id: str) -> str:
        logs = list((Path(self.daemon.env["PREDICTORX_WORKSPACES_ROOT"])).glob(f"*/{task_id}/logs/*.stderr.log"))
        return logs[0].read_text(errors="replace")[-3000:] if logs else ""

    def was_sandboxed(self, task_id: str) -> bool:
        """The run went through bubblewrap: its env root holds the seccomp filter and the CLI's
        config copy, which only a sandboxed run gets (daemon/sandbox.py, daemon/cliconfig.py)."""
        env_root = self.stream_log(task_id).parents[1]
        return (env_root / "seccomp.bpf").is_file() and (env_root / "cli-config").is_dir()

    def stream_log(self, task_id: str) -> Path:
        return next(Path(self.daemon.env["PREDICTORX_WORKSPACES_ROOT"]).glob(f"*/{task_id}/logs/*.stream.jsonl"))


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (git's own files included) with its bytes. A file or directory
    removed while it is read (the daemon taking the context out at a task's end) means: read again."""
    for attempt in range(20):
        try:
            return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
        except FileNotFoundError:
            if attempt == 19:
                raise
            time.sleep(0.05)
    raise AssertionError("unreachable")


def processes_with(marker: str) -> list[int]:
    """Pids whose environment holds `marker` (an agent and all it started inherit the task id)."""
    found = []
    needle = marker.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def cancelled_mid_tool(s: Any) -> None:
    """A slow task cancelled while its shell runs: `session/cancel`, then its process group; every
    process of it gone within 5 s, nothing written where the agent must not write."""
    slow = s.person_repo("slow")
    s.model.command = work_command(s.cli, "; sleep 45")
    _issue, run = s.assign(s.project(slow, "in_place"), "Slow job")
    wait_until(lambda: b"edited by" in (slow / "README.md").read_bytes(), 120, what="the in-place edit")
    assert processes_with(f"PREDICTORX_TASK_ID={run['id']}"), "the agent should be running"
    started = time.monotonic()
    s.server.api("POST", f"/api/tasks/{run['id']}/cancel")
    s.server.wait_task(run["id"], ("cancelled",), timeout=5)
    wait_until(lambda: not processes_with(f"PREDICTORX_TASK_ID={run['id']}"), 5 - (time.monotonic() - started),
               what="every process of the cancelled ACP agent to end")
    assert list(s.decoy.iterdir()) == []


def kinds_in_order(messages: list[dict[str, Any]], wanted: list[str]) -> bool:
    """`wanted` occurs in the message kinds as a subsequence (other kinds may sit between)."""
    it = iter(m["kind"] for m in messages)
    return all(any(k == w for k in it) for w in wanted)


__all__ = ["Scenario", "git", "kinds_in_order", "processes_with", "snapshot", "time", "wait_until", "work_command"]
