"""The daemon's calls try once without tenacity (retry.first_then_backoff, issue 30), and retry
as backoff() did: as many tries in all, only what `retry_on` accepts, each failure said."""

from __future__ import annotations

import pytest

from predictorx.daemon import retry
from predictorx.daemon.retry import ServerError, first_then_backoff


class _Flaky:
    def __init__(self, *errors: Exception) -> None:
        self.errors, self.calls = list(errors), 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


@pytest.fixture(autouse=True)
def _quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry, "BACKOFF_INITIAL_S", 0.001)


async def test_transient_failures_are_tried_again_up_to_the_attempts() -> None:
    said: list[BaseException] = []
    fn = _Flaky(ServerError(0, "down"), ServerError(503, "restarting"))
    assert await first_then_backoff(fn, 3, before_sleep=said.append) == "ok"
    assert fn.calls == 3 and [e.status for e in said] == [0, 503]  # type: ignore[attr-defined]
    fn = _Flaky(*[ServerError(502, "x")] * 3)
    with pytest.raises(ServerError):
        await first_then_backoff(fn, 3)
    assert fn.calls == 3


async def test_one_attempt_and_a_considered_answer_are_not_retried() -> None:
    fn = _Flaky(ServerError(0, "down"))
    with pytest.raises(ServerError):
        await first_then_backoff(fn, 1)
    assert fn.calls == 1
    fn = _Flaky(ServerError(409, "no"))
    with pytest.raises(ServerError):
        await first_then_backoff(fn, 5)
    assert fn.calls == 1


async def test_without_a_bound_it_tries_until_it_works() -> None:
    fn = _Flaky(*[ValueError("x")] * 4)
    assert await first_then_backoff(fn, None, retry_on=lambda e: isinstance(e, ValueError)) == "ok"
    assert fn.calls == 5


async def test_a_first_try_that_works_builds_no_retry_machinery(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_tenacity(*_a: object, **_kw: object) -> None:
        raise AssertionError("tenacity was set up for a call that needed no retry")

    monkeypatch.setattr(retry, "backoff", no_tenacity)
    assert await first_then_backoff(_Flaky(), 3) == "ok"
