"""Which git URLs are folders on the machine that fetches them (R-SEC-6), for the resource types
(`ResourceType.adders_machines_only`), the claim (`service/claiming.py`) and the workspace's list.
No import of its siblings: the registry and the server both ask it."""

from __future__ import annotations

import re

_SCP_LIKE = re.compile(r"^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9.-]+:(?!//)[^\s]+$")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def local_git_url(value: str) -> bool:
    """Whether a git URL reads a folder of whichever machine fetches it (`file://…`, a plain path,
    `C:\\…`) rather than a server. Such a URL is the machine's owner's to hand out (R-SEC-6), like
    a local directory: only the daemons of the person who added it fetch it."""
    value = value.strip()
    if "://" in value:
        return value.split("://", 1)[0].lower() == "file"
    return value.startswith(("/", "\\")) or bool(_WINDOWS_DRIVE.match(value)) or not _SCP_LIKE.match(value)
