"""Tables of the workflows (SPEC §10): workflow instances and their history, role bindings,
beans, the interaction state per agent session, classifications and task handoffs.
Migration 0007 mirrors this file."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from .schema import TS, Base, new_id, utcnow


class WorkflowInstance(Base):
    """One per (issue, process); the id is derived from both so starting twice is one (R-HAR-3)."""

    __tablename__ = "workflow_instance"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    issue_id: Mapped[str] = mapped_column(ForeignKey("issue.id", ondelete="CASCADE"), index=True)
    process_id: Mapped[str] = mapped_column(String(200))
    diagram: Mapped[str] = mapped_column(String(300))
    status: Mapped[str] = mapped_column(String(20), default="running")  # running | suspended | completed | failed | stopped (a person stopped it)
    state: Mapped[str] = mapped_column(Text)          # SpiffWorkflow's serialised workflow
    facts: Mapped[dict] = mapped_column(JSON, default=dict)
    step_count: Mapped[int] = mapped_column(Integer, default=0)
    version: Mapped[int] = mapped_column(Integer, default=1)  # bumped on every change (etag)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow)

    __table_args__ = (UniqueConstraint("issue_id", "process_id", name="uq_workflow_instance_issue_process"),)


class WorkflowStep(Base):
    """The history: every step taken, and every attempt a strict policy refused (R-HAR-5)."""

    __tablename__ = "workflow_step"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    instance_id: Mapped[str] = mapped_column(ForeignKey("workflow_instance.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(10), default="done")  # done | refused | failed (the engine overran its budget)
    process_id: Mapped[str] = mapped_column(String(200))
    diagram: Mapped[str] = mapped_column(String(300))
    diagram_digest: Mapped[str] = mapped_column(String(64))
    node_id: Mapped[str] = mapped_column(String(200))
    node_name: Mapped[str] = mapped_column(String(500), default="")
    kind: Mapped[str] = mapped_column(String(10))  # task | gate
    role: Mapped[str | None] = mapped_column(String(100))
    actor_type: Mapped[str | None] = mapped_column(String(10))  # agent | person
    actor_id: Mapped[str | None] = mapped_column(String(36))
    actor_name: Mapped[str | None] = mapped_column(String(200))
    actor_roles: Mapped[list] = mapped_column(JSON, default=list)  # the roles it held when it acted
    task_id: Mapped[str | None] = mapped_column(String(36))
    outcome: Mapped[str | None] = mapped_column(String(200))
    reason: Mapped[str | None] = mapped_column(Text)
    computed: Mapped[bool] = mapped_column(Boolean, default=False)
    facts: Mapped[dict] = mapped_column(JSON, default=dict)
    # fact -> system (computed by Predictor X at the pass) | asserted (by this row's actor); migration 0018
    fact_sources: Mapped[dict | None] = mapped_column(JSON, default=dict)
    produced: Mapped[dict] = mapped_column(JSON, default=dict)
    verdict: Mapped[str] = mapped_column(String(10), default="none")  # permit | deny | unknown | none
    enforcement: Mapped[str] = mapped_column(String(10), default="advisory")
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    # a refused row stands for this many attempts: repeats of the same refusal are counted on it
    # (service/workflow_instances.record_refusal); migration 0010
    attempts: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    last_attempt_at: Mapped[datetime | None] = mapped_column(TS)

    __table_args__ = (UniqueConstraint("instance_id", "seq", name="uq_workflow_step_seq"),)


class RoleBinding(Base):
    """Who holds a lane's role in a project: agents (platform tasks) or members (people lanes)."""

    __tablename__ = "role_binding"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    project_id: Mapped[str] = mapped_column(ForeignKey("project.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(100))
    principal_type: Mapped[str] = mapped_column(String(10))  # agent | member
    principal_id: Mapped[str] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)

    __table_args__ = (UniqueConstraint("project_id", "role", "principal_type", "principal_id",
                                       name="uq_role_binding"),)


class Bean(Base):
    """A PR-sized work item under an issue (R-HAR-6): an hmans/beans bean (R-HAR-11). `key` is its
    beans id (`beans-18db`, or `px-<8>` for one made here), unique per issue; two beans may share a
    title. The beans fields round-trip: type, priority, tags, parent (a bean id), blocking,
    blocked_by, order, draft, the file's path under `.beans/`, the times; migration 0019."""

    __tablename__ = "bean"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    issue_id: Mapped[str] = mapped_column(ForeignKey("issue.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(100))
    title: Mapped[str] = mapped_column(String(500))
    body: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(20), default="created")  # created | in-progress | resolved | scrapped
    draft: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())  # beans' draft: created
    type: Mapped[str | None] = mapped_column(String(40))  # None: the file had none (beans reads it as task)
    priority: Mapped[str | None] = mapped_column(String(40))  # None: the file had none (normal)
    tags: Mapped[list | None] = mapped_column(JSON)
    parent: Mapped[str | None] = mapped_column(String(100))  # a bean id, never an issue
    blocking: Mapped[list | None] = mapped_column(JSON)
    blocked_by: Mapped[list | None] = mapped_column(JSON)
    sort_order: Mapped[str | None] = mapped_column(String(100))  # beans' `order` (a fractional index)
    file_path: Mapped[str | None] = mapped_column(String(500))  # where its file was under .beans/
    notes: Mapped[list] = mapped_column(JSON, default=list)
    scrap_reason: Mapped[str | None] = mapped_column(Text)
    claimed_by: Mapped[str | None] = mapped_column(String(200))
    # the workflow instance whose step last named it (service/bean_rules.py): while that instance
    # is not completed, the bean's status changes only through its steps; migration 0015
    instance_id: Mapped[str | None] = mapped_column(String(36), index=True)
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow)

    __table_args__ = (UniqueConstraint("issue_id", "key", name="uq_bean_issue_key"),
                      Index("ix_bean_issue_title", "issue_id", "title"))


