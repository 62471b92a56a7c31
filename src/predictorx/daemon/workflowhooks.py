"""The workflow system's hooks around one agent run (R-HAR-7; the engine is workflows/, the
agent's tools workflowmcp/): at task start the sweep goes into the agent's context and the
`predictorx mcp` server into its Claude Code, Codex or ACP run (beside agents-room, see rooms.py);
at task end the daemon adds the git facts to the task's handoff. Each hook takes the values it
needs and returns what it found (`Start`): nothing here reads or changes the run.

Best effort: a server or git hiccup here is logged and the task runs (or ends) regardless — but
the sweep is normally there, so the agent starts where the last task stopped."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..agentconfig import mcpconfig
from ..workflowmcp.sweep_text import render
from . import gitview
from .gitcmd import GitError, git_text

if TYPE_CHECKING:
    from .serverapi import ServerApi

log = logging.getLogger("predictorx.daemon")
GIT_TIMEOUT_S = 10.0
MCP_HARNESSES = ("claude", "codex", "acp")  # acp: the Codex-style overrides become session/new's mcpServers


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None, borrowed: Any = ()) -> str | None:
    """A read-only question about the repository at `cwd`, asked of its sealed view (`gitview`):
    an agent may have written its git dir, and nothing there may be read as configuration."""
    if env is None:
        with gitview.sealed_view(cwd, borrowed) as view:
            return _git(cwd, *args, env=view) if view is not None else None
    try:
        return git_text(list(args), cwd=cwd, env=env, timeout=GIT_TIMEOUT_S)
    except (GitError, OSError):
        return None


_DEFAULT_CANDIDATES = ("refs/remotes/origin/main", "refs/remotes/origin/master", "refs/heads/main", "refs/heads/master")


def in_repository(cwd: Path) -> bool:
    """Whether git finds a repository from `cwd` (a `.git` there or above, or a bare repository),
    looked up without starting git: outside one, the sweep's git questions are skipped (a task in
    its own empty directory started six git processes that all failed, beside its agent's start)."""
    for d in (cwd, *cwd.parents):
        if (d / ".git").exists() or ((d / "HEAD").is_file() and (d / "objects").is_dir() and (d / "refs").is_dir()):
            return True
    return False


def default_branch(cwd: Path, env: dict[str, str] | None = None) -> tuple[str | None, str | None]:
    """(name, head) of the repository's default branch as this checkout sees it: where
    origin/HEAD points, else origin's main or master, else the local main or master. One git
    process (for-each-ref) for all of them."""
    fmt = "%(refname)%00%(symref)%00%(objecttype)%00%(objectname)%00%(*objecttype)%00%(*objectname)"
    out = _git(cwd, "for-each-ref", f"--format={fmt}", "refs/remotes/origin/HEAD", *_DEFAULT_CANDIDATES, env=env)
    commits: dict[str, str] = {}
    origin_head = None
    for line in (out or "").splitlines():
        ref, symref, kind, obj, peeled_kind, peeled = (line.split("\0") + [""] * 6)[:6]
        if ref == "refs/remotes/origin/HEAD" and symref:
            origin_head = symref
        commit = obj if kind == "commit" else peeled if peeled_kind == "commit" else None
        if commit:
            commits[ref] = commit
    if origin_head and origin_head not in commits:  # it points outside the candidates: ask for it
        head = _git(cwd, "rev-parse", "--verify", "--quiet", origin_head + "^{commit}", env=env)
        if head:
            return origin_head.rsplit("/", 1)[-1], head
    for c in ([origin_head] if origin_head else []) + list(_DEFAULT_CANDIDATES):
        if c in commits:
            return c.rsplit("/", 1)[-1], commits[c]
    return None, None


