"""The whole domain of SPEC §1 as SQLAlchemy tables. Alembic migrations mirror this file."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
    literal_column,
    true,
)
from sqlalchemy.types import TypeDecorator
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def new_id() -> str:
    return str(uuid.uuid4())


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    pass


class UTCDateTime(TypeDecorator):
    """Aware UTC datetimes on both backends (SQLite would hand back naive values)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        if value is not None and dialect.name == "sqlite":
            value = value.astimezone(timezone.utc).replace(tzinfo=None)
        return value

    def process_result_value(self, value, dialect):
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value


TS = UTCDateTime()

# Task statuses (SPEC §1). `ACTIVE` ones hold the (agent, issue) slot.
TASK_STATUSES = ("queued", "dispatched", "waiting_local_directory", "running", "completed", "failed", "cancelled")
ACTIVE_STATUSES = ("queued", "dispatched", "waiting_local_directory", "running")
# A task in one of these holds one of its agent's concurrency slots (max_concurrent_tasks).
HOLDING_STATUSES = ("dispatched", "waiting_local_directory", "running")
TERMINAL_STATUSES = ("completed", "failed", "cancelled")


def one_of(column: Any, values: tuple[str, ...]) -> Any:
    """`column IN ('a', 'b')` with the values written into the SQL: a fixed list needs no
    expanding parameter, which SQLAlchemy would rewrite into the statement's text on every
    execution (the claim and finish paths run thousands a second). Only for this module's own
    constants, never for input."""
    assert all(v.replace("_", "").isalnum() for v in values), values
    return column.in_([literal_column(f"'{v}'") for v in values])


class Workspace(Base):
    __tablename__ = "workspace"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(500))
    slug: Mapped[str] = mapped_column(String(100), unique=True)
    repos: Mapped[list] = mapped_column(JSON, default=list)
    issue_counter: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    # The audit log's retention in days for this workspace (service/audit.py): None = the server's.
    audit_retention_days: Mapped[int | None] = mapped_column(Integer, nullable=True)


class User(Base):
    __tablename__ = "user_account"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(500))
    email: Mapped[str | None] = mapped_column(String(320), unique=True)
    #: proven by the person holding the account (an OpenID provider said it is verified), not
    #: typed by whoever added them: only a proven e-mail attaches the account elsewhere
    email_proven: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class Member(Base):
    __tablename__ = "member"
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("user_account.id", ondelete="CASCADE"), primary_key=True)
    role: Mapped[str] = mapped_column(String(20), default="member")  # owner | admin | member
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class Token(Base):
    """User, daemon and task-scoped tokens (R-SEC-1). Only the SHA-256 of a token is stored."""

    __tablename__ = "token"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(10))  # user | daemon | task
    name: Mapped[str | None] = mapped_column(String(600))
    user_id: Mapped[str | None] = mapped_column(ForeignKey("user_account.id", ondelete="CASCADE"))
    workspace_id: Mapped[str | None] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    daemon_id: Mapped[str | None] = mapped_column(String(36))
    task_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(TS)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)


class Project(Base):
    __tablename__ = "project"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"), index=True)
    title: Mapped[str] = mapped_column(String(500))
    description: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(20), default="planned")
    priority: Mapped[str] = mapped_column(String(20), default="none")
    lead_id: Mapped[str | None] = mapped_column(ForeignKey("user_account.id", ondelete="SET NULL"))
    #: How its agents' branches reach a forge (issue 22; service/forgepolicy.py reads it with its
    #: defaults): auto_push, auto_pr, draft, max_followups, on_merge ("done" | "in_review").
    forge_policy: Mapped[dict | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow)


class ProjectResource(Base):
    __tablename__ = "project_resource"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    project_id: Mapped[str] = mapped_column(ForeignKey("project.id", ondelete="CASCADE"))
    resource_type: Mapped[str] = mapped_column(String(100))
    resource_ref: Mapped[dict] = mapped_column(JSON)
    label: Mapped[str | None] = mapped_column(String(500))
    position: Mapped[int] = mapped_column(Integer, default=0)
    # Set by the type's handler (e.g. one local_directory per daemon); NULLs never collide.
    unique_key: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    created_by: Mapped[str | None] = mapped_column(String(36))

    __table_args__ = (
        UniqueConstraint("project_id", "unique_key", name="uq_project_resource_unique_key"),
        Index("ix_project_resource_project_position", "project_id", "position"),
    )


