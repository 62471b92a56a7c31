"""agent.sandbox on by default, and on for every existing agent (issue 29: the sandbox becomes the default)

Existing agents were created when the sandbox was opt-in, so `sandbox = false` on a row almost
always means "never asked", not "turned off": the column cannot tell the two apart. The safe
reading is the one a person who never read the docs gets: every agent is sandboxed from now on,
and its owner turns it off for an agent that needs more (`agent update <name> --no-sandbox`, or
the agent's form), with the warning of what it can then reach. A daemon without bubblewrap says
so at start and fails such runs with the way to install it.

Revision ID: 0012
Revises: 0015 (written as 0012 after 0011; it reached main after 0013–0015, so it follows them: one head)
"""
import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(sa.text("UPDATE agent SET sandbox = :on").bindparams(on=True))
    with op.batch_alter_table("agent") as batch:
        batch.alter_column("sandbox", existing_type=sa.Boolean(), existing_nullable=False, server_default=sa.true())


def downgrade() -> None:
    # Rows keep their value: which agents were off before cannot be known, and on is the safe side.
    with op.batch_alter_table("agent") as batch:
        batch.alter_column("sandbox", existing_type=sa.Boolean(), existing_nullable=False, server_default=sa.false())
