"""The signed-webhook receivers share one reader (server/routes/signedhooks.py): a body over the
route's bound is refused by its declared length before a byte is read, or as it streams past."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from predictorx.server.routes.signedhooks import TooLarge, bounded_body


def _request(headers: list[tuple[bytes, bytes]], chunks: list[bytes]) -> Request:
    async def receive() -> dict:
        if not chunks:
            raise AssertionError("the body was read")
        return {"type": "http.request", "body": chunks.pop(0), "more_body": bool(chunks)}
    return Request({"type": "http", "method": "POST", "path": "/", "headers": headers}, receive)


async def test_a_declared_length_over_the_bound_is_refused_unread() -> None:
    with pytest.raises(TooLarge, match="an autopilot delivery may be at most 256 KiB"):
        await bounded_body(_request([(b"content-length", b"300000")], []), 256 * 1024, "an autopilot delivery")


async def test_a_streamed_body_is_refused_as_it_passes_the_bound_and_taken_whole_below_it() -> None:
    with pytest.raises(TooLarge):
        await bounded_body(_request([], [b"x" * 600, b"y" * 600, b"z"]), 1024, "a delivery")
    assert await bounded_body(_request([], [b"ab", b"cd"]), 1024, "a delivery") == b"abcd"
