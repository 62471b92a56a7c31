"""classification.question and .candidates: what a pending classification asks, in the request's
language, and the categories it chooses between; classification_rules: a workspace's own rule
files added to the shipped table (issue 24 §6)

Revision ID: 0020
Revises: 0019
"""
import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("classification") as batch:
        batch.add_column(sa.Column("question", sa.Text(), nullable=True))
        batch.add_column(sa.Column("candidates", sa.JSON(), nullable=True))
    op.create_table(
        "classification_rules",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("workspace_id", sa.String(36), sa.ForeignKey("workspace.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("updated_by", sa.String(200), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("workspace_id", "name", name="uq_classification_rules_name"),
    )
    with op.batch_alter_table("classification_rules") as batch:
        batch.create_index(batch.f("ix_classification_rules_workspace_id"), ["workspace_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("classification_rules") as batch:
        batch.drop_index(batch.f("ix_classification_rules_workspace_id"))
    op.drop_table("classification_rules")
    with op.batch_alter_table("classification") as batch:
        batch.drop_column("candidates")
        batch.drop_column("question")
