"""comment.body_html: a comment's page HTML, rendered once when it is written, so an issue page
pastes stored HTML instead of rendering Markdown on every view (issue 29 §5). Existing comments
are rendered here, in batches, with the same bounded renderer.

Revision ID: 0014
Revises: 0013
"""
import sqlalchemy as sa
from alembic import op

from predictorx import richtext

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

BATCH = 200


def upgrade() -> None:
    with op.batch_alter_table("comment") as batch:
        batch.add_column(sa.Column("body_html", sa.Text(), nullable=True))
    _backfill(op.get_bind())


def _backfill(conn: sa.Connection) -> None:
    comment = sa.table("comment", sa.column("id"), sa.column("issue_id"), sa.column("body"), sa.column("body_html"))
    issue = sa.table("issue", sa.column("id"), sa.column("workspace_id"))
    agent = sa.table("agent", sa.column("workspace_id"), sa.column("name"), sa.column("archived_at"))
    names: dict[str, list[str]] = {}
    for ws, name in conn.execute(sa.select(agent.c.workspace_id, agent.c.name).where(agent.c.archived_at.is_(None))):
        names.setdefault(ws, []).append(name)
    last = ""
    while True:
        rows = conn.execute(sa.select(comment.c.id, comment.c.body, issue.c.workspace_id)
                            .join(issue, issue.c.id == comment.c.issue_id)
                            .where(comment.c.id > last).order_by(comment.c.id).limit(BATCH)).all()
        if not rows:
            return
        for id_, body, ws in rows:
            conn.execute(comment.update().where(comment.c.id == id_)
                         .values(body_html=richtext.comment_html(body or "", names.get(ws, []))))
        last = rows[-1][0]


def downgrade() -> None:
    with op.batch_alter_table("comment") as batch:
        batch.drop_column("body_html")
