"""Request bodies. Constraints here turn wrong input into a clear 422 before any work is done."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from .. import protocol
from ..service.workflow_instances import Completion
from ..textsafe import clip


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


Name = Annotated[str, Field(min_length=1, max_length=500), AfterValidator(_no_nul)]
ShortName = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(_no_nul)]
#: One `--allow-host` entry; its grammar is checked by the service (allowhosts.parse_entry).
AllowedHost = Annotated[str, Field(min_length=1, max_length=300), AfterValidator(_no_nul)]
Body = Annotated[str, Field(max_length=100_000), AfterValidator(_no_nul)]
Ident = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_no_nul)]
Position = Annotated[int, Field(ge=0, le=1_000_000)]


M = TypeVar("M", bound=BaseModel)
#: Each report body's model and its protocol class (tests/api/test_wire_bodies.py reads it).
MIRRORS: dict[type[BaseModel], type] = {}


def mirrors(wire: type, *, host_adds: tuple[str, ...] = ()) -> Callable[[type[M]], type[M]]:
    """The model validates the report body `wire` of protocol.py (adding the limits): checked when
    this module loads, so the two can never name different keys — a field added to one and
    forgotten on the other stops the server's start with this sentence, and fails
    tests/api/test_wire_bodies.py. `host_adds`: keys the daemon's host puts beside the body."""
    def check(model: type[M]) -> type[M]:
        ours, theirs = set(model.model_fields), protocol.wire_keys(wire) | set(host_adds)
        if ours != theirs:
            raise TypeError(f"server.models.{model.__name__} and protocol.{wire.__name__} differ: only the model has "
                            f"{sorted(ours - theirs)}, only the protocol {sorted(theirs - ours)}")
        MIRRORS[model] = wire
        return model
    return check


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _repo_url(value: str) -> str:
    from ..resources import ResourceError
    from ..resources.validation import git_url

    try:
        return git_url(_no_nul(value.strip()))
    except ResourceError as e:
        raise ValueError(e.message) from None


RepoUrl = Annotated[str, Field(min_length=1, max_length=2000), AfterValidator(_repo_url)]


class WorkspaceCreate(Strict):
    name: Name
    slug: ShortName | None = None
    repos: list[RepoUrl] = Field(default_factory=list, max_length=200)


class WorkspaceUpdate(Strict):
    name: Name | None = None
    repos: list[RepoUrl] | None = Field(default=None, max_length=200)


class MemberIn(Strict):
    name: Name
    email: Annotated[str, Field(min_length=3, max_length=320, pattern=r"^[^@\s]+@[^@\s]+$")] | None = None
    role: ShortName = "member"


class RoleIn(Strict):
    role: ShortName


class TokenIn(Strict):
    name: Name
    days: Annotated[int, Field(ge=1, le=3650)] | None = None


class ResourceIn(Strict):
    resource_type: ShortName
    resource_ref: dict[str, Any]
    label: Name | None = None
    position: Position | None = None


class ResourcePatch(Strict):
    """Omitted fields are kept; `null` clears (inside resource_ref too)."""

    resource_type: ShortName | None = None
    resource_ref: dict[str, Any] | None = None
    label: Name | None = None
    position: Position | None = None


class ProjectCreate(Strict):
    title: Name
    description: Body = ""
    status: ShortName = "planned"
    priority: ShortName = "none"
    lead_id: Ident | None = None
    resources: list[ResourceIn] = Field(default_factory=list, max_length=100)


class ForgePolicyPatch(Strict):
    """A project's forge policy (service/forgepolicy.py): only what is given changes; null
    returns a setting to its default."""

    auto_push: bool | None = None
    auto_pr: bool | None = None
    draft: bool | None = None
    max_followups: int | None = None
    on_merge: ShortName | None = None


class ProjectUpdate(Strict):
    title: Name | None = None
    description: Body | None = None
    status: ShortName | None = None
    priority: ShortName | None = None
    lead_id: Annotated[str, Field(max_length=100), AfterValidator(_no_nul)] | None = None  # "" clears it
    forge_policy: ForgePolicyPatch | None = None


#: A forge credential: an access token, write-only (service/forges.py checks its shape).
Credential = Annotated[str, Field(min_length=1, max_length=4000), AfterValidator(_no_nul)]
UrlText = Annotated[str, Field(min_length=1, max_length=2000), AfterValidator(_no_nul)]


class ForgeConnectionCreate(Strict):
    kind: ShortName
    name: ShortName
    base_url: UrlText
    api_url: UrlText | None = None
    credential: Credential
    members_may_merge: bool = False


class ForgeConnectionUpdate(Strict):
    name: ShortName | None = None
    base_url: UrlText | None = None
    api_url: UrlText | None = None
    credential: Credential | None = None
    members_may_merge: bool | None = None


