"""A page's weight as a browser downloads it (issue 13's budget, issue 26): the HTML plus every
script and style it loads, in bytes on the wire — pages and static files go out gzip-compressed
(server/compression.py), as Lighthouse counts "total byte weight"."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

#: Bytes sent for a whole page. Uncompressed the shared scripts and styles alone are ~88 KB
#: (htmx 52 KB); sent, ~30 KB.
PAGE_BUDGET = 50_000
GZIP = {"Accept-Encoding": "gzip"}
ASSET = re.compile(r'(?:src|href)="(/static/[^"]+\.(?:js|css))"')


def sent(response: Any) -> int:
    """Bytes of a response as they came over the connection (compressed where it was)."""
    response.read()
    return int(response.num_bytes_downloaded)


def page_weight(get: Callable[..., Any], path: str, **kw: Any) -> int:
    page = get(path, headers=GZIP, **kw)
    return sent(page) + sum(sent(get(asset, headers=GZIP)) for asset in ASSET.findall(page.text))
