"""Full-text search over issues and their comments (issue 26 §3), one index per database:

- SQLite: an FTS5 table `search_fts`, one row per issue (title + description) and per comment,
  kept by triggers on `issue` and `comment`; `search_doc` maps its rowids to issues and comments
  (an issue's own rowid is not stable across VACUUM, so the index cannot borrow it).
- PostgreSQL: GIN indexes on `to_tsvector('simple', …)` of the same texts; no triggers needed.

Both use the 'simple' treatment (lower case, no stemming, no stop words) and match every word
of the query as a prefix, so "flak test" finds "Flaky tests". Migration 0026 runs the DDL here.
These tables and indexes are not models: `include_name` keeps autogenerate away from them.
"""

from __future__ import annotations

import re

from sqlalchemy import String, TextualSelect, column, text

#: At most this many words of a query count (a pasted paragraph stays a cheap query).
MAX_TERMS = 8
_WORD = re.compile(r"[^\W_]+")

SQLITE_CREATE = (
    "CREATE TABLE search_doc (doc INTEGER PRIMARY KEY, issue_id VARCHAR(36) NOT NULL, comment_id VARCHAR(36))",
    "CREATE INDEX ix_search_doc_issue ON search_doc (issue_id)",
    "CREATE UNIQUE INDEX ix_search_doc_comment ON search_doc (comment_id)",
    "CREATE VIRTUAL TABLE search_fts USING fts5(text)",
    """CREATE TRIGGER search_issue_ai AFTER INSERT ON issue BEGIN
         INSERT INTO search_doc (issue_id, comment_id) VALUES (new.id, NULL);
         INSERT INTO search_fts (rowid, text) VALUES (last_insert_rowid(), new.title || ' ' || coalesce(new.body, ''));
       END""",
    """CREATE TRIGGER search_issue_au AFTER UPDATE OF title, body ON issue BEGIN
         UPDATE search_fts SET text = new.title || ' ' || coalesce(new.body, '')
          WHERE rowid = (SELECT doc FROM search_doc WHERE issue_id = new.id AND comment_id IS NULL);
       END""",
    """CREATE TRIGGER search_issue_ad AFTER DELETE ON issue BEGIN
         DELETE FROM search_fts WHERE rowid IN (SELECT doc FROM search_doc WHERE issue_id = old.id);
         DELETE FROM search_doc WHERE issue_id = old.id;
       END""",
    """CREATE TRIGGER search_comment_ai AFTER INSERT ON comment BEGIN
         INSERT INTO search_doc (issue_id, comment_id) VALUES (new.issue_id, new.id);
         INSERT INTO search_fts (rowid, text) VALUES (last_insert_rowid(), new.body);
       END""",
    """CREATE TRIGGER search_comment_au AFTER UPDATE OF body ON comment BEGIN
         UPDATE search_fts SET text = new.body WHERE rowid = (SELECT doc FROM search_doc WHERE comment_id = new.id);
       END""",
    """CREATE TRIGGER search_comment_ad AFTER DELETE ON comment BEGIN
         DELETE FROM search_fts WHERE rowid = (SELECT doc FROM search_doc WHERE comment_id = old.id);
         DELETE FROM search_doc WHERE comment_id = old.id;
       END""",
    # What is already there: issues and comments written before this index existed.
    "INSERT INTO search_doc (issue_id, comment_id) SELECT id, NULL FROM issue",
    "INSERT INTO search_doc (issue_id, comment_id) SELECT issue_id, id FROM comment",
    """INSERT INTO search_fts (rowid, text) SELECT d.doc, i.title || ' ' || coalesce(i.body, '')
         FROM search_doc d JOIN issue i ON i.id = d.issue_id WHERE d.comment_id IS NULL""",
    "INSERT INTO search_fts (rowid, text) SELECT d.doc, c.body FROM search_doc d JOIN comment c ON c.id = d.comment_id",
)
SQLITE_TRIGGERS = ("search_issue_ai", "search_issue_au", "search_issue_ad",
                   "search_comment_ai", "search_comment_au", "search_comment_ad")
SQLITE_DROP = tuple(f"DROP TRIGGER IF EXISTS {t}" for t in SQLITE_TRIGGERS) + (
    "DROP TABLE IF EXISTS search_fts", "DROP TABLE IF EXISTS search_doc")

_ISSUE_TEXT = "to_tsvector('simple', title || ' ' || body)"
_COMMENT_TEXT = "to_tsvector('simple', body)"
POSTGRES_CREATE = (
    f"CREATE INDEX ix_issue_fulltext ON issue USING gin ({_ISSUE_TEXT})",
    f"CREATE INDEX ix_comment_fulltext ON comment USING gin ({_COMMENT_TEXT})",
)
POSTGRES_DROP = ("DROP INDEX IF EXISTS ix_issue_fulltext", "DROP INDEX IF EXISTS ix_comment_fulltext")

_NOT_MODELS = {"search_doc", "search_fts", "ix_issue_fulltext", "ix_comment_fulltext", "ix_search_doc_issue",
               "ix_search_doc_comment"}


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Alembic's filter: the index's own tables (FTS5's shadow tables too) are not models."""
    return not (name in _NOT_MODELS or (name or "").startswith("search_fts_"))


def terms(query: str) -> list[str]:
    """The words of a search, lower case: letters and digits only, so nothing in them is syntax."""
    return [w.lower() for w in _WORD.findall(query)][:MAX_TERMS]


def matching_issue_ids(dialect: str, words: list[str]) -> TextualSelect:
    """SELECT of the ids (`issue_id`, each once) of issues whose text, or one of whose comments,
    has every word (as a prefix). The caller joins it to `issue` and narrows it to a workspace."""
    if dialect == "postgresql":
        query = " & ".join(f"{w}:*" for w in words)
        return text(f"SELECT id AS issue_id FROM issue WHERE {_ISSUE_TEXT} @@ to_tsquery('simple', :fts_query) "
                    f"UNION SELECT issue_id FROM comment WHERE {_COMMENT_TEXT} @@ to_tsquery('simple', :fts_query)"
                    ).bindparams(fts_query=query).columns(column("issue_id", String))
    query = " ".join(f'"{w}"*' for w in words)
    return text("SELECT DISTINCT d.issue_id FROM search_fts JOIN search_doc d ON d.doc = search_fts.rowid "
                "WHERE search_fts MATCH :fts_query").bindparams(fts_query=query).columns(column("issue_id", String))