def drift(cwd: Path, last: dict[str, Any] | None, branch: tuple[str | None, str | None] | None = None,
          borrowed: Any = ()) -> str | None:
    """How the default branch moved since the last task; `branch`: default_branch(cwd), if known."""
    name, head = branch or default_branch(cwd)
    if not head:
        return None
    old = (last or {}).get("default_head")
    if not old:
        return f"{name} at {head[:10]} (no earlier task recorded where it was)"
    if old == head:
        return f"{name} has not moved since the last task ({head[:10]})"
    count = _git(cwd, "rev-list", "--count", f"{old}..{head}", borrowed=borrowed)
    if count is None:
        return f"{name} moved from {old[:10]} to {head[:10]} (the old commit is not in this checkout)"
    return f"{name} moved {count} commits since the last task ({old[:10]} → {head[:10]})"


def _mcp_command() -> list[str]:
    """`predictorx mcp` without the CLI around it: this interpreter runs its fast stdio front, which
    answers the handshake and tools/list in ~20 ms (Claude Code waits for it before its first
    model request) and imports the MCP SDK only when the agent calls a tool. Started as a file,
    not with -m: no package import and no runpy before its first answer (issue 9); with -S: no
    `site` either until a tool call (mcp_stdio.with_site; 2-4 ms less per run, issue 30); through
    mcp_stdio_start.py: from its bytecode, not compiled again (~2 ms less per run, issue 30)."""
    from ..workflowmcp import mcp_stdio

    return [sys.executable, "-S", mcp_stdio.START_FILE]