class InteractionState(Base):
    """Per agent session on an issue: idle or workflow, one active instance, a LIFO stack (R-HAR-1)."""

    __tablename__ = "interaction_state"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    issue_id: Mapped[str] = mapped_column(ForeignKey("issue.id", ondelete="CASCADE"))
    agent_id: Mapped[str] = mapped_column(String(36))
    state: Mapped[str] = mapped_column(String(10), default="idle")  # idle | workflow
    active_instance_id: Mapped[str | None] = mapped_column(String(36))
    stack: Mapped[list] = mapped_column(JSON, default=list)  # [{instance, process, activity, at}], top last
    # scenario 3 of the seed: a platform workflow asked to start while content work is active — the
    # question "suspend, or file a bean?" waits here for its answer (migration 0018)
    pending: Mapped[dict | None] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow)

    __table_args__ = (UniqueConstraint("issue_id", "agent_id", name="uq_interaction_state"),)


class Classification(Base):
    """A request's category (R-HAR-2): by the table, or a recorded judgement with its reason."""

    __tablename__ = "classification"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"))
    issue_id: Mapped[str] = mapped_column(ForeignKey("issue.id", ondelete="CASCADE"), index=True)
    comment_id: Mapped[str | None] = mapped_column(String(36))
    category: Mapped[str | None] = mapped_column(String(40))  # None while a judgement is pending
    method: Mapped[str] = mapped_column(String(10))  # table | judgement | pending
    rule: Mapped[str | None] = mapped_column(String(100))
    reason: Mapped[str | None] = mapped_column(Text)
    decided_by: Mapped[str | None] = mapped_column(String(200))
    instance_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)
    # pending: what to ask, in the request's language, and the categories it chooses between (0020)
    question: Mapped[str | None] = mapped_column(Text)
    candidates: Mapped[list | None] = mapped_column(JSON)


class ClassificationRules(Base):
    """A workspace's own classification rules (a TOML rule file, workflows/classify_table.py), added
    to the shipped ones when its requests are classified (0020)."""

    __tablename__ = "classification_rules"
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspace.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    source: Mapped[str] = mapped_column(Text)
    updated_by: Mapped[str | None] = mapped_column(String(200))
    updated_at: Mapped[datetime] = mapped_column(TS, default=utcnow, onupdate=utcnow)

    __table_args__ = (UniqueConstraint("workspace_id", "name", name="uq_classification_rules_name"),)


class TaskHandoff(Base):
    """What a task leaves for the next task on its issue (R-HAR-7)."""

    __tablename__ = "task_handoff"
    task_id: Mapped[str] = mapped_column(ForeignKey("task.id", ondelete="CASCADE"), primary_key=True)
    issue_id: Mapped[str] = mapped_column(ForeignKey("issue.id", ondelete="CASCADE"))
    agent_id: Mapped[str] = mapped_column(String(36))
    content: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(TS, default=utcnow)

    __table_args__ = (Index("ix_task_handoff_issue_created", "issue_id", "created_at"),)
