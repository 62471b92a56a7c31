"""Migration 0014 renders every existing comment once (issue 29 §5): after it, no page renders
Markdown for a comment on a view."""

from __future__ import annotations

from sqlalchemy import select

from predictorx import richtext
from predictorx.service import agents, auth, issues
from predictorx.store.db import Database
from predictorx.store.migrate import downgrade, upgrade
from predictorx.store.schema import Comment


def test_existing_comments_are_rendered_by_the_migration(empty_database_url):
    db = Database(empty_database_url)
    upgrade(db.engine)
    with db.write() as s:
        _token, ws, user = auth.bootstrap_owner(s)
        agents.create_agent(s, ws.id, owner_id=user.id, name="claude-1", provider="claude")
        issue = issues.create_issue(s, ws.id, user.id, title="Old talk")
        short = "Hello **there** @claude-1"
        long = "| a | b |\n|---|---|\n" + "| x | y |\n" * 5_000
        for body in (short, long):
            issues.add_comment(s, issue, body=body, author_type="member", author_id=user.id)
    downgrade(db.engine, "0013")  # comments as they were before: no stored HTML
    upgrade(db.engine)
    with db.read() as s:
        stored = {c.body: c.body_html for c in s.scalars(select(Comment))}
    assert '<strong>there</strong>' in stored[short] and '<span class="mention">@claude-1</span>' in stored[short]
    assert richtext.is_preview(stored[long]) and len(stored[long]) < 2 * richtext.PREVIEW_CHARS
    db.dispose()