def mcp_setup(provider: str, env_root: Path, agent_env: dict[str, str],
              servers: list[dict[str, Any]] | None = None, forward: Path | None = None) -> list[str]:
    """Arguments that add `predictorx mcp` and the agent's own MCP servers (`servers`,
    agentconfig/mcpconfig.py) to this one run (never to the person's config). The task token goes into
    a 0600 file in the env root (outside the workdir), never into argv or the harness's config:
    `predictorx mcp --env-file` reads it; an agent's secret is only named (the CLI reads it from
    its environment). `forward` (Claude Code): agents-room's MCP entry (rooms.forward_file), whose
    tools `predictorx mcp` then offers and forwards — the run's one MCP process of the two."""
    if provider not in MCP_HARNESSES:
        return []
    own = mcpconfig.normalize(servers or [])
    cmd = _mcp_command()
    keys = ("PREDICTORX_SERVER_URL", "PREDICTORX_TOKEN", "PREDICTORX_ISSUE", "PREDICTORX_TASK_ID",
            "PREDICTORX_WORKSPACE")
    env_file = env_root / "predictorx-mcp.env.json"
    fd = os.open(env_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump({k: agent_env[k] for k in keys if k in agent_env}, fh)
    args = [*cmd[1:], "--env-file", str(env_file)]
    if provider == "claude":
        args += ["--agents-room", str(forward)] if forward is not None else []
        path = env_root / "predictorx.mcp.json"
        path.write_text(json.dumps({"mcpServers": {**mcpconfig.claude_servers(own),
                                                   "predictorx": {"command": cmd[0], "args": args}}}, indent=2))
        return ["--mcp-config", str(path)]
    inline = lambda v: json.dumps(v)  # a JSON string/array is a TOML inline value too
    return ["-c", f"mcp_servers.predictorx.command={inline(cmd[0])}",
            "-c", f"mcp_servers.predictorx.args={inline(args)}", *mcpconfig.codex_overrides(own)]


@dataclass(frozen=True)
class Start:
    """What `task_start` found: the prompt's section (the sweep) and HEAD as the task started
    (the handoff lists the commits made since)."""

    section: str
    head: str | None = None


def start_head(started: "asyncio.Future[Start]") -> str | None:
    """HEAD as the task started, if `task_start` got that far (it may have been cancelled)."""
    if started.done() and not started.cancelled() and started.exception() is None:
        return started.result().head
    return None


def _start_facts(cwd: Path, borrowed: Sequence[Path] = ()) -> tuple[str | None, tuple[str | None, str | None]]:
    """(HEAD's commit, (default branch, its head)) as the task starts."""
    with gitview.sealed_view(cwd, borrowed) as env:
        if env is None:
            return None, (None, None)
        return _git(cwd, "rev-parse", "--verify", "--quiet", "HEAD", env=env), default_branch(cwd, env)


def _unavailable(task_id: str, issue_number: int, e: Exception) -> str:
    log.warning("task %s: no harness sweep (%s)", task_id, e)
    return f"## Session start\n\nThe harness sweep is unavailable ({e}); run `predictorx workflow list " \
           f"{issue_number}` before you act.\n"


def mcp_args(task_id: str, provider: str, servers: Sequence[Any], env_root: Path, agent_env: dict[str, str]) -> list[str]:
    """The extra CLI arguments that add `predictorx mcp` (and the agent's own MCP `servers`) to the
    run; none if that cannot be set up. Asked after the run's room setup: the agents-room MCP entry
    it may have left for `predictorx mcp` to forward to (rooms.forward_file) goes in too."""
    from .rooms import forward_file

    try:
        return mcp_setup(provider, env_root, agent_env, [dict(s) for s in servers], forward_file(env_root))
    except (OSError, mcpconfig.McpConfigError) as e:
        log.warning("task %s runs without the predictorx MCP server: %s", task_id, e)
        return []


async def task_start(api: "ServerApi", task_id: str, issue_number: int, cwd: Path,
                     borrowed: Sequence[Path] = (), claimed: Mapping[str, Any] | None = None) -> Start:
    """The prompt's section (the sweep), and the start head for the handoff's commit list.
    `borrowed`: the object stores the daemon made this checkout borrow from (a plain folder borrows
    nothing, so a checkout's borrowed history is then not looked into). `claimed`: the sweep the
    claim carried (protocol.Claim.sweep), used instead of asking for it (issue 30)."""
    # git (what HEAD and the default branch are) beside the sweep request, and none outside a repository.
    facts = asyncio.ensure_future(asyncio.to_thread(_start_facts, cwd, borrowed)) if in_repository(cwd) else None
    section, sweep = "", claimed
    if sweep is None:
        try:
            sweep = await api.call("GET", f"/api/tasks/{task_id}/harness/sweep", retries=1)
        except Exception as e:  # noqa: BLE001 — the agent still runs, and is told why it has no sweep
            section = _unavailable(task_id, issue_number, e)
    head, branch = await facts if facts is not None else (None, (None, None))
    if sweep is not None:
        try:
            moved = await asyncio.to_thread(drift, cwd, sweep.get("last_handoff"), branch, borrowed) \
                if branch[1] else None
            section = render(dict(sweep), moved)
        except Exception as e:  # noqa: BLE001
            section = _unavailable(task_id, issue_number, e)
    return Start(section, head)


@dataclass(frozen=True)
class EndState:
    """What the handoff's git facts are read against: HEAD as the task started, the run's branch
    (None: git's current one) and the object stores its checkout borrows."""

    start_head: str | None = None
    branch: str | None = None
    borrowed: tuple[Path, ...] = ()


def _git_facts(end: EndState, cwd: Path) -> dict[str, Any]:
    with gitview.sealed_view(cwd, end.borrowed) as env:
        return _facts_in(end, cwd, env) if env is not None else {"branch": end.branch} if end.branch else {}


def _facts_in(end: EndState, cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    start = end.start_head
    head = _git(cwd, "rev-parse", "--verify", "--quiet", "HEAD", env=env)
    if start and head and start != head:
        log_ = _git(cwd, "log", "--no-show-signature", "--format=%h %s", "-n", "50", f"{start}..{head}", env=env)
        facts["commits"] = [line for line in (log_ or "").splitlines() if line]
    branch = end.branch or _git(cwd, "rev-parse", "--abbrev-ref", "HEAD", env=env)
    if branch and branch != "HEAD":
        facts["branch"] = branch
    name, dhead = default_branch(cwd, env)
    if dhead:
        facts["default_branch"], facts["default_head"] = name, dhead
    return facts


def handoff_facts(task_id: str, end: EndState, cwd: Path, result: str | None) -> dict[str, Any] | None:
    """The handoff's git facts (and the run's result), read from `cwd` now — before the run's
    folder goes away. None when they could not be read."""
    try:
        facts = _git_facts(end, cwd)
    except Exception as e:  # noqa: BLE001 — the task's end is reported regardless
        log.warning("task %s: handoff not stored (%s)", task_id, e)
        return None
    if result:
        facts["result"] = result[:20_000]
    return facts


class Handoff:
    """A run's handoff at its end: read from its folder (`now`, or `later` — in worktree mode once
    the work is delivered, so the push starts first), sent in the background, awaited (`sent`)
    before the task's finish. `mask` takes the run's secrets out of what is sent. `carried()`
    when the facts are read (a server whose finish takes the handoff, protocol.FINISH_CARRIES, and
    no push report that could open the PR first): not sent but kept for the finish (`sent`
    returns it), one request fewer per task (issue 30)."""

    def __init__(self, api: "ServerApi", task_id: str, mask: Callable[[Any], Any],
                 carried: Callable[[], bool] = lambda: False):
        self.api, self.task_id, self.mask = api, task_id, mask
        self.carried = carried
        self.defer = False  # worktree mode: read in `read_pending`, before the worktree is removed
        self._pending: tuple[Path, str | None, EndState] | None = None
        self._sending: asyncio.Future[None] | None = None
        self._kept: dict[str, Any] | None = None  # carried: the facts, masked, for the finish

    async def at_end(self, cwd: Path, result: str | None, end: EndState) -> None:
        if self.defer:
            self._pending = (cwd, result, end)
        else:
            self._sending = await self._read_and_send(cwd, result, end)

    def read_pending(self, loop: asyncio.AbstractEventLoop) -> None:
        """In a worker thread: read the deferred facts now and send them from the event loop."""
        if self._pending is not None:
            cwd, result, end = self._pending
            self._pending = None
            facts = handoff_facts(self.task_id, end, cwd, result)
            loop.call_soon_threadsafe(lambda: setattr(self, "_sending", self._send(facts)))

    async def sent(self, branch: str | None) -> dict[str, Any] | None:
        """Wait until the handoff is in; one never read is read now, on the run's `branch` now.
        Carried: the facts for the finish (None: none were read)."""
        if self._pending is not None:  # never read (git failed before the work was delivered)
            cwd, result, end = self._pending
            self._pending = None
            self._sending = await self._read_and_send(cwd, result, EndState(end.start_head, branch, end.borrowed))
        if self._sending is not None:
            await asyncio.shield(self._sending)  # in before the finish (the PR's body reads it)
        return self._kept

    async def _read_and_send(self, cwd: Path, result: str | None, end: EndState) -> "asyncio.Future[None]":
        """Its facts read now, sent in the background while the daemon delivers the work."""
        facts = await asyncio.to_thread(handoff_facts, self.task_id, end, cwd, result)
        return self._send(facts)

    def _send(self, facts: dict[str, Any] | None) -> "asyncio.Future[None]":
        return asyncio.ensure_future(self._post(facts))

    async def _post(self, facts: dict[str, Any] | None) -> None:
        if facts is None:
            return
        if self.carried():
            self._kept = self.mask(facts)
            return
        await post_handoff(self.api, self.task_id, self.mask(facts))


async def post_handoff(api: "ServerApi", task_id: str, facts: Mapping[str, Any]) -> None:
    """The daemon's part of the handoff on its own (`POST …/harness/handoff`), best effort."""
    try:
        await api.call("POST", f"/api/tasks/{task_id}/harness/handoff", dict(facts), retries=2)
    except Exception as e:  # noqa: BLE001 — the task's end is reported regardless
        log.warning("task %s: handoff not stored (%s)", task_id, e)
