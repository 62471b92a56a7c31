"""One claimed task, from claim to finish: choose the code to run in, give the agent its context,
run it, stream what it says, deliver its work, report how it ended.

Where the agent runs (R-LD-3, R-CTX-4) is what the project's resource types choose
(`resources.choose_placement`): `in_place` (a person's folder, under the per-folder lock), `worktree` (a
checkout of exactly what the person sees), `checkout` (a checkout from the daemon's bare cache of a
repository) or `own` (an empty working directory of the task's own). This module only does it.
A checkout is a repository of the run's own (`runrepo`); its work comes back through `delivery`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from .. import agents, envnames, protocol, resources, secretmask, unconfined
from ..protocol import Finish, Outcome, Usage
from ..agents import RunSpec
from . import (cliconfig, delivery, earlypush, envroot, filegone, forgepush, forgework, inplace, netpolicy, permissionwait,
               review, rooms, runcheckouts, sandbox, sandboxmode, sessions, workflowhooks, worktree)
from .branches import task_branch
from .prompt import build_prompt
from .context import record as contextrecord
from .context.prepare import prepare_context
from .context.types import TaskContext, allowed_repo_urls
from ..resources import placement as where
from .gitcmd import GitError
from .host import RunHost
from .repocache import RepoCacheError, repo_name
from .serverapi import ServerError
from .uploader import MessageUploader

log = logging.getLogger("predictorx.daemon")
#: In the env root, outside everything a run can write: where the daemon's quarantine repositories go.
DELIVERY_SCRATCH = ".delivery"


class TaskFailed(Exception):
    """The task cannot run; the message is its failure_reason, in words the person can act on."""


Placement = where.Placement


def _placement(ctx: TaskContext, daemon_id: str) -> Placement:
    """The daemon asks the project's resource types where this task's agent runs."""
    return resources.choose_placement(ctx.resources, daemon_id)


class TaskRun:
    """One run of a claimed task. What it was given (`claim`, frozen, read through `task`, `agent`
    and `issue`) never changes; what it finds out (its phase, branch, review) only it sets."""

    def __init__(self, daemon: RunHost, claim: protocol.Claim):
        self.daemon = daemon
        self.claim = claim
        self.task, self.agent, self.issue = claim.task, claim.agent, claim.issue
        # The agent's earlier CLI session on this issue, kept on this machine: continued (R-EX-10).
        self.resume_session_id = claim.resume_session_id
        #: A follow-up of a pull request continues its branch (issue 22 §5).
        self.continue_branch = claim.continue_branch
        self.continued_from: str | None = None  # the forge's head it started from (the push's lease)
        self.id: str = claim.task.id
        #: The agent's variables (issue 28 §2; envnames.for_run): its environment only; secrets masked in all it sends.
        self._agent_env, self.masker = secretmask.from_claim(envnames.for_run(claim.env, self.id), self.id)
        self.cancel_event = asyncio.Event()
        #: Stops the agent's process: a cancel, or a refused running report (which is no cancel).
        self.agent_stop = asyncio.Event()
        self.phase = "preparing"       # preparing | waiting | running | finishing
        self.holds_slot = True
        self.stopping = False
        self.stop_reason: str | None = None  # why the server stopped the run, if it did
        self.branch: str | None = None
        self.review: dict[str, Any] | None = None  # the agent's work, for the task page
        self.main: asyncio.Task | None = None
        self._checkouts: dict[str, str] = {}  # repo URL → where it is checked out, told to the agent
        self._undelivered: list[str] = []  # why some checkout's work could not be delivered
        #: The object stores the daemon made the task's checkout borrow from (for `gitview`).
        self.borrowed_objects: list[Path] = []
        self.early_push = earlypush.EarlyPush(daemon.api, daemon.workspaces_root, self.id,
                                              lambda x: self.masker.any(x))  # the push, once the branch is there (issue 22)
        #: read at the end, sent while the work is delivered
        self.handoff = workflowhooks.Handoff(daemon.api, self.id, lambda facts: self.masker.any(facts), lambda: (
            "handoff" in claim.finish_takes and not self.early_push.may_report_first()))
        self.waited = False  # for its folder or for git: the sweep its claim carried may be stale by now
        self.answer_bell = asyncio.Event()  # a person answered its agent's question (permissionwait.py)

    # -- control --------------------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop the agent (its process group) or leave the folder queue at once (R-EX-5, R-LD-4)."""
        if self.cancel_event.is_set():
            return
        self.cancel_event.set()
        self.agent_stop.set()
        if self.phase in ("preparing", "waiting") and self.main is not None:
            self.main.cancel()

    def _stopped_by_server(self, reason: str) -> None:
        """The server stopped the run while it streamed (a hard budget, issue 27): cancelled, saying why."""
        self.stop_reason = reason
        self.cancel()

    def _release_slot(self, finish_follows: bool = False) -> None:
        if self.holds_slot:
            self.holds_slot = False
            self.daemon.slot_released(finish_follows)

    # -- the run --------------------------------------------------------------------------------
    def start(self, done: Callable[[], None]) -> None:
        """Run in the background; `done()` once the run is over (reported, or handed back)."""
        async def go() -> None:
            try:
                await self.run()
            finally:
                done()
        self.main = asyncio.create_task(go(), name=f"task-{self.id}")

    def shutdown(self) -> None:
        """The daemon is stopping: not the user's cancel. Unstarted work goes back to the queue."""
        self.stopping = True
        self.cancel()

    async def run(self) -> None:
        api = self.daemon.api
        outcome = Outcome("failed", "the daemon stopped unexpectedly")
        env = None
        self._uploader = MessageUploader(api, self.id, mask=self.masker.any if self.masker else None,
                                         on_stop=self._stopped_by_server, hand_over="messages" in self.claim.finish_takes)
        self._uploader.start()
        try:
            ctx = TaskContext.of_claim(self.claim.context, daemon_id=self.daemon.daemon_id)
            await asyncio.to_thread(self._check_sandbox)  # runs bwrap once: not on the event loop
            placement = _placement(ctx, self.daemon.daemon_id)
            ws = getattr(self.claim.context.workspace, "slug", None) or self.task.workspace_id
            real = self._checked_folder(placement) if placement.on_this_machine else None
            env = envroot.create_env_root(self.daemon.workspaces_root, ws, self.id,
                                          workdir_kind=placement.kind if placement.on_this_machine else "own",
                                          local_path=real)
            if placement.kind == where.IN_PLACE:  # R-LD-7: as it is — no branch switch, no stash, no autocommit
                async with self.daemon.dir_locks.acquire(real, self.id, placement.label or "local folder",
                                                         on_wait=self._on_wait):
                    if self.phase == "waiting":
                        # The wait may have lasted hours: the folder must still be what was checked.
                        if self._checked_folder(placement) != real:
                            raise TaskFailed(f"the local folder “{placement.label or 'local directory'}” now "
                                             "resolves to another place than when the task started; not run")
                        await self.daemon.acquire_slot()
                        self.holds_slot = True
                    begun = await asyncio.to_thread(inplace.start, real)
                    try:
                        outcome = await self._execute(ctx, env, real, real)
                    finally:
                        if begun is not None:
                            await asyncio.shield(self._in_place_review(begun))
            elif placement.kind == where.WORKTREE:
                outcome = await self._in_worktree(ctx, env, real)
            else:
                outcome = await self._in_own_workdir(ctx, env, placement)
        except asyncio.CancelledError:
            outcome = Outcome("cancelled", "cancelled")
        except (TaskFailed, sandbox.StoreRefused) as e:
            outcome = Outcome("failed", str(e))
        except Exception as e:  # report every failure on the task, never lose it
            full = envroot.disk_full_reason(e, self.daemon.workspaces_root)
            if full:
                log.error("task %s: %s", self.id, full)
            else:
                log.exception("task %s failed in the daemon", self.id)
            outcome = Outcome("failed", full or f"the daemon could not run the task: {e}")
        finally:
            started = self.phase in ("running", "finishing")
            self.phase = "finishing"
            self._release_slot(finish_follows=True)
            await asyncio.shield(self._uploader.close())
            if env is not None:
                try:
                    envroot.mark_finished(env, status=outcome.status)
                except OSError:
                    pass
        if self.stopping and not started:
            self._forget_env()
            await self._uploader.send_handed_over()  # no finish carries them
            await self.daemon.release(self.id)  # back to the queue, for this or another daemon
            return
        if self.stopping and outcome.status != "completed":
            outcome = replace(outcome, status="failed",
                              failure_reason=f"the daemon {self.daemon.name} was stopped while the agent was running")
        elif self.cancel_event.is_set() and outcome.status != "completed":
            outcome = replace(outcome, status="cancelled", failure_reason=self.stop_reason or outcome.failure_reason)
        # A review without a branch: deleted, the task changed nothing.
        branch = self.branch if self.review is None or self.review.get("branch") else ""
        handoff = await self.handoff.sent(self.branch)  # carried (protocol.FINISH_CARRIES): for the finish
        pushed = await self.early_push.for_finish()  # the PR opens with the finish
        fields = self.masker.any(Finish(outcome, branch, self.review, Usage.from_mapping(self._uploader.usage),
                                        pushed, handoff, tuple(self._uploader.handed_over)).to_wire())
        self._forget_env()
        await self.daemon.report_finish(self.id, fields)

    def _forget_env(self) -> None:
        """The run is over: its variables leave the daemon (the log filter lets go of them too)."""
        self._agent_env, self.masker = {}, secretmask.drop(self.id)

    def _checked_folder(self, placement: Placement) -> Path:
        try:
            return resources.get(placement.resource_type or "").check_folder(str(placement.local_path))
        except resources.PathRuleError as e:  # R-LD-2: fail, folder untouched
            raise TaskFailed(f"the local folder “{placement.label or 'local directory'}” cannot be used: {e}") from None

    async def _on_wait(self, reason: str) -> None:
        self.phase = "waiting"
        self.waited = True
        self._release_slot()  # a waiting task does not hold an execution slot (R-LD-4)
        try:
            await self.daemon.api.status(self.id, "waiting_local_directory", wait_reason=reason)
        except ServerError as e:  # showing the reason is worth a retry, never the task's place in line
            log.warning("task %s: could not report its wait (%s)", self.id, e)

    async def _wait_for_git(self, repo: Path) -> None:
        """git holds index.lock while it changes the person's repository (a commit, a merge, a
        rebase): a worktree made from it then could start from a half-done state. Wait, saying why
        on the task; past PREDICTORX_GIT_LOCK_WAIT seconds (default 60), fail saying what to do."""
        lock = await asyncio.to_thread(worktree.index_lock, repo)
        if lock is None or not lock.exists():
            return
        limit = float(os.environ.get("PREDICTORX_GIT_LOCK_WAIT", "60"))
        log.info("task %s: waiting for git's %s", self.id, lock)
        self.waited = True
        try:
            await self.daemon.api.status(self.id, "waiting_local_directory", wait_reason=(
                f"git is busy in {repo} ({lock} exists: a git command is changing it); "
                f"the worktree is made when it is done (waiting up to {limit:.0f} s)"))
        except ServerError as e:
            log.warning("task %s: could not report its wait (%s)", self.id, e)
        if not await filegone.until_gone(lock, limit):  # woken when git removes it, not polled
            raise TaskFailed(f"git's {lock} was still there after {limit:.0f} s: a git command is still "
                             f"running in {repo}, or one stopped and left it behind. Let it finish (or, if "
                             "no git command is running there, delete that file), then assign the issue again.")

    async def _in_worktree(self, ctx: TaskContext, env: envroot.EnvRoot, real: Path) -> Outcome:
        self.handoff.defer = True
        await self._wait_for_git(real)
        workdir = env.path / "workdir"
        if workdir.is_dir() and not any(workdir.iterdir()):
            workdir.rmdir()  # git makes it
        continuing = None
        if self.continue_branch:  # a follow-up: the same branch, from its forge's head (issue 22 §5)
            continuing = (self.continue_branch.branch, await self._forge_start(self.continue_branch))
        making = asyncio.ensure_future(asyncio.to_thread(worktree.prepare, real, env.path, self.agent.name, self.id,
                                                         continuing=continuing))
        try:
            prepared = await asyncio.shield(making)
        except asyncio.CancelledError:
            # Cancelled while git was still making it: let it finish, then take it back (R-WT-5).
            try:
                prepared = await making
            except worktree.WorktreeError:
                raise asyncio.CancelledError from None
            await asyncio.to_thread(worktree.finalize, prepared)
            raise
        except worktree.WorktreeError as e:
            raise TaskFailed(str(e)) from None
        self.branch = prepared.branch
        if prepared.git_dir is not None:
            self.borrowed_objects = [prepared.git_dir / "objects"]
        origin = await asyncio.to_thread(inplace.origin_url, prepared.repo_dir)
        self.early_push.name("worktree", prepared.branch, prepared.repo_dir, origin, self.continued_from)
        outcome = Outcome("failed", "interrupted")
        try:
            outcome = await self._execute(ctx, env, prepared.start_dir, real)
        finally:
            hook = self.early_push.delivered_hook(prepared.branch, self.handoff.read_pending)
            done = await asyncio.to_thread(worktree.finalize, prepared, delivered=hook,
                                           push_from=self.early_push.quarantine_hook(prepared.branch))
            self.branch = done.branch
            await self._note("system", {"event": "worktree", "message": done.message, "branch": done.branch})
            self.review = await self._review(
                prepared.repo_dir, prepared.baseline_commit, done.branch, mode="worktree",
                repo_label=str(prepared.repo_dir), worktree_path=str(prepared.worktree_dir) if done.kept_worktree else None,
                note=done.message, head=prepared.base_commit, origin=origin)
            if done.error:
                outcome = Outcome("failed", done.message)
        return outcome

    async def _in_place_review(self, begun: inplace.Start) -> None:
        """The agent's own commits in the person's folder, named by the task's branch (inplace.py)."""
        try:
            self.branch, self.review = await asyncio.to_thread(inplace.reviewed, begun, self.agent.name, self.id)
        except Exception as e:  # noqa: BLE001 — the review is a view; the run's end must still be reported
            log.warning("task %s: no review of its in-place commits (%s)", self.id, e)

    async def _in_own_workdir(self, ctx: TaskContext, env: envroot.EnvRoot,
                              placement: Placement | None = None) -> Outcome:
        cwd = env.workdir
        pending: dict[str, Any] = {"task_id": self.id, "agent_name": self.agent.name,
                                   "allowed": allowed_repo_urls(ctx), "workspace_id": self.task.workspace_id}
        co = None
        if placement is not None and placement.kind == where.CHECKOUT:
            repo = placement
            try:
                dest = env.workdir / repo_name(repo.url)
                if self.continue_branch:  # a follow-up: the same branch, from its forge's head (issue 22 §5)
                    start_at = await self._forge_start(self.continue_branch)
                    made = asyncio.to_thread(self._repo_cache().checkout_continuing, repo.url, dest,
                                             self.continue_branch.branch, start_at)
                else:
                    made = asyncio.to_thread(self._repo_cache().checkout, repo.url, repo.ref, dest,
                                             task_branch(self.agent.name, self.id))
                co = await made
            except (RepoCacheError, GitError, forgepush.PushError) as e:
                raise TaskFailed(f"could not check out {repo.url}: {e}") from None
            envroot.record_repo_urls(env, [repo.url])
            self.branch = co.branch
            self.borrowed_objects = [co.cache / "objects"]
            self.early_push.name("checkout", co.branch, co.cache, inplace.without_credentials(co.url), self.continued_from,
                                 label=co.url)
            cwd = co.path
            self._checkouts = {repo.url: "."}
            pending["placement"] = {"url": co.url, "path": str(co.path), "branch": co.branch, "start": co.commit,
                                    "cache": str(co.cache)}
        # Until its checkouts are delivered, GC keeps the env root and a daemon start delivers them.
        await asyncio.to_thread(lambda: runcheckouts.mark_pending(env.path, **pending))
        try:
            return await self._execute(ctx, env, cwd, None)
        finally:
            if co is not None:
                await asyncio.shield(self._deliver_checkout(co, env, pending["placement"]))
            if self._undelivered:
                runcheckouts.mark_pending(env.path, **pending, state="kept", why="; ".join(self._undelivered))
            else:
                runcheckouts.clear_pending(env.path)

    async def _forge_start(self, wanted: protocol.ContinueBranch) -> Callable[[Path], str]:
        """A follow-up's start: its branch from its forge (forgework.continuing_start), the push's lease."""
        try:
            return await forgework.continuing_start(self.daemon.api, self.id, lambda sha: setattr(self, "continued_from", sha))
        except forgework.NoTarget as e:
            raise TaskFailed(f"this follow-up continues branch {wanted.branch} but its forge could not "
                             f"be named ({e}); not run on another branch") from None

    def _repo_cache(self) -> Any:
        """This task's workspace's repo caches (no other workspace's runs see them)."""
        return self.daemon.repo_cache.for_workspace(self.task.workspace_id)

    async def _deliver_checkout(self, co: Any, env: envroot.EnvRoot, placed: dict[str, str]) -> None:
        """Bring the agent's commits and what it left uncommitted onto its branch in the cache (as
        worktree mode does), its checkout's git dir read only as data (`delivery`), and say plainly
        where the work is: the branch in the daemon's repo cache, the files here."""
        problem = note = None
        try:
            done = await asyncio.to_thread(runcheckouts.deliver_placement, self._repo_cache(), placed,
                                           env.path / DELIVERY_SCRATCH, agent_name=self.agent.name, task_id=self.id)
            problem, note = done.problem, done.note
        except (delivery.DeliveryError, RepoCacheError, GitError) as e:
            problem = str(e)
        if problem:
            self._undelivered.append(problem)
        branch: str | None = co.branch
        if problem is None and await asyncio.to_thread(review.delete_branch_if_unchanged, co.cache, co.branch, co.commit):
            branch, said = None, "The task changed nothing, so its branch was deleted."
        else:
            said = (f"The work is on branch {co.branch} in this daemon's cache of {co.url} ({co.cache}); "
                    f"its files are checked out in {co.path}."
                    + (f" Note: {problem}." if problem else "") + (f" Note: {note}." if note else ""))
        self.branch = branch
        await self._note("system", {"event": "checkout", "message": said, "branch": branch})
        self.review = await self._review(co.cache, co.commit, branch, mode="checkout", repo_label=co.url,
                                         worktree_path=str(co.path), note=said, head=co.commit,
                                         origin=inplace.without_credentials(co.url))
        self.early_push.start(branch, (self.review or {}).get("tip"))

    async def _deliver_run_checkouts(self, ctx: TaskContext, env: envroot.EnvRoot) -> None:
        """What the agent checked out itself (`predictorx repo checkout`) reaches the cache too."""
        workdir = Path(self._env(env, env.workdir)["PREDICTORX_WORKDIR"])
        found = runcheckouts.recorded(env.path, workdir, allowed_repo_urls(ctx),
                                      task_branch(self.agent.name, self.id))
        said = []
        for co in found:
            sentence, ok = await asyncio.to_thread(runcheckouts.deliver, self._repo_cache(), co,
                                                   env.path / DELIVERY_SCRATCH, agent_name=self.agent.name,
                                                   task_id=self.id)
            said.append(sentence)
            if not ok:
                self._undelivered.append(sentence)
        if said:
            await self._note("system", {"event": "checkouts", "message": "Repositories the agent checked out: "
                                        + "; ".join(said) + "."})

    async def _review(self, repo: Path, base: str, branch: str | None, *, head: str, origin: str | None,
                      **kw: Any) -> dict[str, Any] | None:
        """The branch's review, with where it came from: the repository's origin URL (how the
        server finds its forge) and, for a follow-up, what the forge held when it started."""
        try:
            out = await asyncio.to_thread(review.branch_review, repo, base, branch, **kw)
        except Exception as e:  # noqa: BLE001 — the review is a view; the run's end must still be reported
            log.warning("task %s: no review of its branch (%s)", self.id, e)
            return None
        out.update(head=head, origin_url=origin, **({"continued_from": self.continued_from} if self.continued_from else {}))
        return out

    async def _note(self, kind: str, content: dict[str, Any]) -> None:
        await self._uploader.add(kind, content)

    async def _execute(self, ctx: TaskContext, env: envroot.EnvRoot, cwd: Path, local: Path | None) -> Outcome:
        """Give the agent its context, run it, and take the context away again."""
        if self.cancel_event.is_set():
            raise asyncio.CancelledError
        adapter = agents.get(self.agent.provider)
        self.phase = "running"
        base_env = self._env(env, cwd)
        # Side by side (issue 9): the running report, `agents-room run-config` (a process, rooms.py),
        # the sweep (HTTP and git, R-HAR-7) and the context (files). The CLI waits only for what its
        # command line and folder need (run-config, the context); the report and the sweep come
        # while it starts (see _prompt_tail). Once the report is in, the push target is asked (issue 22).
        running = self.early_push.prefetch_after(asyncio.ensure_future(self.daemon.api.status(self.id, "running", branch_name=self.branch)))
        rooms_ready = asyncio.ensure_future(asyncio.to_thread(self.daemon.room_setup, self._room_run(env), env.path, cwd))
        sweep_ready = asyncio.ensure_future(workflowhooks.task_start(self.daemon.api, self.id, self.issue.number, cwd,
                                            tuple(self.borrowed_objects), None if self.waited else self.claim.sweep))
        uploader, prepared = self._uploader, None
        try:
            prepared = await prepare_context(cwd, adapter.config_provider(list(self.agent.command or ())), self.id, ctx,
                                             checkouts=self._checkouts, record=env.path / contextrecord.RECORD_NAME)
            extra_args, extra_env, room_intro = await rooms_ready
            store = sandbox.agents_room_paths(Path.home(), Path(self.daemon.workspaces_root)) if self.sandboxed and extra_env else []
            workflow_mcp = workflowhooks.mcp_args(self.id, self.agent.provider, self.agent.mcp_servers, env.path, base_env)
        except BaseException:
            if prepared is not None:
                await prepared.cleanup_off_loop()
            self._abandon_start(running, rooms_ready, sweep_ready)
            raise
        if prepared.error:
            await uploader.add("system", {"event": "context_unavailable", "message": prepared.error})
        if not self.sandboxed:  # the task page says what this agent could reach (issue 29 finding 11)
            await uploader.add("system", {"event": "unsandboxed", "message": unconfined.agent_warning(self.agent.name)})
        resume = self._resumable(adapter, cwd)
        if self.resume_session_id and not resume:
            await uploader.add("system", {"event": "resume_skipped", "session_id": self.resume_session_id,
                                          "message": f"{adapter.provider} keeps its sessions per folder and this task "
                                                     "runs in another one: a new session was started"})
        tail = asyncio.ensure_future(self._prompt_tail(running, sweep_ready, room_intro))
        network = await self._open_network()
        try:
            plan = await asyncio.to_thread(self._sandbox_plan, ctx, env, cwd, local, network, store) if self.sandboxed else None
        except BaseException:
            await netpolicy.close(network)
            raise
        spec = RunSpec(
            prompt=build_prompt(self.issue, self.agent, self.task.prompt, bool(resume)) + "\n\n",
            prompt_tail=tail, cwd=cwd, logs_dir=env.logs,
            env={**self._agent_env, **base_env, **extra_env, **self._sandbox_env()}, model=self.agent.model,
            argv_override=list(self.agent.command or ()) or self.daemon.executable_for(self.agent.provider),
            extra_args=[*extra_args, *workflow_mcp], timeout_s=self.daemon.task_timeout,
            sandbox=plan, secrets=self.masker.secrets,
            resume_session_id=resume, permission_policy=self.agent.permissions,
            ask_person=permissionwait.asker(self.daemon.api, self.id, self.answer_bell), ask_timeout_s=self.agent.ask_timeout_s or permissionwait.ask_timeout_s(),
        )
        ended_well = False
        try:
            fresh = build_prompt(self.issue, self.agent, self.task.prompt) + "\n\n"
            result = await adapter.run_resuming(spec, lambda m: uploader.add(m.kind, m.content), self.agent_stop, fresh)
            self.early_push.ask(result.status == "completed" and not self.cancel_event.is_set(), result.result)
            await tail  # the running report is in before the end is reported (and raises if it was refused)
            ended_well = result.status == "completed"
        finally:
            if not tail.done():  # the run itself was cancelled (the daemon stops)
                for pending in (tail, running, sweep_ready):
                    pending.cancel()
            await prepared.cleanup_off_loop()  # byte-exact removal of the block and resources.json (R-CTX-2, R-LD-6)
            if extra_env.get("AGENTS_ROOM_SESSION"):  # ended first: no lease kept through the delivery, no cancel skips it
                await asyncio.shield(asyncio.to_thread(rooms.after_run, extra_env, ended_well))
            await asyncio.shield(netpolicy.close(network))
            try:
                await asyncio.shield(self._deliver_run_checkouts(ctx, env))
            except Exception:  # the run's end must still be reported
                log.exception("task %s: could not deliver the repositories its agent checked out", self.id)
        end = workflowhooks.EndState(workflowhooks.start_head(sweep_ready), self.branch, tuple(self.borrowed_objects))
        await self.handoff.at_end(cwd, result.result, end)  # the handoff's git facts (R-HAR-7)
        if result.session_id:
            try:
                sessions.remember(adapter.provider, result.session_id, cwd)
            except OSError as e:  # only a later resume depends on it
                log.warning("task %s: could not note where session %s ran: %s", self.id, result.session_id, e)
        return Outcome(result.status, result.failure_reason, result.result, result.session_id)

    async def _prompt_tail(self, running: asyncio.Future, sweep_ready: asyncio.Future, room_intro: str) -> str:
        """The prompt's end: the sweep, and the agent's agents-room session and rooms. Done only once
        the running report is in, so an agent reads its prompt only after that (the report reaches
        the server before the task can end); a refused report stops the agent before it read any."""
        try:
            await running
        except BaseException:
            sweep_ready.cancel()
            self.agent_stop.set()
            raise
        sweep = (await sweep_ready).section
        return sweep + (f"\n\n{room_intro}" if room_intro else "")

    def _abandon_start(self, running: asyncio.Future, rooms_ready: asyncio.Future,
                       sweep_ready: asyncio.Future) -> None:
        """The run stops before its agent starts (a cancel, a failure while preparing): what was
        started beside the report is dropped, and a session `agents-room run-config` joined for it
        (a thread: it cannot be cancelled) is ended once it is there."""
        running.cancel()
        sweep_ready.cancel()

        async def leave() -> None:
            try:
                _, extra_env, _ = await rooms_ready
            except BaseException:  # noqa: BLE001 — nothing joined
                return
            if extra_env.get("AGENTS_ROOM_SESSION"):
                await asyncio.to_thread(rooms.end_session, extra_env)
        self._leaving = asyncio.ensure_future(leave())

    def _room_run(self, env: envroot.EnvRoot) -> rooms.RoomRun:
        ctx, own = self.claim.context, env.workdir_kind != "in_place"  # (in place: a folder others may change)
        return rooms.RoomRun(task_id=self.id, provider=self.agent.provider, agent_name=self.agent.name, own_checkout=own,
                             issue_number=self.issue.number, project_id=ctx.project_id, project_title=ctx.project_title)

    @property
    def sandboxed(self) -> bool:
        return sandboxmode.run_is_sandboxed(self.daemon.sandbox, self.agent.sandbox)

    def _check_sandbox(self) -> None:
        """A run that asks for the sandbox never runs without it (R-SEC-6), nor an allowlist without it."""
        refusal = netpolicy.unsandboxed_refusal(self.agent.name, self.agent.network, self.sandboxed)
        if refusal:
            raise TaskFailed(refusal)
        if not self.sandboxed:
            return
        problem = sandbox.bwrap_problem()
        if problem:
            raise TaskFailed(sandboxmode.refusal(self.agent.name, self.daemon.name, self.daemon.sandbox, problem))

    async def _open_network(self) -> netpolicy.NetworkJail | None:
        """The proxy of a run whose agent allows only some hosts; None for the open network."""
        if not (self.sandboxed and netpolicy.wants_allowlist(self.agent.network)):
            return None
        return await netpolicy.open_jail(self.agent.name, self.agent.allow_hosts, self.daemon.api.urls,
                                         lambda sentence: self._note("system", {"event": "network_refused",
                                                                                "message": sentence}))

    def _sandbox_env(self) -> dict[str, str]:
        """A sandboxed run is one: Claude Code, started by a root daemon, then runs unattended (its
        root is root of the sandbox's own user namespace only, without a capability)."""
        return {"IS_SANDBOX": "1"} if self.sandboxed else {}

    def _sandbox_plan(self, ctx: TaskContext, env: envroot.EnvRoot, cwd: Path, local: Path | None,
                      network: netpolicy.NetworkJail | None = None, room_store: list[Path] | None = None) -> sandbox.SandboxPlan:
        bwrap = sandbox.bwrap_executable()
        if bwrap is None:  # checked when the task started; gone since
            raise TaskFailed(f"bubblewrap (`bwrap`) disappeared from daemon {self.daemon.name}; not run unconfined")
        home = Path.home()
        scratch = [env.path / "home", env.path / "agents-room", env.output, env.path / runcheckouts.CHECKOUTS_DIR]
        for d in scratch:
            d.mkdir(parents=True, exist_ok=True)
        writable = [cwd, *scratch]
        if env.workdir_kind != "in_place":
            writable.append(env.path / "workdir")
        if local is not None and env.workdir_kind == "in_place":
            # The person's folder as it is, its git dirs included: in place means theirs to change.
            writable += [local, *sandbox.git_dirs(cwd)]
            root = Path(os.path.realpath(self.daemon.workspaces_root))
            if root == local or local in root.parents:
                raise TaskFailed(f"the in-place folder {local} contains this daemon's workspaces root {root} "
                                 "(other tasks' files and every repository cache), which a sandboxed run must not "
                                 "reach; set PREDICTORX_WORKSPACES_ROOT to a folder outside it and restart the daemon")
        # The repo cache is never writable: checkouts are repositories of the run's own, which
        # borrow objects from the caches of the repositories this task allows, read-only (and
        # no other workspace's cache is there at all).
        # A checkout the daemon made borrows objects, read-only: the repo cache's or the person's
        # `.git/objects` — as the daemon recorded them, never read back from the checkout's
        # alternates (an earlier attempt's agent wrote those in a reused workdir).
        made = [] if env.workdir_kind == "in_place" else list(self.borrowed_objects)
        readable = [env.path, *sandbox.python_paths(), *made,
                    *sandbox.repo_cache_paths(self._repo_cache(), allowed_repo_urls(ctx))]
        writable += room_store or []  # agents-room's own folder, for a run in rooms (refused earlier when it is not)
        provider = agents.get(self.agent.provider).config_provider(list(self.agent.command or ()))
        overlays = cliconfig.prepare(provider, home, dict(os.environ), env.path / cliconfig.COPY_DIR,
                                     cliconfig.sessions_dir(self.daemon.workspaces_root,
                                                           self.agent.id or self.agent.name))
        return sandbox.SandboxPlan(bwrap=bwrap, provider=provider, writable=writable,
                                   readable=readable, hidden=sandbox.secret_paths(home), home=home, chdir=cwd,
                                   network=network, seccomp=sandbox.write_filter(env.path), overlays=overlays)

    def _resumable(self, adapter: agents.AgentAdapter, cwd: Path) -> str | None:
        """The earlier session to continue (R-EX-10), unless the CLI can only find it in another folder."""
        if not self.resume_session_id:
            return None
        if adapter.sessions_per_folder and sessions.folder_of(self.resume_session_id) != str(cwd):
            return None
        return self.resume_session_id

    def _env(self, env: envroot.EnvRoot, cwd: Path) -> dict[str, str]:
        return envroot.agent_env(env, cwd, server_url=self.daemon.api.server_url, token=self.claim.token,
                                 task_id=self.id, workspace_id=self.task.workspace_id, issue_number=self.issue.number,
                                 agent_name=self.agent.name, workspaces_root=self.daemon.workspaces_root)
