"""Daemon listing for people, and the daemon's own API: register, heartbeat, claim, report,
and its event stream (push dispatch, R-EX-2)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING

from fastapi import APIRouter, Depends, Request, Response
from fastapi.concurrency import run_in_threadpool

from ...service import daemons as svc
from ...service import agentenv, auth, claim_precheck, finish_carried, forgepush, serialize, tasks, usage_actions, workflow_delivery
from ...service import workflow_sweep
from ...service.errors import Forbidden
from ..deps import Caller, daemon_caller, get_caller, get_state, token_hash, user_caller
from ..eventstream import EventStream
from ... import protocol
from ...protocol import Event
from ..models import Claim, DaemonRegister, Heartbeat, RpcAnswer, TaskFinish, TaskStatus
from ..safejson import SafeJSONResponse
from ..state import AppState

if TYPE_CHECKING:  # annotations only: routes and pages reach the database through the services
    from sqlalchemy.orm import Session

    from ...store.schema import Daemon

router = APIRouter(prefix="/api", tags=["daemons"])
PING_SECONDS = 15


@router.get("/daemons")
def list_daemons(caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> list[dict]:
    with state.read() as s:
        return [serialize.daemon(d, svc.runtimes_of(s, d.id), svc.is_online(d), viewer_id=caller.user_id)
                for d in svc.list_daemons(s, caller.workspace_id)]


@router.get("/daemons/{daemon_id}")
def get_daemon(daemon_id: str, caller: Caller = Depends(user_caller), state: AppState = Depends(get_state)) -> dict:
    with state.read() as s:
        d = svc.get_daemon(s, caller.workspace_id, daemon_id)
        out = serialize.daemon(d, svc.runtimes_of(s, d.id), svc.is_online(d), viewer_id=caller.user_id)
        out["connected"] = state.hub.daemon_connected(d.id)
        return out


@router.post("/daemon/register")
def register(body: DaemonRegister, caller: Caller = Depends(get_caller), state: AppState = Depends(get_state)) -> dict:
    """A person registers their machine's daemon once (answer: its daemon token); the daemon then
    registers itself again on every start with that token (answer: token null, keep yours)."""
    if caller.principal.kind not in ("user", "daemon"):
        raise Forbidden("register a daemon with your own token, or the daemon's token")
    with _daemon_write(state, caller) as s:
        d, token = svc.register(s, caller.workspace_id, caller.principal, daemon_id=body.daemon_id.lower(),
                                name=body.name, hostname=body.hostname, version=body.version,
                                capabilities=body.capabilities, runtimes=[r.model_dump() for r in body.runtimes],
                                address=caller.address)
        return {"daemon": serialize.daemon(d, svc.runtimes_of(s, d.id), True, viewer_id=d.owner_id), "token": token,
                "heartbeat_interval_s": svc.heartbeat_interval().total_seconds()}


@contextmanager
def _daemon_write(state: AppState, caller: Caller) -> Iterator[Session]:
    """A write for a daemon whose token is still valid inside the transaction (service/auth.py)."""
    with state.write() as s:
        auth.still_valid(s, caller.principal)
        yield s


def _me(s, caller: Caller) -> Daemon:
    return svc.daemon_of(s, caller.principal)


@router.post("/daemon/heartbeat")
def heartbeat(body: Heartbeat, caller: Caller = Depends(daemon_caller), state: AppState = Depends(get_state)) -> dict:
    with _daemon_write(state, caller) as s:
        return {"cancelled": tasks.heartbeat(s, _me(s, caller), body.task_ids, svc.daemon_timeout())}


def _claimed(s, claimed: list[dict], daemon_id: str | None) -> list[dict]:
    """What a daemon needs to run each claimed task; built inside the claiming transaction, so a
    claim whose answer cannot be made is not committed either (the routes also render the JSON
    there, for the same reason). A follow-up of a pull request carries the branch it continues;
    a run of an agent with variables carries them (to its owner's daemon only: service/agentenv.py).
    Each carries its task-start sweep, so the daemon does not ask for it (issue 30)."""
    out = []
    for c in agentenv.with_env(s, daemon_id, claimed):
        continuing = forgepush.continue_branch(s, c["task"]) if c["task"].pull_request_id else None
        out.append(protocol.Claim.wire(
            task=serialize.task(c["task"], c["agent"].name, c["issue"].number), agent=serialize.agent(c["agent"]),
            issue=serialize.issue(c["issue"]), context=c["context"], token=c["token"],
            resume_session_id=c.get("resume_session_id"),
            continue_branch=protocol.ContinueBranch(**continuing) if continuing else None,
            env=tuple(protocol.EnvVar(**v) for v in c.get("env") or ()),
            sweep=workflow_sweep.at_claim(s, c["task"], c["issue"])))
    return out


@router.post("/daemon/claim", response_model=None)
def claim(body: Claim, caller: Caller = Depends(daemon_caller), state: AppState = Depends(get_state)) -> Response:
    with _daemon_write(state, caller) as s:
        # Nothing queued (the other daemons woken for a task one took): one statement (issue 30).
        if claim_precheck.nothing_to_claim(s, caller.principal.daemon_id, caller.workspace_id, body.task_id):
            state.hub.slots_free(caller.principal.daemon_id, body.limit)
            return SafeJSONResponse({"tasks": []})
        claimed = tasks.claim_as(s, caller.principal.daemon_id, caller.workspace_id, limit=body.limit,
                                 task_id=body.task_id)
        if not claimed:
            _me(s, caller)  # a daemon no longer registered is told so (a claim for it finds nothing)
        handed = _claimed(s, claimed, caller.principal.daemon_id)
        answer = SafeJSONResponse({"tasks": handed})
    # (its limit is its free slots: what it was handed fills them; the hub wakes a full daemon alone no more)
    state.hub.slots_free(caller.principal.daemon_id, body.limit - len(handed))
    return answer


@router.post("/daemon/tasks/{task_id}/status", response_model=None)
def report_status(task_id: str, body: TaskStatus, caller: Caller = Depends(daemon_caller),
                  state: AppState = Depends(get_state)) -> Response:
    with _daemon_write(state, caller) as s:
        t = tasks.report_status(s, caller.principal.daemon_id, task_id, status=body.status,
                                wait_reason=body.wait_reason, branch_name=body.branch_name)
        out = serialize.task(t)
    return SafeJSONResponse(out)  # encoded here: no second trip to the thread pool to validate a dict


@router.post("/daemon/tasks/{task_id}/release")
def release(task_id: str, caller: Caller = Depends(daemon_caller), state: AppState = Depends(get_state)) -> dict:
    with _daemon_write(state, caller) as s:
        return serialize.task(tasks.release(s, caller.principal.daemon_id, task_id))


@router.post("/daemon/tasks/{task_id}/finish", response_model=None)
def finish(task_id: str, body: TaskFinish, caller: Caller = Depends(daemon_caller),
           state: AppState = Depends(get_state)) -> Response:
    """Report a task's end; with `claim_next` N, also claim up to N more tasks in the same
    transaction (one request per task a busy daemon turns over, not two)."""
    with _daemon_write(state, caller) as s:
        # What it carries (protocol.FINISH_CARRIES) is stored first, as its own routes would have.
        finish_carried.store(s, caller.principal.daemon_id, caller.workspace_id, task_id,
                             messages=[m.model_dump() for m in body.messages or ()],
                             handoff=body.handoff.model_dump(exclude_none=True) if body.handoff else None)
        fields = body.model_dump(exclude={"claim_next", "forge_pushed", "usage", "handoff", "messages"})
        if body.forge_pushed is None and body.review and body.review.get("branch"):
            fields["review"] = forgepush.keep_pushed(s, task_id, fields["review"])  # pushed before the finish
        t = tasks.finish(s, caller.principal.daemon_id, task_id, **fields)
        workflow_delivery.after_delivery(s, t.issue_id, body.status, body.review)  # commit-boundary steps
        if body.usage is not None:  # the run's final usage (issue 27)
            usage_actions.usage_reported(s, t, body.usage.model_dump(), final=True)
        out = serialize.task(t)
        pushed = body.forge_pushed
        if pushed is not None and body.review and body.review.get("branch"):
            # Pushed already (the target was asked at the agent's end): recorded in this
            # transaction, and the PR opens once it commits (service/prflow.py).
            forgepush.push_at_finish(s, caller.principal.daemon_id or "", task_id, ok=pushed.ok, sha=pushed.sha,
                                     error=pushed.error)
        elif body.status == "completed" and body.review and body.review.get("branch"):
            # Its daemon pushes the branch if its forge and project say so: the target (with the
            # forge's credential) goes in this answer, to this daemon only (service/forgepush.py).
            target = forgepush.target_at_finish(s, caller.principal.daemon_id or "", task_id)
            if target is not None:
                out["forge_push"] = asdict(target)
        if body.claim_next:  # the finish found this daemon registered (or refused the request)
            # Nothing queued in the workspace (a daemon's usual finish): one statement, as an empty claim.
            empty = claim_precheck.nothing_to_claim(s, caller.principal.daemon_id, caller.workspace_id, None)
            out["claimed"] = [] if empty else _claimed(s, tasks.claim_as(
                s, caller.principal.daemon_id, caller.workspace_id, limit=body.claim_next), caller.principal.daemon_id)
        answer = SafeJSONResponse(out)
    if "claim_next" in body.model_fields_set:  # (its free slots; an older daemon does not say)
        state.hub.slots_free(caller.principal.daemon_id, body.claim_next - len(out.get("claimed", ())))
    return answer


@router.post("/daemon/requests/{request_id}")
def answer(request_id: str, body: RpcAnswer, caller: Caller = Depends(daemon_caller),
           state: AppState = Depends(get_state)) -> dict:
    """Only the daemon the request was sent to may answer it (R-SEC-5)."""
    return {"accepted": state.hub.answer(request_id, caller.principal.daemon_id, body.model_dump())}


@router.get("/daemon/events")
async def daemon_events(request: Request, caller: Caller = Depends(daemon_caller),
                        state: AppState = Depends(get_state)) -> EventStream:
    """The long-lived push connection. The first event tells the daemon to claim what is queued;
    then it hears of work it may take (its owner's agents) and of its own tasks' cancels."""
    owner_id, providers = await run_in_threadpool(_owner_of, state, caller)
    sub = state.hub.subscribe(caller.workspace_id, caller.principal.daemon_id, owner_id, token_hash(request),
                              providers=providers)
    return EventStream(_stream(state, sub, hello={"type": Event.HELLO}), ping=PING_SECONDS)


def _owner_of(state: AppState, caller: Caller) -> tuple[str | None, frozenset[str] | None]:
    """(its owner, the providers of its runtimes): whose queued tasks it hears of, and which of
    them the hub may wake it alone for (server/hub.py). None: every task queued, any of them."""
    with state.read() as s:
        d = svc.find_daemon(s, caller.workspace_id, caller.principal.daemon_id)
        if d is None:
            return None, None
        return d.owner_id, frozenset(rt.provider for rt in svc.runtimes_of(s, d.id))


@router.get("/events")
async def events(request: Request, caller: Caller = Depends(user_caller),
                 state: AppState = Depends(get_state)) -> EventStream:
    """Live updates for browsers and `predictorx … --watch`."""
    sub = state.hub.subscribe(caller.workspace_id, token_hash=token_hash(request))
    return EventStream(_stream(state, sub, hello={"type": Event.HELLO}), ping=PING_SECONDS)


async def _stream(state: AppState, sub, hello: dict):
    try:
        yield {"data": json.dumps(hello)}
        while True:
            # No timeout: a client that goes away ends the response (sse-starlette listens for
            # the disconnect and cancels this), and a closed subscription puts an event on the
            # queue. It used to wake every 5 s per stream to look (issue 30).
            event = await sub.queue.get()
            if sub.closed or event.get("type") == Event.DAEMON_REVOKED:
                return  # its token or membership ended (server/streamwatch.py): reconnecting answers 401
            yield {"data": json.dumps(event)}
    finally:
        state.hub.unsubscribe(sub)
