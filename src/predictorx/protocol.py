"""The wire between the server and its daemons, typed: the names of the events the server pushes,
the kinds of messages a run streams, what a claim hands a daemon (the task, its agent, its issue,
its project's context, the task token), and what a daemon reports at a run's end.

Server and daemon both build and read these; the daemon reads a claim only through
`Claim.from_wire`, which refuses a malformed one with a sentence (`ProtocolError`) instead of a
KeyError deep inside a run. Extra keys are ignored, so a newer server can say more. This module
imports nothing of Predictor X (an import-linter contract): it is the one place both sides agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

__all__ = ["Event", "MESSAGE_KINDS", "ProtocolError", "WorkspaceRef", "ResourceRow", "ClaimContext", "TaskRef",
           "AgentSpec", "IssueRef", "EnvVar", "ContinueBranch", "Claim", "wire_keys", "Runtime", "Registration",
           "Heartbeat", "ClaimRequest", "RequestAnswer", "Usage", "Message", "MessageBatch",
           "TaskStatus", "PushReport", "Outcome", "FINISH_CARRIES", "Finish"]


class Event(StrEnum):
    """The type of a pushed event (`/api/daemon/events`, `/api/events`): one JSON object each,
    `{"type": <name>, …}`. A StrEnum, so a member is its name in JSON and compares equal to it."""

    HELLO = "hello"                        # the stream (re)opened: claim what is queued
    TASK_QUEUED = "task_queued"            # work the daemon's owner's agents may take
    TASK_CANCELLED = "task_cancelled"      # one of its tasks: stop it
    PERMISSION_ANSWERED = "permission_answered"  # a person answered its agent's question
    REQUEST = "request"                    # a question or job for one daemon: `op`, `request_id`
    DAEMON_REVOKED = "daemon_revoked"      # its token or membership ended: the stream closes
    # for browsers and `--watch` only
    TASK_CHANGED = "task_changed"
    TASK_MESSAGES = "task_messages"
    TASK_USAGE = "task_usage"
    PULL_REQUEST_CHANGED = "pull_request_changed"


#: The kinds of message a run streams (R-EX-3; their content: agents/message.py).
MESSAGE_KINDS: tuple[str, ...] = ("text", "thinking", "tool_use", "tool_result", "error", "system")


class ProtocolError(ValueError):
    """What the other side sent is not of the agreed shape; the message says what is wrong."""


# -- reading a wire object, with a sentence when it is not what was agreed -----------------------

def _obj(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ProtocolError(f"{where} is not an object")
    return value


def _str(d: Mapping[str, Any], key: str, where: str) -> str:
    value = d.get(key)
    if not isinstance(value, str) or not value:
        raise ProtocolError(f"{where}.{key} is missing or not a string")
    return value


def _opt_int(d: Mapping[str, Any], key: str, where: str) -> int | None:
    value = d.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise ProtocolError(f"{where}.{key} is not a whole number")
    return value


def _opt_str(d: Mapping[str, Any], key: str, where: str) -> str | None:
    value = d.get(key)
    if value is not None and not isinstance(value, str):
        raise ProtocolError(f"{where}.{key} is not a string")
    return value


def _list(d: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = d.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ProtocolError(f"{where}.{key} is not a list")
    return value


# -- a claim ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WorkspaceRef:
    id: str
    slug: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class ResourceRow:
    """A project resource as a claim carries it (only the rows the claiming daemon may see, R-RES-8)."""

    id: str
    resource_type: str
    resource_ref: Mapping[str, Any]
    label: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"id": self.id, "resource_type": self.resource_type, "resource_ref": dict(self.resource_ref),
                "label": self.label}

    @classmethod
    def from_wire(cls, value: Any, where: str = "resource") -> ResourceRow:
        d = _obj(value, where)
        ref = d.get("resource_ref") or {}
        if not isinstance(ref, Mapping):
            raise ProtocolError(f"{where}.resource_ref is not an object")
        return cls(id=str(d.get("id") or ""), resource_type=_str(d, "resource_type", where), resource_ref=dict(ref),
                   label=_opt_str(d, "label", where))


@dataclass(frozen=True)
class ClaimContext:
    """What a claim tells the daemon about the task's project (R-CTX-1): kept on the task as it was
    sent (`task.context`) and shown to the agent as `.predictorx/project/resources.json`.
    `workspace_repos`: URLs or `{url, description}` objects, as the workspace lists them."""

    workspace: WorkspaceRef | None = None
    workspace_repos: tuple[Any, ...] = ()
    project_id: str | None = None
    project_title: str | None = None
    project_description: str | None = None
    resources: tuple[ResourceRow, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        ws = self.workspace
        return {"workspace": None if ws is None else {"id": ws.id, "slug": ws.slug, "name": ws.name},
                "workspace_repos": list(self.workspace_repos), "project_id": self.project_id,
                "project_title": self.project_title, "project_description": self.project_description,
                "resources": [r.to_wire() for r in self.resources]}

    @classmethod
    def from_wire(cls, value: Any, where: str = "context") -> ClaimContext:
        d = _obj(value or {}, where)
        ws = d.get("workspace")
        workspace = None
        if ws is not None:
            w = _obj(ws, f"{where}.workspace")
            workspace = WorkspaceRef(id=str(w.get("id") or ""), slug=_opt_str(w, "slug", f"{where}.workspace"),
                                     name=_opt_str(w, "name", f"{where}.workspace"))
        repos = _list(d, "workspace_repos", where)
        for i, r in enumerate(repos):
            if not isinstance(r, str) and not (isinstance(r, Mapping) and isinstance(r.get("url"), str)):
                raise ProtocolError(f"{where}.workspace_repos[{i}] is neither a URL nor an object with a url")
        return cls(workspace=workspace, workspace_repos=tuple(repos),
                   project_id=_opt_str(d, "project_id", where), project_title=_opt_str(d, "project_title", where),
                   project_description=_opt_str(d, "project_description", where),
                   resources=tuple(ResourceRow.from_wire(r, f"{where}.resources[{i}]")
                                   for i, r in enumerate(_list(d, "resources", where))))


@dataclass(frozen=True)
class TaskRef:
    """The claimed task, as far as its run needs it (the claim carries the API's whole task)."""

    id: str
    workspace_id: str
    prompt: str | None = None  # a follow-up's request, from a comment

    @classmethod
    def from_wire(cls, value: Any) -> TaskRef:
        d = _obj(value, "task")
        return cls(id=_str(d, "id", "task"), workspace_id=_str(d, "workspace_id", "task"),
                   prompt=_opt_str(d, "prompt", "task"))


@dataclass(frozen=True)
class AgentSpec:
    """The agent to run, as far as its run needs it."""

    name: str
    provider: str
    id: str | None = None
    command: tuple[str, ...] | None = None  # argv, for the `command` provider and an ACP agent
    model: str | None = None
    instructions: str | None = None
    permissions: str | None = None          # allow | deny | ask (an ACP agent's questions)
    ask_timeout_s: int | None = None        # ask: its own wait for a person (None: the daemon's default)
    sandbox: bool = True
    network: str = "open"                   # open | allowlist
    allow_hosts: tuple[str, ...] = ()
    mcp_servers: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def from_wire(cls, value: Any) -> AgentSpec:
        d, w = _obj(value, "agent"), "agent"
        hosts = _list(d, "allow_hosts", w)
        servers = _list(d, "mcp_servers", w)
        if not all(isinstance(h, str) for h in hosts):
            raise ProtocolError("agent.allow_hosts holds something other than strings")
        if not all(isinstance(s, Mapping) for s in servers):
            raise ProtocolError("agent.mcp_servers holds something other than objects")
        command = d.get("command")
        if command is not None and not (isinstance(command, list) and all(isinstance(a, str) for a in command)):
            raise ProtocolError("agent.command is not a list of strings")
        return cls(name=_str(d, "name", w), provider=_str(d, "provider", w), id=_opt_str(d, "id", w),
                   command=None if command is None else tuple(command), model=_opt_str(d, "model", w),
                   instructions=_opt_str(d, "instructions", w), permissions=_opt_str(d, "permissions", w),
                   sandbox=bool(d.get("sandbox", True)), network=_opt_str(d, "network", w) or "open",
                   allow_hosts=tuple(hosts), mcp_servers=tuple(servers), ask_timeout_s=_opt_int(d, "ask_timeout_s", w))


@dataclass(frozen=True)
class IssueRef:
    number: int
    title: str
    body: str | None = None

    @classmethod
    def from_wire(cls, value: Any) -> IssueRef:
        d = _obj(value, "issue")
        number = d.get("number")
        if not isinstance(number, int) or isinstance(number, bool):
            raise ProtocolError("issue.number is missing or not a number")
        return cls(number=number, title=str(d.get("title") or ""), body=_opt_str(d, "body", "issue"))


@dataclass(frozen=True)
class EnvVar:
    """One of the agent's variables (service/agentenv.py): for its owner's daemon only."""

    name: str
    value: str
    secret: bool = False
    #: "agent": its owner set it; "workspace": a workspace secret granted to it; None: an older
    #: server did not say (envnames.for_run then takes no runtime setting from it).
    scope: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "secret": self.secret,
                **({"scope": self.scope} if self.scope else {})}


