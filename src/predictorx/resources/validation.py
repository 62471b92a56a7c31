"""Small shared checks for resource payloads."""

from __future__ import annotations

import re
import uuid
from typing import Any

from .registry import ResourceError

MAX_STRING = 4096

_SCP_LIKE = re.compile(r"^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9.-]+:(?!//)[^\s]+$")
_URL = re.compile(r"^(?:https?|ssh|git|file|git\+ssh|ssh\+git)://[^\s]+$")
_REF_BAD = re.compile(r"(\.\.|[\s~^:?*\[\\]|@\{|//|^/|/$|\.lock$|^-|\.$)")


def allowed_keys(ref: dict[str, Any], keys: set[str], type_name: str) -> None:
    extra = sorted(set(ref) - keys)
    if extra:
        raise ResourceError(
            f"{type_name} does not take {', '.join(extra)}; its fields are {', '.join(sorted(keys))}"
        )


def string(ref: dict[str, Any], key: str, *, required: bool = False, max_len: int = MAX_STRING) -> str | None:
    value = ref.get(key)
    if value is None:
        if required:
            raise ResourceError(f"{key} is required")
        return None
    if not isinstance(value, str):
        raise ResourceError(f"{key} must be a string")
    value = value.strip()
    if not value:
        if required:
            raise ResourceError(f"{key} must not be empty")
        return None
    if len(value) > max_len:
        raise ResourceError(f"{key} is longer than {max_len} characters")
    if "\x00" in value:
        raise ResourceError(f"{key} must not contain NUL characters")
    return value


_PSEUDO_FS = re.compile(r"^file://[^/]*/+(?:proc|sys|dev)(?:/|$)", re.IGNORECASE)


def git_url(value: str) -> str:
    """Any URL git can fetch: https, ssh, git@host:path, file://, self-hosted forges.

    A `file://` URL is judged again by the daemon that fetches it, with the local-directory path
    rules (R-LD-1); the views of the running system (/proc, /sys, /dev) are refused here already."""
    if _PSEUDO_FS.match(value):
        raise ResourceError(f"url {value!r} points into /proc, /sys or /dev, a view of the running system, "
                            "never a repository; give the repository's own path")
    if _URL.match(value) or _SCP_LIKE.match(value):
        if value.startswith(("http://", "https://")) and value.count("/") < 3:
            raise ResourceError(f"url {value!r} has no repository path; give https://host/owner/repo")
        return value
    raise ResourceError(
        f"url {value!r} is not a git URL; use https://host/owner/repo, ssh://…, git@host:owner/repo or file:///abs/path"
    )


def git_ref(value: str, key: str = "ref") -> str:
    if _REF_BAD.search(value):
        raise ResourceError(f"{key} {value!r} is not a valid git branch, tag or commit name")
    return value


def uuid_str(value: str, key: str) -> str:
    try:
        return str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError):
        raise ResourceError(f"{key} must be a UUID (see `predictorx daemon list`), got {value!r}") from None
