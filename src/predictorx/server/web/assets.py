"""The static files, with px.css and px.js sent without their comments and indentation.

The sources stay readable in static/; what a browser loads is what counts toward a page's
weight (issue 13 §7: under 100 KB of HTML + JS + CSS). The trimming is deliberately plain so
it cannot change meaning: CSS loses comments, whitespace runs and the spaces around `{};,>` and
after `:` (px.css has no strings with spaces in them); JS loses whole-line `//` comments and
indentation, its line breaks kept (px.js has no template literals or block comments).
"""

from __future__ import annotations

import functools
import os
import re
from email.utils import formatdate

from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_JS_COMMENT_LINE = re.compile(r"^\s*//.*$\n?", re.M)
TRIMMED = {"px.css": "text/css; charset=utf-8", "px.js": "text/javascript; charset=utf-8",
           "pages.css": "text/css; charset=utf-8",
           "edit.css": "text/css; charset=utf-8", "edit.js": "text/javascript; charset=utf-8",
           "inbox.css": "text/css; charset=utf-8", "inbox.js": "text/javascript; charset=utf-8",
           "palette.css": "text/css; charset=utf-8", "palette.js": "text/javascript; charset=utf-8",
           "palette-dialog.css": "text/css; charset=utf-8", "palette-dialog.js": "text/javascript; charset=utf-8",
           "px-read.css": "text/css; charset=utf-8", "px-read.js": "text/javascript; charset=utf-8",
           "px-console.css": "text/css; charset=utf-8", "px-console.js": "text/javascript; charset=utf-8"}


def trim_css(text: str) -> str:
    text = _CSS_COMMENT.sub("", text)
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r":\s+", ":", text)  # after a colon only: a space before one is a selector's
    return re.sub(r"\s*([{};,>])\s*", r"\1", text).strip()


def trim_js(text: str) -> str:
    text = _JS_COMMENT_LINE.sub("", text)
    return "\n".join(line.strip() for line in text.splitlines() if line.strip()) + "\n"


@functools.lru_cache(maxsize=8)
def _trimmed(path: str, mtime_ns: int) -> bytes:  # the cache key changes when the file does
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return (trim_css(text) if path.endswith(".css") else trim_js(text)).encode()


class Static(StaticFiles):
    def file_response(self, full_path: os.PathLike, stat_result: os.stat_result, scope: Scope,
                      status_code: int = 200) -> Response:
        name = os.path.basename(str(full_path))
        if name not in TRIMMED:
            return super().file_response(full_path, stat_result, scope, status_code)
        body = _trimmed(str(full_path), stat_result.st_mtime_ns)
        etag = f'"px-{stat_result.st_mtime_ns:x}-{len(body):x}"'
        headers = {"etag": etag, "last-modified": formatdate(stat_result.st_mtime, usegmt=True)}
        request_headers = dict((k.decode().lower(), v.decode()) for k, v in scope.get("headers", []))
        if request_headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(body, status_code=status_code, media_type=TRIMMED[name], headers=headers)