class Issue(Base):
    __tablename__ = "issue"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(String(500))
    body: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(20), default="todo")
    priority: Mapped[str] = mapped_column(String(20), default="none")
    project_id: Mapped[str | None] = mapped_column(ForeignKey("project.id", ondelete="SET NULL"), index=True)
    assignee_type: Mapped[str | None] = mapped_column(String(10))  # member | agent
    assignee_id: Mapped[str | None] = mapped_column(String(36))
    created_by: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow)
    #: Bumped by each change of a tracked field (service/issue_versions.py): an edit carries the
    #: version its page saw, and one made on a stale copy of a field is refused (issue 26 §1).
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    #: field -> {"v": version that changed it, "by": who, "at": ISO time}
    field_changes: Mapped[dict | None] = mapped_column(JSON)

    __table_args__ = (UniqueConstraint("workspace_id", "number", name="uq_issue_number"),)


class Comment(Base):
    __tablename__ = "comment"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    issue_id: Mapped[str] = mapped_column(ForeignKey("issue.id", ondelete="CASCADE"), index=True)
    author_type: Mapped[str] = mapped_column(String(10))  # member | agent
    author_id: Mapped[str | None] = mapped_column(String(36))
    body: Mapped[str] = mapped_column(Text)
    #: What its page shows, rendered once when written (predictorx/richtext.py; issue 29 §5).
    body_html: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class Agent(Base):
    __tablename__ = "agent"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    provider: Mapped[str] = mapped_column(String(100))
    model: Mapped[str | None] = mapped_column(String(500))
    instructions: Mapped[str] = mapped_column(Text, default="")
    command: Mapped[list | None] = mapped_column(JSON)  # argv for the `command` provider
    max_concurrent_tasks: Mapped[int] = mapped_column(Integer, default=1)
    #: Every run of this agent in the bubblewrap sandbox (R-SEC-6; daemon/sandbox.py): on unless
    #: its owner turns it off (issue 29; migration 0012 turned it on for every existing agent).
    sandbox: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    #: "open" (the host's network) or "allowlist": its own network namespace, reaching only
    #: `allow_hosts` through the daemon's proxy (daemon/netpolicy.py; migration 0013).
    network: Mapped[str] = mapped_column(String(16), default="open", server_default="open")
    allow_hosts: Mapped[list | None] = mapped_column(JSON, default=list)
    #: How an ACP agent's permission requests are answered: "allow", "deny" or "ask" (agents/acp_client.py;
    #: migration 0017). The other CLIs run with their own unattended flags.
    permissions: Mapped[str] = mapped_column(String(8), default="allow", server_default="allow")
    #: How long an `ask` question waits for a person before the policy's default (deny) answers
    #: it, in seconds; None: the daemon's PREDICTORX_ASK_TIMEOUT_S (migration 0030).
    ask_timeout_s: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: How many variables its runs are given (its own, plus workspace secrets granted to it):
    #: the claim reads them only for an agent that has some (service/agentenv.py; migration 0022).
    env_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: Its own MCP servers, added to its runs beside agents-room and `predictorx mcp`
    #: (agentconfig/mcpconfig.py: stdio or HTTP; secrets only named, never stored here; migration 0022).
    mcp_servers: Mapped[list | None] = mapped_column(JSON)
    runtime_id: Mapped[str | None] = mapped_column(ForeignKey("runtime.id", ondelete="SET NULL"))
    # The person whose machines run it (R-SEC-6): it runs only on their daemons, only they edit it.
    owner_id: Mapped[str | None] = mapped_column(String(36), index=True)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    #: Archived: out of lists and assignment; its runs keep their history and its name (migration 0009).
    archived_at: Mapped[datetime | None] = mapped_column(TS)

    __table_args__ = (UniqueConstraint("workspace_id", "name", name="uq_agent_name"),)