@dataclass(frozen=True)
class ContinueBranch:
    """A follow-up of a pull request continues its branch (issue 22 §5)."""

    branch: str
    remote_url: str | None = None
    pull_request_id: str | None = None
    head_sha: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"branch": self.branch, "remote_url": self.remote_url, "pull_request_id": self.pull_request_id,
                "head_sha": self.head_sha}


@dataclass(frozen=True)
class Claim:
    """One claimed task, as `POST /api/daemon/claim` (and a finish's `claimed`) hands it over."""

    task: TaskRef
    agent: AgentSpec
    issue: IssueRef
    context: ClaimContext
    token: str  # the task-scoped token its agent acts with
    resume_session_id: str | None = None  # the agent's earlier CLI session on this issue (R-EX-10)
    continue_branch: ContinueBranch | None = None
    env: tuple[EnvVar, ...] = field(default=(), repr=False)  # never in a log line
    #: The task-start sweep (R-HAR-7) as the claim found it: the daemon then does not ask for it
    #: (None: an older server, or it could not be made — the daemon asks `…/harness/sweep`).
    sweep: Mapping[str, Any] | None = field(default=None, repr=False)
    #: What this server's finish takes beside the outcome (FINISH_CARRIES): an older server's
    #: claim names none, and its daemon then sends the handoff and every message on their own.
    finish_takes: frozenset[str] = frozenset()

    @staticmethod
    def wire(*, task: Mapping[str, Any], agent: Mapping[str, Any], issue: Mapping[str, Any], context: ClaimContext,
             token: str, resume_session_id: str | None, continue_branch: ContinueBranch | None = None,
             env: tuple[EnvVar, ...] = (), sweep: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The server's side: a claim's JSON from the API's task, agent and issue representations
        (a superset of TaskRef, AgentSpec and IssueRef) and the typed rest."""
        return {"task": dict(task), "agent": dict(agent), "issue": dict(issue), "context": context.to_wire(),
                "token": token, "resume_session_id": resume_session_id,
                **({"continue_branch": continue_branch.to_wire()} if continue_branch else {}),
                **({"env": [v.to_wire() for v in env]} if env else {}),
                **({"sweep": dict(sweep)} if sweep is not None else {}), "finish_takes": list(FINISH_CARRIES)}

    @classmethod
    def from_wire(cls, value: Any) -> Claim:
        """The daemon's side: a claim read and checked; ProtocolError says what is wrong with it."""
        d = _obj(value, "claim")
        cont = d.get("continue_branch")
        continuing = None
        if cont:
            c = _obj(cont, "continue_branch")
            continuing = ContinueBranch(branch=_str(c, "branch", "continue_branch"),
                                        remote_url=_opt_str(c, "remote_url", "continue_branch"),
                                        pull_request_id=_opt_str(c, "pull_request_id", "continue_branch"),
                                        head_sha=_opt_str(c, "head_sha", "continue_branch"))
        env = []
        for i, v in enumerate(_list(d, "env", "claim")):
            e = _obj(v, f"claim.env[{i}]")
            value = e.get("value")
            if not isinstance(value, str):
                raise ProtocolError(f"claim.env[{i}].value is not a string")
            env.append(EnvVar(name=_str(e, "name", f"claim.env[{i}]"), value=value, secret=bool(e.get("secret")),
                              scope=_opt_str(e, "scope", f"claim.env[{i}]")))
        sweep = d.get("sweep")
        if sweep is not None:
            sweep = _obj(sweep, "claim.sweep")
        takes = _list(d, "finish_takes", "claim")
        return cls(task=TaskRef.from_wire(d.get("task")), agent=AgentSpec.from_wire(d.get("agent")),
                   issue=IssueRef.from_wire(d.get("issue")), context=ClaimContext.from_wire(d.get("context")),
                   token=_str(d, "token", "claim"), resume_session_id=_opt_str(d, "resume_session_id", "claim"),
                   continue_branch=continuing, env=tuple(env), sweep=sweep,
                   finish_takes=frozenset(t for t in takes if isinstance(t, str)))


def claimed_task_id(value: Any) -> str | None:
    """The task id of a claim that could not be read whole (so the daemon can still report it)."""
    task = value.get("task") if isinstance(value, Mapping) else None
    task_id = task.get("id") if isinstance(task, Mapping) else None
    return task_id if isinstance(task_id, str) and task_id else None


# -- what a daemon sends: who it is, its heartbeat and claims, a run's messages, usage, status, push
#    and end, its answers to requests ----------------------------------------------------------------
# The server validates each of these bodies with a pydantic model of server/models.py that adds
# the limits (lengths, ranges, clipping) and is tied to its class here by `models.mirrors`, which
# refuses to load when the two name different keys: a field added on one side cannot be missed on
# the other (tests/api/test_wire_bodies.py).

def wire_keys(body: type) -> frozenset[str]:
    """The keys of the JSON object a report class below sends: its fields, with a field marked
    `flatten` (Finish.outcome) replaced by that class's keys."""
    keys: set[str] = set()
    for f in fields(body):
        nested = f.metadata.get("flatten")
        keys |= wire_keys(nested) if nested is not None else {f.name}
    return frozenset(keys)


def _wire(value: Any) -> Any:
    return value.to_wire() if hasattr(value, "to_wire") else dict(value) if isinstance(value, Mapping) else value


@dataclass(frozen=True)
class Runtime:
    """An agent CLI a daemon found (daemon/main.probe_runtimes): it runs that provider's agents."""

    provider: str
    version: str | None = None
    path: str | None = None
    capabilities: tuple[str, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        return {"provider": self.provider, "version": self.version, "path": self.path,
                "capabilities": list(self.capabilities)}


@dataclass(frozen=True)
class Registration:
    """`POST /api/daemon/register`: who the daemon is and what it runs."""

    daemon_id: str
    name: str
    hostname: str | None = None
    version: str | None = None
    capabilities: tuple[str, ...] = ()
    runtimes: tuple[Runtime, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        return {"daemon_id": self.daemon_id, "name": self.name, "hostname": self.hostname, "version": self.version,
                "capabilities": list(self.capabilities), "runtimes": [r.to_wire() for r in self.runtimes]}


@dataclass(frozen=True)
class Heartbeat:
    """`POST /api/daemon/heartbeat`: the tasks it runs (the answer names those cancelled)."""

    task_ids: tuple[str, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        return {"task_ids": list(self.task_ids)}


@dataclass(frozen=True)
class ClaimRequest:
    """`POST /api/daemon/claim`: up to `limit` queued tasks, or the one named."""

    limit: int = 1
    task_id: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"limit": self.limit, **({"task_id": self.task_id} if self.task_id else {})}


@dataclass(frozen=True)
class RequestAnswer:
    """`POST /api/daemon/requests/<id>`: the daemon's answer to a `request` event."""

    ok: bool
    error: str | None = None
    data: Mapping[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"ok": self.ok, "error": self.error, **({"data": dict(self.data)} if self.data is not None else {})}


@dataclass(frozen=True)
class Usage:
    """A run's usage so far (agents/usage.py's form): the CLI's own cost where it gave one, else
    None (the server prices it from the tokens)."""

    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float | None = None

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any] | None) -> Usage | None:
        """From an adapter's usage dict (its keys of this class; anything else it says is left)."""
        if d is None:
            return None
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})

    def to_wire(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Message:
    """One streamed message of a run (`kind` one of MESSAGE_KINDS; `content`: agents/message.py)."""

    seq: int
    kind: str
    content: Mapping[str, Any]

    def to_wire(self) -> dict[str, Any]:
        return {"seq": self.seq, "kind": self.kind, "content": dict(self.content)}


@dataclass(frozen=True)
class MessageBatch:
    """`POST /api/tasks/<id>/messages`: messages in order, and the run's usage when it changed."""

    messages: tuple[Message, ...]
    usage: Usage | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"messages": [m.to_wire() for m in self.messages]}
        if self.usage is not None:
            out["usage"] = self.usage.to_wire()
        return out


