"""What every forge does around a GET answer: pages of a list (each forge's parameter names,
defaults and headers), and for GitHub Last-Modified / If-Modified-Since.

Real page sizes matter: a client that reads only the first page of Gitea's `pulls?state=all` (no
head filter there) misses a PR once a repository has more than 30.
"""

from __future__ import annotations

import math
from datetime import datetime
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any
from urllib.parse import urlencode

#: kind -> (page parameter, size parameter, default size, largest size)
PAGE_PARAMS = {"github": ("page", "per_page", 30, 100), "gitlab": ("page", "per_page", 20, 100),
               "gitea": ("page", "limit", 30, 50), "forgejo": ("page", "limit", 30, 50)}


def _number(value: str | None, default: int) -> int:
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        return default


def paginate(kind: str, public_url: str, query: dict[str, str], items: list[Any]) -> tuple[list[Any], dict[str, str]]:
    """One page of `items` and the headers the forge sends with it (Link; GitLab's X-*; Gitea's X-Total-Count)."""
    page_name, size_name, default, largest = PAGE_PARAMS[kind]
    size = min(max(1, _number(query.get(size_name), default)), largest)
    page = max(1, _number(query.get(page_name), 1))
    total = len(items)
    last = max(1, math.ceil(total / size))
    chunk = items[(page - 1) * size: page * size]

    def url(number: int) -> str:
        return public_url + "?" + urlencode({**query, page_name: str(number), size_name: str(size)})

    rels = []
    if page < last:
        rels += [(page + 1, "next"), (last, "last")]
    if page > 1:
        rels += [(1, "first"), (page - 1, "prev")]
    headers: dict[str, str] = {}
    if rels:
        headers["Link"] = ", ".join(f'<{url(n)}>; rel="{rel}"' for n, rel in rels)
    if kind == "gitlab":
        headers.update({"X-Total": str(total), "X-Total-Pages": str(last), "X-Per-Page": str(size), "X-Page": str(page),
                        "X-Next-Page": str(page + 1) if page < last else "", "X-Prev-Page": str(page - 1) if page > 1 else ""})
    elif kind in ("gitea", "forgejo"):
        headers["X-Total-Count"] = str(total)
    return chunk, headers


def last_modified(body: Any) -> datetime | None:
    """When a single resource last changed (its updated_at), for GitHub's Last-Modified."""
    if isinstance(body, dict) and isinstance(body.get("updated_at"), str):
        try:
            return datetime.fromisoformat(body["updated_at"].replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


def http_date(moment: datetime) -> str:
    return format_datetime(moment, usegmt=True)


def not_modified_since(header: str, moment: datetime) -> bool:
    try:
        return moment <= parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return False
