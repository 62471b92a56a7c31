"""Which git URLs are folders on the machine that fetches them (R-SEC-6, R-LD-1): the one answer
for the server (`ResourceType.adders_machines_only`, the claim, the workspace's list) and the
daemon (`daemon/repocache.py`, which judges such a folder by the local-directory path rules at
every fetch). No import of its siblings: the registry and the server both ask it."""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import unquote, urlsplit

WINDOWS_PATH = re.compile(r"^[A-Za-z]:[\\/]")
#: `user@host:path`, git's scp-like syntax for ssh (not a path: no `//` after the colon).
SCP_LIKE = re.compile(r"^(?:(?P<user>[A-Za-z0-9._-]+)@)?(?P<host>[A-Za-z0-9.-]+):(?!//)(?P<path>.+)$")


def is_scp_like(url: str) -> bool:
    """`host:path` meaning ssh, not an absolute path that happens to hold a colon."""
    return bool(SCP_LIKE.match(url)) and not os.path.isabs(url) and not WINDOWS_PATH.match(url)


def local_source(url: str) -> str | None:
    """The local path a repository URL reads from (`file://…` or a plain path), else None."""
    url = url.strip()
    if "://" in url:
        parts = urlsplit(url)
        return unquote(parts.path) if parts.scheme.lower() == "file" else None
    if is_scp_like(url):
        return None
    return os.path.abspath(url)


def local_git_url(value: str) -> bool:
    """Whether a git URL reads a folder of whichever machine fetches it (`file://…`, a plain path,
    `C:\\…`) rather than a server. Such a URL is the machine's owner's to hand out (R-SEC-6), like
    a local directory: only the daemons of the person who added it fetch it."""
    return local_source(value) is not None


def entry_url(entry: Any) -> str | None:
    """The URL of one of a workspace's repositories (stored as a URL, or {url, description})."""
    url = entry.get("url") if isinstance(entry, dict) else entry
    return url if isinstance(url, str) else None