@dataclass(frozen=True)
class TaskStatus:
    """`POST /api/daemon/tasks/<id>/status`: the run moved on (running, waiting with a reason)."""

    status: str
    wait_reason: str | None = None
    branch_name: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"status": self.status, "wait_reason": self.wait_reason, "branch_name": self.branch_name}


@dataclass(frozen=True)
class PushReport:
    """How the daemon's push of a task's branch to its forge went (`POST …/forge-push`, or a
    finish's `forge_pushed`)."""

    ok: bool
    sha: str | None = None
    error: str | None = None
    #: Sent before the finish (daemon/earlypush.py): the branch as named when the push target was
    #: asked for (service/forgepush.EARLY_KEYS) and the run's result (the PR's body reads it).
    branch: dict[str, str] | None = None
    result: str | None = None

    def to_wire(self) -> dict[str, Any]:
        early = {k: v for k, v in (("branch", self.branch), ("result", self.result)) if v is not None}
        return {"ok": self.ok, "sha": self.sha, "error": self.error, **early}


@dataclass(frozen=True)
class Pushing:
    """`POST /api/daemon/tasks/<id>/pushing`, sent as the daemon's push of the task's branch starts
    (daemon/earlypush.py): the branch as its push report will name it and the run's result, so the
    server plans the PR meanwhile (service/prflow.plan_ahead; nothing is written)."""

    branch: dict[str, str]
    result: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"branch": dict(self.branch), "result": self.result}


