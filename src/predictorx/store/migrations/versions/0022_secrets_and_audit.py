"""Per-agent environment and secrets (env_var, env_grant, agent.env_count), MCP servers
(agent.mcp_servers) and the audit log
(audit_event), issue 28 §2 and §4. An audit row is never changed: an UPDATE is refused by a
trigger on both backends (service/audit.py appends; only its retention deletes old rows).

Revision ID: 0022
Revises: 0021
"""
import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("agent") as batch:
        batch.add_column(sa.Column("env_count", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("mcp_servers", sa.JSON(), nullable=True))
    op.create_table(
        "env_var",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("workspace_id", sa.String(36), sa.ForeignKey("workspace.id", ondelete="CASCADE"), nullable=False),
        sa.Column("agent_id", sa.String(36), sa.ForeignKey("agent.id", ondelete="CASCADE"), nullable=True),
        sa.Column("scope", sa.String(36), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("secret", sa.Boolean(), nullable=False),
        sa.Column("value_sealed", sa.Text(), nullable=False),
        sa.Column("last4", sa.String(8), nullable=False),
        sa.Column("created_by", sa.String(36)),
        sa.Column("updated_by", sa.String(36)),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.UniqueConstraint("workspace_id", "scope", "name", name="uq_env_var_name"),
    )
    op.create_index("ix_env_var_workspace_id", "env_var", ["workspace_id"])
    op.create_index("ix_env_var_agent_id", "env_var", ["agent_id"])
    op.create_table(
        "env_grant",
        sa.Column("agent_id", sa.String(36), sa.ForeignKey("agent.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("env_var_id", sa.String(36), sa.ForeignKey("env_var.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("created_by", sa.String(36)),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index("ix_env_grant_env_var_id", "env_grant", ["env_var_id"])
    op.create_table(
        "audit_event",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("at", TS, nullable=False),
        sa.Column("workspace_id", sa.String(36)),
        sa.Column("actor_id", sa.String(36)),
        sa.Column("actor_name", sa.String(500)),
        sa.Column("action", sa.String(60), nullable=False),
        sa.Column("target", sa.String(500)),
        sa.Column("detail", sa.JSON()),
        sa.Column("address", sa.String(100)),
    )
    op.create_index("ix_audit_event_at", "audit_event", ["at"])
    op.create_index("ix_audit_event_workspace_id", "audit_event", ["workspace_id", "id"])
    op.create_index("ix_audit_event_actor_id", "audit_event", ["actor_id", "id"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE FUNCTION audit_event_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ "
                   "BEGIN RAISE EXCEPTION 'audit_event is append-only'; END $$")
        op.execute("CREATE TRIGGER audit_event_no_update BEFORE UPDATE ON audit_event "
                   "FOR EACH ROW EXECUTE FUNCTION audit_event_append_only()")
    else:
        op.execute("CREATE TRIGGER audit_event_no_update BEFORE UPDATE ON audit_event "
                   "BEGIN SELECT RAISE(ABORT, 'audit_event is append-only'); END")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS audit_event_no_update ON audit_event")
        op.execute("DROP FUNCTION IF EXISTS audit_event_append_only()")
    op.drop_table("audit_event")
    op.drop_table("env_grant")
    op.drop_table("env_var")
    with op.batch_alter_table("agent") as batch:
        batch.drop_column("mcp_servers")
        batch.drop_column("env_count")