class Daemon(Base):
    __tablename__ = "daemon"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)  # the machine's stable daemon_id
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(500))
    hostname: Mapped[str | None] = mapped_column(String(500))
    version: Mapped[str | None] = mapped_column(String(100))
    capabilities: Mapped[list] = mapped_column(JSON, default=list)
    # Bound at first registration (R-SEC-5): nobody else may register this daemon id.
    owner_id: Mapped[str | None] = mapped_column(String(36), index=True)
    last_heartbeat_at: Mapped[datetime | None] = mapped_column(TS)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class Runtime(Base):
    __tablename__ = "runtime"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    daemon_id: Mapped[str] = mapped_column(ForeignKey("daemon.id", ondelete="CASCADE"))
    provider: Mapped[str] = mapped_column(String(100))
    version: Mapped[str | None] = mapped_column(String(500))
    path: Mapped[str | None] = mapped_column(String(4000))
    capabilities: Mapped[list] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)

    __table_args__ = (UniqueConstraint("daemon_id", "provider", name="uq_runtime_provider"),)


class Task(Base):
    __tablename__ = "task"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    issue_id: Mapped[str] = mapped_column(ForeignKey("issue.id", ondelete="CASCADE"), index=True)
    agent_id: Mapped[str] = mapped_column(ForeignKey("agent.id", ondelete="CASCADE"))
    project_id: Mapped[str | None] = mapped_column(String(36))
    status: Mapped[str] = mapped_column(String(30), default="queued")
    wait_reason: Mapped[str | None] = mapped_column(Text)
    failure_reason: Mapped[str | None] = mapped_column(Text)
    branch_name: Mapped[str | None] = mapped_column(String(500))
    result: Mapped[str | None] = mapped_column(Text)
    session_id: Mapped[str | None] = mapped_column(String(2000))
    # What this task is asked beyond its issue: a follow-up request (a comment that mentioned
    # the agent, R-EX-10). None: the issue's title and body say it all.
    prompt: Mapped[str | None] = mapped_column(Text)
    # Follow-up requests that arrived while this task was under way; queued as the agent's next
    # task on the issue when this one ends (unless it was cancelled).
    pending_prompt: Mapped[str | None] = mapped_column(Text)
    daemon_id: Mapped[str | None] = mapped_column(String(36), index=True)
    runtime_id: Mapped[str | None] = mapped_column(String(36))
    # Snapshot of the project's resources as its daemon was given them, taken when the task is
    # claimed (only that daemon's rows, R-RES-8); later resource changes never rewrite it (R-RES-7).
    context: Mapped[dict | None] = mapped_column(JSON)
    # "<agent_id>:<issue_id>" while active, NULL when finished: one active task per pair.
    active_key: Mapped[str | None] = mapped_column(String(80), unique=True)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    #: A person's answers to the agent's permission questions: {request_id: {option_id, by}}
    #: (service/permissions.py); the daemon reads them from the task (migration 0017).
    permission_answers: Mapped[dict | None] = mapped_column(JSON)
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    lease_expires_at: Mapped[datetime | None] = mapped_column(TS)
    message_seq: Mapped[int] = mapped_column(Integer, default=0)
    # The agent's work as the daemon found it at the end: where the branch is, its baseline,
    # files changed and the diff (capped), so the task page can show it without the daemon.
    review: Mapped[dict | None] = mapped_column(JSON)
    # The issue's status before this run moved it to in_progress, to go back to if it fails.
    issue_status_before: Mapped[str | None] = mapped_column(String(30))
    #: The pull request (tracked forge branch) this task continues: its run starts from that
    #: branch's head and its work lands on the same branch (issue 22 §2, §5). None: a new branch.
    pull_request_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    dispatched_at: Mapped[datetime | None] = mapped_column(TS)
    started_at: Mapped[datetime | None] = mapped_column(TS)
    finished_at: Mapped[datetime | None] = mapped_column(TS)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow)

    __table_args__ = (
        Index("ix_task_status_created", "status", "created_at"),
        # A claim's order within a workspace: it walks this and stops at the first task it can take.
        Index("ix_task_queue_order", "workspace_id", "status", "created_at", "id"),
        # Claims count each agent's held tasks per candidate: without this it is a scan per row.
        Index("ix_task_agent_status", "agent_id", "status"),
        # The runs lists, newest first a page at a time (service/runlists.py, migration 0028).
        Index("ix_task_workspace_created", "workspace_id", "created_at", "id"),
        Index("ix_task_agent_created", "agent_id", "created_at"),
        Index("ix_task_daemon_created", "daemon_id", "created_at"),
    )