@dataclass(frozen=True)
class Outcome:
    """How a run ended, as the daemon tells it (`status`: completed | failed | cancelled)."""

    status: str
    failure_reason: str | None = None
    result: str | None = None
    session_id: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"status": self.status, "result": self.result, "session_id": self.session_id,
                "failure_reason": self.failure_reason}


#: What a finish may carry beside the outcome, when the claim's `finish_takes` names it: the
#: handoff's git facts (else `POST /api/tasks/<id>/harness/handoff`) and the run's last messages
#: (else `POST /api/tasks/<id>/messages`) — stored in the finish's transaction, one request per
#: task instead of three (issue 30).
FINISH_CARRIES: tuple[str, ...] = ("handoff", "messages")


@dataclass(frozen=True)
class Finish:
    """`POST /api/daemon/tasks/<id>/finish`: the outcome, the branch and its review (daemon/review.py),
    the run's usage, how an early push went (`forge_pushed`, daemon/earlypush.py), and — to a
    server that takes them (FINISH_CARRIES) — the handoff's git facts and the run's last messages,
    which have their seqs, so a retried finish stores them once. The daemon's host adds
    `claim_next` (its free slots) when it sends it."""

    outcome: Outcome = field(metadata={"flatten": Outcome})
    branch_name: str | None = None
    review: Mapping[str, Any] | None = None
    usage: Usage | None = None
    forge_pushed: PushReport | None = None
    handoff: Mapping[str, Any] | None = None
    messages: tuple[Message, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"branch_name": self.branch_name, **self.outcome.to_wire(), "usage": _wire(self.usage)}
        if self.review is not None:
            out["review"] = dict(self.review)
        if self.forge_pushed is not None:
            out["forge_pushed"] = self.forge_pushed.to_wire()
        if self.handoff is not None:  # (absent unless the server takes it: an older one refuses an unknown key)
            out["handoff"] = dict(self.handoff)
        if self.messages:
            out["messages"] = [m.to_wire() for m in self.messages]
        return out
