"""JSON answers that cannot fail on text the database already holds.

Input with a lone surrogate is refused at the door (bodyguard), but rows written before that rule
— or by an older server — may still hold one, and `str.encode("utf-8")` on it raises: every page
showing that row would answer 500 for ever. Rendering falls back to replacing such characters
with U+FFFD; the fast path is the usual one.
"""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi.responses import JSONResponse

_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps(content: Any) -> bytes:
    text = json.dumps(content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


class SafeJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return dumps(content)
