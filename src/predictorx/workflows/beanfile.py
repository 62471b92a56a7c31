"""Beans as hmans/beans Markdown files: a front-matter block (`# <id>` comment, title, status,
type, priority, created_at, updated_at, parent) then the body (R-HAR-6).

Status maps created→todo, in-progress→in-progress, resolved→completed, scrapped→scrapped; notes
travel in the body under a `## Notes` heading so a round trip keeps them readable.
"""

from __future__ import annotations

import json
import re
from typing import Any

TO_BEANS = {"created": "todo", "in-progress": "in-progress", "resolved": "completed", "scrapped": "scrapped"}
FROM_BEANS = {"todo": "created", "draft": "created", "in-progress": "in-progress", "completed": "resolved",
              "scrapped": "scrapped"}
_KEY = re.compile(r"^([a-z_]+):\s*(.*)$")


def _quote(value: str) -> str:
    if value == "" or re.search(r"[:#\[\]{}\"'\n,&*!|>%@`]", value) or value.strip() != value:
        return json.dumps(value, ensure_ascii=False)
    return value


def slug(title: str) -> str:
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9]+", "-", title.lower())).strip("-")[:50] or "bean"


def filename(bean: dict[str, Any]) -> str:
    return f"px-{bean['id'][:8]}--{slug(bean['title'])}.md"


def dump(bean: dict[str, Any], issue_number: int) -> str:
    lines = ["---", f"# px-{bean['id'][:8]}", f"title: {_quote(bean['title'])}",
             f"status: {TO_BEANS[bean['status']]}", "type: task", "priority: normal",
             f"created_at: {bean['created_at']}", f"updated_at: {bean['updated_at']}",
             f"parent: issue-{issue_number}", "---", ""]
    body = bean.get("body") or ""
    if bean.get("notes"):
        body = (body.rstrip() + "\n\n" if body.strip() else "") + "## Notes\n\n" + "\n".join(
            f"- {n['at']} {n.get('by') or ''}: {n['text']}".replace("  ", " ") for n in bean["notes"])
    return "\n".join(lines) + body.rstrip() + "\n"


class BeanFileError(ValueError):
    pass


def load(text: str) -> dict[str, Any]:
    """title, status (ours), body, scrap_reason-less; unknown front-matter keys are kept out."""
    if not text.startswith("---"):
        raise BeanFileError("a bean file starts with a '---' front-matter block")
    try:
        _, head, body = text.split("---", 2)
    except ValueError:
        raise BeanFileError("the front-matter block is not closed with '---'") from None
    meta: dict[str, str] = {}
    for line in head.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _KEY.match(line)
        if not m:
            raise BeanFileError(f"front-matter line {line!r} is not 'key: value'")
        value = m.group(2).strip()
        if value.startswith('"'):
            try:
                value = json.loads(value)
            except ValueError:
                raise BeanFileError(f"front-matter value {value!r} is not a valid quoted string") from None
        elif value.startswith("'") and value.endswith("'") and len(value) >= 2:
            value = value[1:-1].replace("''", "'")
        meta[m.group(1)] = value
    if not meta.get("title"):
        raise BeanFileError("a bean file needs a title")
    status = meta.get("status", "todo")
    if status not in FROM_BEANS:
        raise BeanFileError(f"status {status!r} is not one of {', '.join(FROM_BEANS)}")
    body = body.lstrip("\n")
    body = body.split("\n## Notes\n", 1)[0] if "\n## Notes\n" in "\n" + body else body
    if body.startswith("## Notes\n"):
        body = ""
    return {"title": meta["title"], "status": FROM_BEANS[status], "body": body.rstrip()}