#: A task row as the claim and the finish statements return it: every column but the two JSON
#: documents, which their callers never read from it and which PostgreSQL would send back and the
#: driver parse on every claim and finish (a review may be 1.5 MB).
TASK_ROW_COLUMNS = tuple(c for c in Task.__table__.c if c.name not in ("context", "review"))


class TaskMessage(Base):
    __tablename__ = "task_message"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    task_id: Mapped[str] = mapped_column(ForeignKey("task.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(20))  # text | thinking | tool_use | tool_result | error | system
    content: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)

    __table_args__ = (UniqueConstraint("task_id", "seq", name="uq_task_message_seq"),)



class ForgeConnection(Base):
    """A workspace's account on a forge (issue 22 §1). The credential and the webhook secret are
    stored sealed (service/secretbox.py); only their last four characters are ever shown."""

    __tablename__ = "forge_connection"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(20))  # github | gitlab | gitea | forgejo (forges.registry)
    base_url: Mapped[str] = mapped_column(String(2000))
    api_url: Mapped[str] = mapped_column(String(2000))
    #: Lower-case host[:port] of base_url: how a repository URL finds its connection.
    host: Mapped[str] = mapped_column(String(500), index=True)
    credential_sealed: Mapped[str] = mapped_column(Text)
    credential_last4: Mapped[str] = mapped_column(String(8))
    webhook_secret_sealed: Mapped[str] = mapped_column(Text)
    #: Members (not only owners and admins) may merge through this connection (§7).
    members_may_merge: Mapped[bool] = mapped_column(Boolean, default=False)
    created_by: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow)

    __table_args__ = (UniqueConstraint("workspace_id", "name", name="uq_forge_connection_name"),)


#: A tracked branch's states: pushed (no PR yet), then the PR's own, or discarded by a person.
PULL_REQUEST_STATES = ("pushed", "open", "draft", "merged", "closed", "discarded")


class PullRequest(Base):
    """An issue's branch on a forge and its pull/merge request (issue 22 §2–§6): one row per
    (issue, connection, repository, branch); `number` is set once the PR is opened."""

    __tablename__ = "pull_request"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"), index=True)
    issue_id: Mapped[str] = mapped_column(ForeignKey("issue.id", ondelete="CASCADE"), index=True)
    agent_id: Mapped[str | None] = mapped_column(String(36))
    #: The last task whose work was pushed to the branch.
    task_id: Mapped[str | None] = mapped_column(String(36), index=True)
    connection_id: Mapped[str] = mapped_column(ForeignKey("forge_connection.id", ondelete="CASCADE"), index=True)
    repo_path: Mapped[str] = mapped_column(String(1000))
    repo_url: Mapped[str] = mapped_column(String(2000))
    branch: Mapped[str] = mapped_column(String(500))
    base_branch: Mapped[str | None] = mapped_column(String(500))
    number: Mapped[int | None] = mapped_column(Integer)
    url: Mapped[str | None] = mapped_column(String(2000))
    state: Mapped[str] = mapped_column(String(20), default="pushed")
    head_sha: Mapped[str | None] = mapped_column(String(64))
    review_state: Mapped[str] = mapped_column(String(30), default="none")
    check_state: Mapped[str] = mapped_column(String(20), default="none")
    checks: Mapped[list | None] = mapped_column(JSON, default=list)
    #: Automatic follow-ups queued for this PR so far (bounded by the project's max_followups).
    followups: Mapped[int] = mapped_column(Integer, default=0)
    #: Why it waits for a person (the bound was reached, a merge was refused), shown on the pages.
    waiting_reason: Mapped[str | None] = mapped_column(Text)
    merged_by_user_id: Mapped[str | None] = mapped_column(String(36))
    merged_by: Mapped[str | None] = mapped_column(String(500))
    merged_at: Mapped[datetime | None] = mapped_column(TS)
    merge_method: Mapped[str | None] = mapped_column(String(20))
    #: The issue's status before its PR moved it, to return to when the PR closes unmerged.
    issue_status_before: Mapped[str | None] = mapped_column(String(30))
    #: Conditional-request validators of the last poll (ETag / Last-Modified per URL).
    poll_state: Mapped[dict | None] = mapped_column(JSON)
    polled_at: Mapped[datetime | None] = mapped_column(TS)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow)

    __table_args__ = (
        UniqueConstraint("issue_id", "connection_id", "repo_path", "branch", name="uq_pull_request_branch"),
        Index("ix_pull_request_repo_number", "connection_id", "repo_path", "number"),
    )