class IssueCreate(Strict):
    title: Name
    body: Body = ""
    status: ShortName = "todo"
    priority: ShortName = "none"
    project_id: Ident | None = None
    assignee: Ident | None = None


class IssueUpdate(Strict):
    title: Name | None = None
    body: Body | None = None
    status: ShortName | None = None
    priority: ShortName | None = None
    #: The issue's version the editor saw: a field changed by someone else since is not overwritten.
    version: Annotated[int, Field(ge=1)] | None = None


class Assign(Strict):
    assignee: Ident | None = None
    version: Annotated[int, Field(ge=1)] | None = None


class CommentIn(Strict):
    body: Annotated[str, Field(min_length=1, max_length=100_000), AfterValidator(_no_nul)]


class AgentCreate(Strict):
    name: ShortName
    provider: ShortName
    model: Name | None = None
    instructions: Body = ""
    command: list[Annotated[str, Field(min_length=1, max_length=4000), AfterValidator(_no_nul)]] | None = Field(default=None, max_length=200)
    max_concurrent_tasks: Annotated[int, Field(ge=1, le=64)] = 1
    runtime: Ident | None = None
    sandbox: bool = True
    network: Literal["open", "allowlist"] = "open"
    allow_hosts: list[AllowedHost] = Field(default_factory=list, max_length=64)
    permissions: Literal["allow", "deny", "ask"] = "allow"
    #: `ask`: seconds a question waits for a person before deny answers it (none: the daemon's default)
    ask_timeout_s: Annotated[int, Field(ge=10, le=86_400)] | None = None
    #: Its own MCP servers (agentconfig/mcpconfig.py checks them): stdio or HTTP, secrets only named.
    mcp_servers: list[dict[str, Any]] | None = Field(default=None, max_length=20)


class AgentUpdate(Strict):
    name: ShortName | None = None
    provider: ShortName | None = None
    model: Name | None = None
    instructions: Body | None = None
    command: list[Annotated[str, Field(min_length=1, max_length=4000), AfterValidator(_no_nul)]] | None = Field(default=None, max_length=200)
    max_concurrent_tasks: Annotated[int, Field(ge=1, le=64)] | None = None
    runtime: Ident | None = None
    sandbox: bool | None = None
    network: Literal["open", "allowlist"] | None = None
    allow_hosts: list[AllowedHost] | None = Field(default=None, max_length=64)
    permissions: Literal["allow", "deny", "ask"] | None = None
    #: 0 goes back to the daemon's default
    ask_timeout_s: Annotated[int, Field(ge=0, le=86_400)] | None = None
    mcp_servers: list[dict[str, Any]] | None = Field(default=None, max_length=20)


@mirrors(protocol.Runtime)
class RuntimeIn(Strict):
    provider: ShortName
    version: Name | None = None
    path: Annotated[str, Field(max_length=4000), AfterValidator(_no_nul)] | None = None
    capabilities: list[ShortName] = Field(default_factory=list, max_length=50)


def _uuid(value: str) -> str:
    import uuid

    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise ValueError("must be a UUID") from None


@mirrors(protocol.Registration)
class DaemonRegister(Strict):
    daemon_id: Annotated[str, Field(min_length=32, max_length=36), AfterValidator(_uuid)]
    name: Name
    hostname: Name | None = None
    version: ShortName | None = None
    capabilities: list[ShortName] = Field(default_factory=list, max_length=50)
    runtimes: list[RuntimeIn] = Field(default_factory=list, max_length=50)


@mirrors(protocol.Heartbeat)
class Heartbeat(Strict):
    task_ids: list[Ident] = Field(default_factory=list, max_length=1000)


@mirrors(protocol.ClaimRequest)
class Claim(Strict):
    limit: Annotated[int, Field(ge=1, le=100)] = 1
    task_id: Ident | None = None


def Reported(limit: int):  # a type factory, named like the types it makes
    """Text a daemon reports about a run: never refused for size or content (R-SEC-8). NUL and
    lone surrogates become U+FFFD, and text over `limit` is cut with a marker saying how much
    was left out (the daemon's raw log keeps all of it)."""
    return Annotated[str, BeforeValidator(lambda v: clip(v, limit) if isinstance(v, str) else v)]


@mirrors(protocol.TaskStatus)
class TaskStatus(Strict):
    status: ShortName
    wait_reason: Reported(100_000) | None = None
    branch_name: Reported(500) | None = None


class EarlyBranch(Strict):
    """The branch a daemon will report, named when its agent ended (service/forgepush.EARLY_KEYS)."""

    mode: Annotated[str, Field(max_length=40)] | None = None
    branch: Annotated[str, Field(max_length=500)] | None = None
    repo_path: Annotated[str, Field(max_length=4096)] | None = None
    origin_url: Annotated[str, Field(max_length=4096)] | None = None
    repo_label: Annotated[str, Field(max_length=4096)] | None = None
    continued_from: Annotated[str, Field(pattern=r"^[0-9a-f]{40,64}$")] | None = None


