"""An issue's beans as an hmans/beans `.beans/` folder: export and import (R-HAR-6, R-HAR-11).

Export writes each bean as the file beans would write (workflows/beanfile.py), at the path it was
imported from or `<key>--<slug>.md`, with its etag (version) beside it; the bean's journal (notes
other than imports) goes in a marked block at the end of the body, which import leaves out.

Import reads every file on its own and answers per file: `created`, `updated`, `unchanged`, or
`refused` with a sentence (not a bean file, a duplicate id, a stale etag, a status a running
workflow holds). The valid files are imported; `strict` makes it all or nothing. Files are
matched to beans by their beans id (the file name's), never by title. A changed file updates the
bean's fields (version + 1, a journal entry naming the fields); when the caller sends the etags
the folder was exported with, a bean changed here since then is refused, not overwritten.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import flag_modified

from ..store.schema import Issue, new_id, utcnow
from ..store.workflow_schema import Bean
from ..workflows import beanfile
from .bean_rules import governing
from .beans import as_dict, list_beans
from .errors import Conflict, Invalid

# BeanFile attribute → Bean column, for the fields a file carries
_COLUMNS = {"title": "title", "body": "body", "status": "status", "draft": "draft", "type": "type",
            "priority": "priority", "tags": "tags", "parent": "parent", "blocking": "blocking",
            "blocked_by": "blocked_by", "order": "sort_order", "created_at": "created_at",
            "updated_at": "updated_at", "path": "file_path"}
_LISTS = ("tags", "blocking", "blocked_by")


def export(session: Session, issue: Issue) -> dict[str, Any]:
    """{"files": {path under .beans/: text}, "etags": {bean id: etag}}."""
    files, etags = {}, {}
    for bean in list_beans(session, issue):
        d = as_dict(bean)
        journal = [n for n in bean.notes or [] if n.get("op") != "import"]
        path = bean.file_path or beanfile.filename(bean.key, bean.title)
        files[path] = beanfile.dump(d, journal)
        etags[bean.key] = bean.version
    return {"files": files, "etags": etags}


def _parse(files: dict[str, str]) -> tuple[list[beanfile.BeanFile], list[dict[str, Any]]]:
    parsed: list[beanfile.BeanFile] = []
    refused: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for name, text in sorted(files.items(), key=lambda f: (f[0].count("/"), f[0])):  # a file above archive/ wins
        try:
            bf = beanfile.load(text, name)
        except beanfile.BeanFileError as e:
            refused.append({"file": name, "result": "refused", "reason": f"{name} {e}"})
            continue
        if bf.key in seen:
            refused.append({"file": name, "result": "refused",
                            "reason": f"{name} has the bean id {bf.key!r} of {seen[bf.key]} too"})
            continue
        seen[bf.key] = name
        parsed.append(bf)
    return parsed, refused


def _value(bf: beanfile.BeanFile, attr: str) -> Any:
    value = getattr(bf, attr)
    return list(value) if attr in _LISTS else value


def _changes(bean: Bean, bf: beanfile.BeanFile) -> dict[str, Any]:
    out = {}
    for attr, column in _COLUMNS.items():
        new = _value(bf, attr)
        old = getattr(bean, column)
        if attr in ("created_at", "updated_at") and new is None or attr == "updated_at" and new < old:
            continue  # a file without times keeps the bean's; an older file does not turn its clock back
        if attr in _LISTS:
            old = list(old or [])
        if new != old:
            out[attr] = new
    return out


def _create(session: Session, issue: Issue, bf: beanfile.BeanFile, by: str) -> Bean:
    now = utcnow()
    bean_id = new_id()
    bean = Bean(id=bean_id, workspace_id=issue.workspace_id, issue_id=issue.id, key=bf.key,
                notes=[], claimed_by=None, version=1)
    for attr, column in _COLUMNS.items():
        setattr(bean, column, _value(bf, attr))
    bean.created_at = bf.created_at or bf.updated_at or now
    bean.updated_at = bf.updated_at or bean.created_at
    if bf.status == "scrapped":
        bean.scrap_reason = f"scrapped in beans ({bf.path})"
    bean.notes = [{"at": now.isoformat(), "by": by, "op": "import",
                   "text": f"imported from {bf.path} ({beanfile.TO_BEANS[bf.status]})"}]
    session.add(bean)
    return bean


def _update(bean: Bean, bf: beanfile.BeanFile, changes: dict[str, Any], by: str) -> None:
    was = bean.status
    for attr, value in changes.items():
        setattr(bean, _COLUMNS[attr], value)
    if "status" in changes and bean.status == "scrapped" and not bean.scrap_reason:
        bean.scrap_reason = f"scrapped in beans ({bf.path})"
    status = f", status {was} → {bean.status}" if "status" in changes else ""
    text = f"updated from {bf.path}: {', '.join(sorted(changes))}{status}"
    bean.notes = [*bean.notes, {"at": utcnow().isoformat(), "by": by, "op": "import", "text": text}]
    bean.version += 1
    # the file's time travels as it is, like its other fields, unless the bean is newer: then it changes now
    keep = bf.updated_at is not None and ("updated_at" in changes or bf.updated_at == bean.updated_at)
    bean.updated_at = bf.updated_at if keep and bf.updated_at is not None else utcnow()
    flag_modified(bean, "updated_at")  # even when equal: else the column's onupdate would stamp it now


def _refusal(session: Session, bean: Bean, bf: beanfile.BeanFile, changes: dict[str, Any],
             etags: dict[str, int]) -> str | None:
    expected = etags.get(bf.key)
    if expected is not None and expected != bean.version:
        return (f"{bf.path}: bean {bf.key} is at version {bean.version} here, not {expected} as when the folder was "
                "exported; it changed on both sides: export it again, merge, then import")
    if "status" in changes:
        inst = governing(session, bean)
        if inst is not None:
            return (f"{bf.path}: bean {bf.key} belongs to workflow {inst.process_id!r}, which is not completed; "
                    "its status changes through the workflow's steps, not by import")
    return None


def import_files(session: Session, issue: Issue, files: dict[str, str], by: str, *, strict: bool = False,
                 etags: dict[str, int] | None = None) -> dict[str, Any]:
    """Per file: created, updated, unchanged or refused; `strict`: all files or none (raises)."""
    parsed, report = _parse(files)
    existing = {b.key: b for b in list_beans(session, issue)}
    done: list[dict[str, Any]] = []
    for bf in parsed:
        bean = existing.get(bf.key)
        entry: dict[str, Any] = {"file": bf.path, "key": bf.key}
        if bf.warnings:
            entry["warnings"] = bf.warnings
        if bean is None:
            bean = _create(session, issue, bf, by)
            entry["result"] = "created"
        elif not (changes := _changes(bean, bf)):
            entry["result"] = "unchanged"
        elif reason := _refusal(session, bean, bf, changes, etags or {}):
            report.append(entry | {"result": "refused", "reason": reason, "conflict": True})
            continue
        else:
            _update(bean, bf, changes, by)
            entry |= {"result": "updated", "changed": sorted(changes)}
        done.append(entry | {"bean": bean})
    refused = [r for r in report if r["result"] == "refused"]
    if strict and refused:
        cls = Conflict if any(r.get("conflict") for r in refused) else Invalid
        raise cls(f"{len(refused)} of {len(files)} files can not be imported, so none was (--strict): "
                  + "; ".join(r["reason"] for r in refused[:10]) + ("; …" if len(refused) > 10 else ""))
    session.flush()
    beans = []
    for entry in done:
        bean = entry.pop("bean")
        entry["id"] = bean.id
        beans.append({**as_dict(bean), "created": entry["result"] == "created", "file": entry["file"],
                      "result": entry["result"]})
    report = sorted(done + report, key=lambda r: r["file"])
    counts = {k: sum(1 for r in report if r["result"] == k) for k in ("created", "updated", "unchanged", "refused")}
    return {"files": report, "beans": beans, "counts": counts}