class ForgeDelivery(Base):
    """A webhook delivery already taken (issue 22 §4): a replayed delivery id changes nothing."""

    __tablename__ = "forge_delivery"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    connection_id: Mapped[str] = mapped_column(ForeignKey("forge_connection.id", ondelete="CASCADE"))
    delivery_id: Mapped[str] = mapped_column(String(200))
    event: Mapped[str | None] = mapped_column(String(100))
    received_at: Mapped[datetime] = mapped_column(TS, default=utcnow)

    __table_args__ = (UniqueConstraint("connection_id", "delivery_id", name="uq_forge_delivery"),)


class EnvVar(Base):
    """A variable an agent's runs get in their environment (issue 28 §2): the agent's own
    (`agent_id` set, `scope` its id) or a workspace secret (`agent_id` NULL, `scope` "workspace")
    that owners and admins grant to agents by name. The value is stored sealed
    (service/secretbox.py); a secret is write-only: only its name and last four are ever shown."""

    __tablename__ = "env_var"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"), index=True)
    agent_id: Mapped[str | None] = mapped_column(ForeignKey("agent.id", ondelete="CASCADE"), index=True)
    scope: Mapped[str] = mapped_column(String(36))
    name: Mapped[str] = mapped_column(String(128))
    secret: Mapped[bool] = mapped_column(Boolean, default=True)
    value_sealed: Mapped[str] = mapped_column(Text)
    last4: Mapped[str] = mapped_column(String(8))
    created_by: Mapped[str | None] = mapped_column(String(36))
    updated_by: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow)

    __table_args__ = (UniqueConstraint("workspace_id", "scope", "name", name="uq_env_var_name"),)


class EnvGrant(Base):
    """A workspace secret given to an agent's runs (by an owner or admin)."""

    __tablename__ = "env_grant"
    agent_id: Mapped[str] = mapped_column(ForeignKey("agent.id", ondelete="CASCADE"), primary_key=True)
    env_var_id: Mapped[str] = mapped_column(ForeignKey("env_var.id", ondelete="CASCADE"), primary_key=True, index=True)
    created_by: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)


class AuditEvent(Base):
    """One security-relevant event (issue 28 §4), appended by service/audit.py and never changed:
    who (`actor_id`, their name then), what (`action`, `target`, `detail` — never a secret), when,
    from which address. `workspace_id` NULL: an event of a person, not of one workspace (a sign-in)."""

    __tablename__ = "audit_event"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(TS, default=utcnow, index=True)
    workspace_id: Mapped[str | None] = mapped_column(String(36))
    actor_id: Mapped[str | None] = mapped_column(String(36))
    actor_name: Mapped[str | None] = mapped_column(String(500))
    action: Mapped[str] = mapped_column(String(60))
    target: Mapped[str | None] = mapped_column(String(500))
    detail: Mapped[dict | None] = mapped_column(JSON)
    address: Mapped[str | None] = mapped_column(String(100))

    __table_args__ = (
        Index("ix_audit_event_workspace_id", "workspace_id", "id"),
        Index("ix_audit_event_actor_id", "actor_id", "id"),
    )
