"""bean: the hmans/beans fields, so a bean round-trips (issue 24 item 4, R-HAR-11). `key` is the
beans id, unique per issue (existing beans get `px-<first 8 of id>`, the id their exports carried);
two beans may now share a title (the title is an index, no longer unique); type, priority, tags,
parent (a bean id), blocking, blocked_by, sort_order (beans' `order`), draft, file_path.

Revision ID: 0019
Revises: 0018
"""
import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

_BEAN = sa.table("bean", sa.column("id", sa.String), sa.column("key", sa.String))


def upgrade() -> None:
    with op.batch_alter_table("bean") as batch:
        batch.add_column(sa.Column("key", sa.String(100), nullable=True))
        batch.add_column(sa.Column("draft", sa.Boolean(), server_default=sa.false(), nullable=False))
        batch.add_column(sa.Column("type", sa.String(40), nullable=True))
        batch.add_column(sa.Column("priority", sa.String(40), nullable=True))
        batch.add_column(sa.Column("tags", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("parent", sa.String(100), nullable=True))
        batch.add_column(sa.Column("blocking", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("blocked_by", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("sort_order", sa.String(100), nullable=True))
        batch.add_column(sa.Column("file_path", sa.String(500), nullable=True))
    conn = op.get_bind()
    for (bean_id,) in conn.execute(sa.select(_BEAN.c.id)).all():
        conn.execute(_BEAN.update().where(_BEAN.c.id == bean_id).values(key=f"px-{bean_id[:8]}"))
    with op.batch_alter_table("bean") as batch:
        batch.alter_column("key", existing_type=sa.String(100), nullable=False)
        batch.drop_constraint("uq_bean_issue_title", type_="unique")
        batch.create_unique_constraint("uq_bean_issue_key", ["issue_id", "key"])
        batch.create_index("ix_bean_issue_title", ["issue_id", "title"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("bean") as batch:
        batch.drop_index("ix_bean_issue_title")
        batch.drop_constraint("uq_bean_issue_key", type_="unique")
        batch.create_unique_constraint("uq_bean_issue_title", ["issue_id", "title"])
        for col in ("file_path", "sort_order", "blocked_by", "blocking", "parent", "tags", "priority", "type",
                    "draft", "key"):
            batch.drop_column(col)