@mirrors(protocol.PushReport)
class PushReport(Strict):
    """How a daemon's push of a task's branch to its forge went (daemon/forgework.py). Sent before
    the task's finish (daemon/earlypush.py), it names the branch as the push target was asked for
    it and carries the run's result (the PR's body reads it)."""

    ok: bool
    sha: Annotated[str, Field(pattern=r"^[0-9a-f]{40,64}$")] | None = None
    error: Body | None = None
    branch: EarlyBranch | None = None
    result: Body | None = None


@mirrors(protocol.Pushing)
class Pushing(Strict):
    """A daemon's push of a task's branch has started (daemon/earlypush.py): the branch as its push
    report will name it and the run's result, for the PR planned meanwhile."""

    branch: EarlyBranch
    result: Body | None = None


Count = Annotated[int, Field(ge=0, le=10**13)]
#: A model's name as a CLI reported it: cut, never refused (Reported's rule).
ModelName = Annotated[str, BeforeValidator(lambda v: clip(v, 200) if isinstance(v, str) else v)]


@mirrors(protocol.Usage)
class UsageIn(Strict):
    """A run's usage so far, as the daemon's adapter put it (agents/usage.py): the CLI's own cost
    where it gave one (else None: the server prices it, service/pricing.py)."""

    model: ModelName | None = None
    input_tokens: Count = 0
    output_tokens: Count = 0
    cache_read_tokens: Count = 0
    cache_write_tokens: Count = 0
    reasoning_tokens: Count = 0
    cost_usd: Annotated[float, Field(ge=0, le=1_000_000)] | None = None


@mirrors(protocol.Message)
class MessageIn(Strict):
    seq: Annotated[int, Field(ge=0, le=2_000_000_000)]
    kind: ShortName
    content: dict[str, Any]


class HandoffIn(Strict):
    """A task's handoff (R-HAR-7): the agent's part (done, open questions, next step) or its
    daemon's (the git facts and the result), `POST /api/tasks/<id>/harness/handoff` or a finish's."""

    done: Annotated[str, Field(max_length=20_000)] | None = None
    open_questions: Annotated[list[str], Field(max_length=50)] | None = None
    next_step: Annotated[str, Field(max_length=5_000)] | None = None
    branch: Annotated[str, Field(max_length=300)] | None = None
    commits: Annotated[list[str], Field(max_length=200)] | None = None
    default_branch: Annotated[str, Field(max_length=300)] | None = None
    default_head: Annotated[str, Field(max_length=64)] | None = None
    result: Annotated[str, Field(max_length=20_000)] | None = None


@mirrors(protocol.Finish, host_adds=("claim_next",))
class TaskFinish(Strict):
    """The end of a run. Accepted whatever the agent printed, so a finished run is never lost."""

    status: ShortName
    result: Reported(1_000_000) | None = None
    session_id: Reported(2000) | None = None
    failure_reason: Reported(100_000) | None = None
    branch_name: Reported(500) | None = None
    review: dict[str, Any] | None = None  # the agent's work: see daemon/review.py
    usage: UsageIn | None = None  # the run's usage at its end (issue 27)
    claim_next: Annotated[int, Field(ge=0, le=100)] = 0  # also claim up to this many tasks
    #: The branch was pushed already, with the target asked at the agent's end: how it went.
    forge_pushed: PushReport | None = None
    #: The handoff's git facts and the run's last messages, stored in the finish's transaction
    #: (protocol.FINISH_CARRIES; a claim names them in `finish_takes`).
    handoff: HandoffIn | None = None
    messages: list[MessageIn] | None = Field(default=None, max_length=1000)


@mirrors(protocol.MessageBatch)
class MessageBatch(Strict):
    messages: list[MessageIn] = Field(max_length=1000)
    usage: UsageIn | None = None  # the run's usage so far, live (issue 27)


Money = Annotated[float, Field(ge=0, le=1_000_000_000)]


class BudgetIn(Strict):
    """A spending limit (issue 27 §2): `limit` in US dollars (metric cost) or tokens."""

    scope: Literal["workspace", "project", "agent"] = "workspace"
    target: Ident | None = None  # the project or agent (id or name); none for the workspace
    period: Literal["day", "month"] = "day"
    metric: Literal["cost", "tokens"] = "cost"
    limit: Money
    action: Literal["warn", "stop"] = "warn"


class PriceIn(Strict):
    """A workspace's own price of a model, US dollars per million tokens (negotiated, or a local model's)."""

    model: Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_no_nul)]
    input: Money
    output: Money
    cache_read: Money | None = None
    cache_write: Money | None = None


