"""Which repository a git URL names on a forge connection's host (`Forge.repo_from_url`).

Accepted: https/http URLs (`https://host[:port][/prefix]/owner/name[.git]`), `ssh://[user@]host[:port]/path`,
`git://host/path` and scp-like `[user@]host:path`. For web URLs the host must be the connection's
host and port (default ports count as given) and the connection's own path prefix (a forge served
under /gitlab) is removed. For ssh and scp-like URLs only the host name is compared: the ssh port
is not the web port.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from .base import RepoRef

_SCP = re.compile(r"^(?:[^@/:\s]+@)?(?P<host>[^@/:\s\[\]]+|\[[0-9a-fA-F:]+\]):(?P<path>[^/].*|/.+)$")
_DEFAULT_PORTS = {"https": 443, "http": 80, "ssh": 22, "git": 9418}


def _host_port(scheme: str, netloc_host: str | None, port: int | None) -> tuple[str, int | None]:
    return (netloc_host or "").lower(), port or _DEFAULT_PORTS.get(scheme)


def repo_path(base_url: str, url: str) -> str | None:
    """The repository path ("owner/name", GitLab "group/sub/name") `url` names on `base_url`'s
    host, without ".git" and slashes at either end; None when the URL is elsewhere or unreadable."""
    url = url.strip()
    try:
        base = urlsplit(base_url.strip())
        base_host, base_port = _host_port(base.scheme, base.hostname, base.port)
    except ValueError:
        return None
    if not base_host:
        return None
    if "://" in url:
        try:
            parts = urlsplit(url)
            host, port = _host_port(parts.scheme, parts.hostname, parts.port)
        except ValueError:
            return None
        if parts.scheme in ("https", "http"):
            if (host, port) != (base_host, base_port):
                return None
            path = parts.path
            prefix = base.path.rstrip("/")
            if prefix:
                if not (path == prefix or path.startswith(prefix + "/")):
                    return None
                path = path[len(prefix):]
        elif parts.scheme in ("ssh", "git", "git+ssh", "ssh+git"):
            if host != base_host:
                return None
            path = parts.path
        else:
            return None
    else:
        m = _SCP.match(url)
        if not m or m.group("host").lower() != base_host:
            return None
        path = m.group("path")
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    path = path.strip("/")
    return path or None


def two_part(base_url: str, url: str) -> RepoRef | None:
    """owner/name forges (GitHub, Gitea, Forgejo): exactly two segments."""
    path = repo_path(base_url, url)
    if path is None or path.count("/") != 1 or "" in path.split("/"):
        return None
    return RepoRef(path)


def nested(base_url: str, url: str) -> RepoRef | None:
    """GitLab: group/subgroup/…/name, at least two segments; a web URL's "/-/…" tail is dropped."""
    path = repo_path(base_url, url)
    if path is None:
        return None
    path = path.split("/-/", 1)[0].strip("/")
    segments = path.split("/")
    if len(segments) < 2 or "" in segments:
        return None
    return RepoRef(path)
