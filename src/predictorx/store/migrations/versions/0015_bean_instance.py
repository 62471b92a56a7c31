"""bean.instance_id: the workflow instance whose step named the bean; while it runs, the bean's
status changes only through its steps (issue 29 finding 6). Filled from the recorded steps that
named a bean, so beans of instances that predate it are governed (and checked by `prov qaqc`) too.

Revision ID: 0015
Revises: 0013
"""
import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_STEP = sa.table("workflow_step", sa.column("instance_id", sa.String), sa.column("seq", sa.Integer),
                 sa.column("status", sa.String), sa.column("produced", sa.JSON), sa.column("created_at", sa.DateTime))
_BEAN = sa.table("bean", sa.column("id", sa.String), sa.column("instance_id", sa.String))


def upgrade() -> None:
    with op.batch_alter_table("bean") as batch:
        batch.add_column(sa.Column("instance_id", sa.String(36), nullable=True))
        batch.create_index("ix_bean_instance_id", ["instance_id"], unique=False)
    conn = op.get_bind()
    bean_ids = {r[0] for r in conn.execute(sa.select(_BEAN.c.id))}
    latest: dict[str, str] = {}  # the last step that named a bean wins
    rows = conn.execute(sa.select(_STEP.c.instance_id, _STEP.c.produced).where(_STEP.c.status == "done")
                        .order_by(_STEP.c.created_at, _STEP.c.instance_id, _STEP.c.seq))
    for instance_id, produced in rows:
        bean = (produced or {}).get("bean") if isinstance(produced, dict) else None
        if bean in bean_ids:
            latest[bean] = instance_id
    for bean, instance_id in latest.items():
        conn.execute(_BEAN.update().where(_BEAN.c.id == bean).values(instance_id=instance_id))


def downgrade() -> None:
    with op.batch_alter_table("bean") as batch:
        batch.drop_index("ix_bean_instance_id")
        batch.drop_column("instance_id")