@mirrors(protocol.RequestAnswer)
class RpcAnswer(Strict):
    ok: bool
    error: Body | None = None
    data: dict[str, Any] | None = None


# -- workflows (routes/workflows.py and the issue page's Workflows panel) ----------------------

class StartIn(Strict):
    process: str = Field(min_length=1, max_length=200)


class StepIn(Strict):
    step: str = Field(min_length=1, max_length=200, description="Node id (or engine task id) of an enabled step.")
    facts: dict[str, str | int | float | bool | None] = Field(default_factory=dict, max_length=100)
    outcome: str | None = Field(default=None, max_length=200)
    reason: str | None = Field(default=None, max_length=10_000)
    produced: dict[str, str] = Field(default_factory=dict, max_length=50)
    if_version: int | None = Field(default=None, ge=1)

    def completion(self) -> Completion:
        """The step as the use case takes it (service/workflow_actions.complete)."""
        return Completion(self.step, dict(self.facts), self.outcome, self.reason, dict(self.produced), self.if_version)


class AgentRef(Strict):
    agent: str | None = Field(default=None, max_length=200)


class SwitchAnswerIn(Strict):
    answer: str = Field(description="suspend (take the platform change now) or bean (file it for later)",
                        max_length=20)
    reason: str | None = Field(default=None, max_length=10_000)
    agent: str | None = Field(default=None, max_length=200)


class StopIn(Strict):
    reason: Annotated[str, Field(min_length=1, max_length=2000), AfterValidator(_no_nul)]


class ExitIn(Strict):
    exit: str = Field(min_length=1, max_length=200, description="A declared exit of the process, e.g. defer.")
    reason: str = Field(min_length=1, max_length=10_000)


class PermissionAnswerIn(Strict):
    option_id: Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_no_nul)]
    #: The question answered; default: the one the task is waiting on.
    request_id: Annotated[str, Field(min_length=1, max_length=100)] | None = None


#: A variable's value (issue 28 §2): never echoed back, not even in a 422 (server/app.py).
EnvValue = Annotated[str, Field(max_length=65536), AfterValidator(_no_nul)]


class EnvVarIn(Strict):
    value: EnvValue
    #: A secret is write-only and masked in what the daemon uploads; a plain variable is shown.
    secret: bool = True


class WorkspaceSecretIn(Strict):
    value: EnvValue


class EnvGrantIn(Strict):
    name: Annotated[str, Field(min_length=1, max_length=128), AfterValidator(_no_nul)]


class AutopilotIn(Strict):
    """An autopilot (issue 27 §5): an issue template (placeholders: service/autopilot_payload.py),
    optionally a workflow to start on it, who does it (an agent, or role:<name> in the project),
    and its triggers — a cron expression in a time zone, a signed webhook, or both."""

    name: ShortName
    title: Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_no_nul)]
    description: Annotated[str, Field(max_length=20_000), AfterValidator(_no_nul)] = ""
    workflow: ShortName | None = None
    assignee: Ident | None = None
    project: Ident | None = None
    cron: ShortName | None = None
    timezone: Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_no_nul)] = "UTC"
    webhook: bool = False
    filter: Annotated[str, Field(min_length=1, max_length=700), AfterValidator(_no_nul)] | None = None
    failure_limit: Annotated[int, Field(ge=1, le=1000)] = 5


class AutopilotScheduleIn(Strict):
    """A new schedule for an autopilot: a cron expression (absent or null: the one it has; empty:
    no schedule — it keeps its webhook) and its time zone (absent: the one it has)."""

    cron: Annotated[str, Field(max_length=100), AfterValidator(_no_nul)] | None = None
    timezone: Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_no_nul)] | None = None


# -- outbound notifications (issue 27 §4; routes/notifications.py, web/notifications.py) --
NotifyKind = Literal["run_failed", "run_budget", "assigned", "review", "step", "gate", "mention", "comment", "permission"]


class ChannelIn(Strict):
    scope: Literal["me", "workspace"] = "me"
    kind: Literal["webhook", "apprise"]
    name: Annotated[str, Field(min_length=1, max_length=100)]
    url: Annotated[str, Field(min_length=1, max_length=4000)]
    #: a webhook's signing secret; none: the server makes one and answers it once
    secret: Annotated[str | None, Field(min_length=16, max_length=500)] = None
    events: Annotated[list[NotifyKind] | None, Field(min_length=1, max_length=20)] = None
    digest: Literal["off", "hourly", "daily"] = "off"


class ChannelPatch(Strict):
    events: Annotated[list[NotifyKind] | None, Field(min_length=1, max_length=20)] = None
    digest: Literal["off", "hourly", "daily"] | None = None
    enabled: bool | None = None
