"""Calling the JSON API's own route functions from page handlers.

Pages change data through the very functions behind /api/…, so a rule the API applies (a
validation, the daemon's path check, a 409) applies on the page too. Those functions may be
plain or async; a plain one runs in the thread pool, as FastAPI would run it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .pagework import in_page_thread


async def call(route: Callable[..., Any], *args: Any) -> Any:
    if inspect.iscoroutinefunction(route):
        return await route(*args)
    return await in_page_thread(route, *args)
