"""Text that any store and any encoder accepts, shared by the server and the daemon (R-SEC-8).

Agents print anything: NUL bytes, lone surrogates (a JSON line with "\\ud800" decodes to one),
megabytes on one line. `clean` replaces what no UTF-8 encoder or PostgreSQL text column takes
with U+FFFD; `clip` also cuts text over a limit, keeping the head and saying how much it left
out. `sanitize` does both through a whole JSON value (keys included). The raw stream log keeps
the original bytes; these only shape what is uploaded and stored.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def truncation_marker(dropped: int) -> str:
    return f"\n…[truncated: {dropped} more characters; the full text is in the task's raw log]"


def clean(text: str) -> str:
    """NUL and lone surrogates replaced; everything else kept as is."""
    return _UNSTORABLE.sub(REPLACEMENT, text)


def clip(text: str, limit: int) -> str:
    """`clean(text)`, cut to at most `limit` characters with a marker when it was longer."""
    text = clean(text)
    if len(text) <= limit:
        return text
    keep = max(0, limit - len(truncation_marker(len(text))))  # the widest marker this text can need
    return (text[:keep] + truncation_marker(len(text) - keep))[:limit]


def sanitize(value: Any, limit: int) -> Any:
    """A JSON value with every string (and key) clipped to `limit` characters."""
    if isinstance(value, str):
        return clip(value, limit)
    if isinstance(value, dict):
        return {clip(str(k), 1000): sanitize(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sanitize(v, limit) for v in value]
    return value
