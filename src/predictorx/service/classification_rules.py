"""A workspace's own classification rules (issue 24 §6): TOML rule files in the format of
workflows/classify_table.py, stored per workspace and added after the shipped English and Russian
files — a workspace adds a language, a term or a signal, or re-weighs a shipped signal by its id.
A file is checked by building the whole table with it before it is stored, so a broken file is
refused with the sentence that names the entry, and the table in use never breaks.

`predictorx classify-rules add|list|show|remove` and /api/classification/rules call these."""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..store.workflow_schema import ClassificationRules
from ..workflows.classify import shipped_table
from ..workflows.classify_table import RulesError, Table, build, parse, shipped_sources
from .errors import Invalid, NotFound

MAX_SOURCE = 200_000
MAX_FILES = 20
MAX_WORKSPACE_TERMS = 5000
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_CACHE: OrderedDict[tuple, Table] = OrderedDict()
_CACHE_SIZE = 32
_LOCK = threading.Lock()


def as_dict(r: ClassificationRules, *, source: bool = False) -> dict[str, Any]:
    d = {"name": r.name, "updated_by": r.updated_by, "updated_at": r.updated_at.isoformat(),
         "bytes": len(r.source.encode("utf-8"))}
    return d | ({"source": r.source} if source else {})


def _rows(session: Session, workspace_id: str) -> list[ClassificationRules]:
    return list(session.scalars(select(ClassificationRules).where(ClassificationRules.workspace_id == workspace_id)
                                .order_by(ClassificationRules.name)))


def _build(files: list[tuple[str, str]]) -> Table:
    return build(shipped_sources() + [(f"workspace/{n}", src) for n, src in files])


def table_for(session: Session, workspace_id: str) -> Table:
    """The shipped table plus the workspace's files (by name), compiled once per content of them."""
    rows = _rows(session, workspace_id)
    if not rows:
        return shipped_table()
    key = tuple((r.name, hashlib.sha256(r.source.encode("utf-8")).hexdigest()) for r in rows)
    with _LOCK:
        table = _CACHE.get(key)
        if table is not None:
            _CACHE.move_to_end(key)
            return table
    try:
        table = _build([(r.name, r.source) for r in rows])
    except RulesError:  # stored before a shipped change made it invalid: the shipped table stands
        table = shipped_table()
    with _LOCK:
        _CACHE[key] = table
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return table


def list_rules(session: Session, workspace_id: str) -> list[dict[str, Any]]:
    return [as_dict(r) for r in _rows(session, workspace_id)]


def get_rules(session: Session, workspace_id: str, name: str) -> dict[str, Any]:
    return as_dict(_one(session, workspace_id, name), source=True)


def _one(session: Session, workspace_id: str, name: str) -> ClassificationRules:
    row = session.scalar(select(ClassificationRules).where(ClassificationRules.workspace_id == workspace_id,
                                                           ClassificationRules.name == name))
    if row is None:
        raise NotFound(f"this workspace has no classification rules named {name!r}")
    return row


def put_rules(session: Session, workspace_id: str, name: str, source: str, by: str) -> dict[str, Any]:
    """Add or replace the workspace's rule file NAME; refused with the reason if the table it makes
    does not build."""
    if not _NAME.match(name or ""):
        raise Invalid("a rules name is 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit")
    if len(source.encode("utf-8")) > MAX_SOURCE:
        raise Invalid(f"a rules file is at most {MAX_SOURCE // 1000} kB")
    rows = _rows(session, workspace_id)
    others = [(r.name, r.source) for r in rows if r.name != name]
    if len(others) >= MAX_FILES:
        raise Invalid(f"a workspace has at most {MAX_FILES} rules files; replace or remove one")
    try:
        _no_regex(parse(source, name), name)
        _terms_within_bound([parse(src, n) for n, src in others + [(name, source)]])
        _build(others + [(name, source)])
    except RulesError as e:
        raise Invalid(f"the rules do not load: {e}") from None
    row = next((r for r in rows if r.name == name), None)
    if row is None:
        row = ClassificationRules(workspace_id=workspace_id, name=name, source=source, updated_by=by)
        session.add(row)
    else:
        row.source, row.updated_by = source, by
    session.flush()
    return as_dict(row)


def _no_regex(data: dict, name: str) -> None:
    """A workspace's file matches words only: a regular expression of its own could take the server's
    time on every request (catastrophic backtracking); the shipped files' few are reviewed code."""
    for kind in ("signal", "folio"):
        for entry in data.get(kind, []):
            if isinstance(entry, dict) and "regex" in entry:
                raise RulesError(f"{name} {kind} {entry.get('id', '?')}: a workspace's rules use terms (words, "
                                 "phrases, `*` endings), not regex")


def _terms_within_bound(datas: list[dict]) -> None:
    """Each term costs a look on every request of the workspace: their number is bounded."""
    n = sum(len(e.get("terms") or []) for d in datas for kind in ("signal", "folio") for e in d.get(kind, [])
            if isinstance(e, dict) and isinstance(e.get("terms"), list))
    if n > MAX_WORKSPACE_TERMS:
        raise RulesError(f"the workspace's rules have {n} terms; at most {MAX_WORKSPACE_TERMS}")


def remove_rules(session: Session, workspace_id: str, name: str) -> None:
    session.delete(_one(session, workspace_id, name))
    session.flush()
