"""workflow_step.fact_sources: for each fact a step read, "system" (computed by Predictor X at the
pass) or "asserted" (given by the step's actor) — issue 24 item 1; interaction_state.pending: the
question "suspend, or file a bean?" waiting for its answer (seed scenario 3, issue 24 item 3)

Revision ID: 0018
Revises: 0017
"""
import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workflow_step") as batch:
        batch.add_column(sa.Column("fact_sources", sa.JSON(), nullable=True))
    with op.batch_alter_table("interaction_state") as batch:
        batch.add_column(sa.Column("pending", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("interaction_state") as batch:
        batch.drop_column("pending")
    with op.batch_alter_table("workflow_step") as batch:
        batch.drop_column("fact_sources")
