"""daemon/earlypush.py (issue 22, run ended → PR opened): the push target is asked while the agent
works, so the run's end needs no round trip before git; it is used only while fresh (the server's
`valid_for_s`), dropped at once when the run does not end well, and a push that fails with a target
asked earlier asks again and pushes again when the server's answer changed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from predictorx.daemon import earlypush, forgework
from predictorx.daemon.serverapi import ServerError

BRANCH = ("worktree", "agent/bot/t1", Path("/somewhere/app"), "http://127.0.0.1:9/o/app.git", None)


def target(token: str = "tok-1") -> dict[str, Any]:
    return {"remote_url": "http://127.0.0.1:9/o/app.git", "branch": "agent/bot/t1", "username": "x",
            "token": token, "extra": {"repo_path": "/somewhere/app", "lease": ""}}


class Api:
    """The server as the early push sees it: answers to push-target, reports recorded."""

    server_url = "http://127.0.0.1:9"  # what a relay target's path is joined to

    def __init__(self, *answers: dict[str, Any] | Exception):
        self.answers = list(answers)
        self.asked = 0
        self.reports: list[dict[str, Any]] = []
        self.pushing: list[dict[str, Any]] = []  # told a push is under way (the server plans its PR)

    async def call(self, method: str, path: str, body: Any = None, *, retries: int = 0) -> Any:
        if path.endswith("/pushing"):
            self.pushing.append(body)
            return {"planned": True}
        if path.endswith("/push-target"):
            self.asked += 1
            answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
            if isinstance(answer, Exception):
                raise answer
            return answer
        self.reports.append(body)
        return {"pull_request_id": "pr-1"}


def early(api: Api) -> earlypush.EarlyPush:
    push = earlypush.EarlyPush(api, Path("/nowhere"), "t1")  # type: ignore[arg-type]
    push.name(*BRANCH)
    return push


async def ended(api: Api, ended_well: bool = True, result: str | None = None) -> tuple[earlypush.EarlyPush, Any]:
    """A run's push as the run makes it: the target asked while the agent works (what came back),
    then the agent's end and its push started."""
    push = early(api)
    push.prefetch()
    fetched = await push._target
    push.ask(ended_well, result)
    push.start("agent/bot/t1", "b" * 40)
    return push, fetched


@pytest.fixture
def pushes(monkeypatch) -> list[dict[str, Any]]:
    """forgework.push_with, recording the targets it was given: the first push fails when the token is tok-1."""
    made: list[dict[str, Any]] = []

    async def push_with(_root: Path, _task: str, answer: dict[str, Any], _quarantine: Path | None = None, **_kw: Any):
        made.append(answer)
        if answer["token"] == "tok-1" and len(made) == 1:
            return False, None, "the forge refused the credential"
        return True, "a" * 40, None
    monkeypatch.setattr(forgework, "push_with", push_with)
    return made


def test_the_target_asked_while_the_agent_works_serves_its_end_without_asking_again(pushes) -> None:
    async def go() -> None:
        api = Api({"forge_push": target("tok-2"), "valid_for_s": 120})
        push, _ = await ended(api, result="done it")  # the agent works; the answer comes
        report = await push.for_finish()
        assert api.asked == 1 and report is None and len(api.reports) == 1  # pushed and reported early
        assert pushes[0]["extra"]["tip"] == "b" * 40 and api.reports[0]["result"] == "done it"
    asyncio.run(go())


def test_a_target_older_than_the_server_allows_is_asked_again_at_the_end(pushes) -> None:
    async def go() -> None:
        api = Api({"forge_push": target("tok-2"), "valid_for_s": 0})
        push, _ = await ended(api)
        await push.for_finish()
        assert api.asked == 2 and len(pushes) == 1  # stale: asked again
    asyncio.run(go())


def test_a_prefetch_that_got_no_answer_is_asked_again_at_the_end(pushes) -> None:
    async def go() -> None:
        api = Api(ServerError(0, "server unreachable"), {"forge_push": target("tok-2"), "valid_for_s": 120})
        push, fetched = await ended(api)
        assert fetched is None
        await push.for_finish()
        assert api.asked == 2 and len(pushes) == 1
    asyncio.run(go())


def test_a_run_that_does_not_end_well_drops_the_target_at_once(pushes) -> None:
    async def go() -> None:
        api = Api({"forge_push": target(), "valid_for_s": 120})
        push = early(api)
        push.prefetch()
        await push._target
        push.ask(False)
        assert push._target is None  # the credential is not kept
        push.start("agent/bot/t1", "b" * 40)
        assert await push.for_finish() is None and pushes == [] and api.asked == 1
    asyncio.run(go())


def test_a_push_that_failed_with_a_prefetched_target_is_made_again_with_a_changed_one(pushes) -> None:
    async def go() -> None:
        api = Api({"forge_push": target("tok-1"), "valid_for_s": 120}, {"forge_push": target("tok-2"), "valid_for_s": 120})
        push, _ = await ended(api)
        await push.for_finish()
        assert [p["token"] for p in pushes] == ["tok-1", "tok-2"] and api.asked == 2
        assert len(api.reports) == 1 and api.reports[0]["ok"] is True
    asyncio.run(go())


def test_a_failed_push_whose_target_did_not_change_is_not_made_again(monkeypatch) -> None:
    made: list[dict[str, Any]] = []

    async def refused(_root: Path, _task: str, answer: dict[str, Any], _quarantine: Path | None = None, **_kw: Any):
        made.append(answer)
        return False, None, "someone else pushed there"
    monkeypatch.setattr(forgework, "push_with", refused)

    async def go() -> None:
        api = Api({"forge_push": target(), "valid_for_s": 120})
        push, _ = await ended(api)
        report = await push.for_finish()
        assert len(made) == 1 and api.asked == 2 and report is not None and report.ok is False
    asyncio.run(go())


def test_the_delivery_goes_on_only_once_the_report_is_answered(pushes) -> None:
    """The fetch into the person's repository, the handoff and the review wait for the push
    (quarantine_hook) and for its report's answer: the server opens the PR meanwhile with the
    CPU and its database's write lock to itself."""
    async def go() -> None:
        answered = asyncio.Event()

        class Slow(Api):
            async def call(self, method: str, path: str, body: Any = None, *, retries: int = 0) -> Any:
                if path.endswith("/forge-push"):
                    await answered.wait()
                return await super().call(method, path, body, retries=retries)

        api = Slow({"forge_push": target("tok-2"), "valid_for_s": 120})
        push, _ = await ended(api)
        for _ in range(200):
            if pushes:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0)
        assert pushes and not push._git_done.is_set()  # pushed, its report not answered: the rest waits
        answered.set()
        await push.for_finish()
        assert push._git_done.is_set() and len(api.reports) == 1
    asyncio.run(go())


def test_the_target_is_asked_once_the_running_report_is_in_and_not_when_it_failed(pushes) -> None:
    async def go() -> None:
        for fails in (False, True):
            api = Api({"forge_push": target(), "valid_for_s": 120})
            push = early(api)
            running: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            assert push.prefetch_after(running) is running
            await asyncio.sleep(0)
            assert push._target is None  # not before the report is in
            running.set_exception(ServerError(409, "refused")) if fails else running.set_result(None)
            await asyncio.sleep(0)
            assert (push._target is None) is fails
            if not fails:
                await push._target
                assert api.asked == 1
            push.drop()
    asyncio.run(go())


@pytest.fixture
def landed(monkeypatch) -> list[tuple[str, str]]:
    """forgework.push_with, recording (tip, lease) of each push; every push lands at its tip."""
    made: list[tuple[str, str]] = []

    async def push_with(_root: Path, _task: str, answer: dict[str, Any], _quarantine: Path | None = None, **_kw: Any):
        made.append((answer["extra"]["tip"], answer["extra"]["lease"]))
        return True, answer["extra"]["tip"], None
    monkeypatch.setattr(forgework, "push_with", push_with)
    return made


async def _started_early(api: Api) -> earlypush.EarlyPush:
    """The run's head pushed from the delivery's quarantine, its final tip told later (quarantine_hook)."""
    push = early(api)
    push.prefetch()
    await push._target
    push.ask(True, "done it")
    push.start("agent/bot/t1", "b" * 40, Path("/q"), final_to_come=True)
    return push


def test_the_head_pushed_first_is_reported_only_once_its_final_tip_is_told(landed) -> None:
    """A push started beside the leftover check is not reported (the PR does not open) before the
    delivery says the branch's final tip: the head itself here."""
    async def go() -> None:
        api = Api({"forge_push": target("tok-2"), "valid_for_s": 120})
        push = await _started_early(api)
        for _ in range(200):
            if landed:
                break
            await asyncio.sleep(0.01)
        for _ in range(20):  # the push's coroutine goes as far as it can without its final tip
            await asyncio.sleep(0)
        assert landed == [("b" * 40, "")] and api.reports == [] and not push._git_done.is_set()
        push.settle("b" * 40)
        assert await push.for_finish() is None
        assert landed == [("b" * 40, "")] and [r["sha"] for r in api.reports] == ["b" * 40]
    asyncio.run(go())


def test_a_leftover_commit_is_pushed_next_leased_on_the_head_and_reported_as_the_tip(landed) -> None:
    async def go() -> None:
        api = Api({"forge_push": target("tok-2"), "valid_for_s": 120})
        push = await _started_early(api)
        push.settle("c" * 40)
        assert await push.for_finish() is None
        # The second push overwrites only what the first left there; the report names the final tip.
        assert landed == [("b" * 40, ""), ("c" * 40, "b" * 40)]
        assert len(api.reports) == 1 and api.reports[0]["sha"] == "c" * 40 and api.reports[0]["ok"] is True
    asyncio.run(go())


def test_a_push_whose_delivery_failed_is_not_reported(landed) -> None:
    async def go() -> None:
        api = Api({"forge_push": target("tok-2"), "valid_for_s": 120})
        push = await _started_early(api)
        push.settle(None)
        assert await push.for_finish() is None
        assert landed == [("b" * 40, "")] and api.reports == [] and push._git_done.is_set()
    asyncio.run(go())


def test_the_quarantine_hook_starts_the_push_then_settles_it_from_the_deliverys_thread(landed) -> None:
    async def go() -> None:
        api = Api({"forge_push": target("tok-2"), "valid_for_s": 120})
        push = early(api)
        push.prefetch()
        await push._target
        push.ask(True)
        push_from = push.quarantine_hook("agent/bot/t1")

        def delivery_thread() -> None:
            settle = push_from(Path("/q"), "b" * 40)
            settle("c" * 40)  # returns once the pushes are done and reported
            assert [r["sha"] for r in api.reports] == ["c" * 40]
        await asyncio.to_thread(delivery_thread)
        assert landed == [("b" * 40, ""), ("c" * 40, "b" * 40)]
    asyncio.run(go())


def test_the_server_hears_the_push_is_under_way_and_the_report_follows_its_answer(landed) -> None:
    """Once git is on its way the server is told (`POST …/pushing`, the branch and the run's result
    its report will carry) so it plans the PR meanwhile; the report goes once that is answered
    (its plan is ready) — and goes all the same when the server refuses it (an older server)."""
    async def go() -> None:
        class Told(Api):
            def __init__(self, refuse: bool, *answers: dict[str, Any]):
                super().__init__(*answers)
                self.refuse, self.order = refuse, []

            async def call(self, method: str, path: str, body: Any = None, *, retries: int = 0) -> Any:
                if path.endswith("/pushing"):
                    self.order.append("pushing" if landed else "pushing before git")
                    await asyncio.sleep(0.05)  # the server plans (its answer comes later than git's)
                    self.order.append("planned")
                    if self.refuse:
                        raise ServerError(404, "Not Found")
                elif path.endswith("/forge-push"):
                    self.order.append("report")
                return await super().call(method, path, body, retries=retries)

        for refuse in (False, True):
            landed.clear()
            api = Told(refuse, {"forge_push": target("tok-2"), "valid_for_s": 120})
            push, _ = await ended(api, result="done it")
            assert await push.for_finish() is None
            assert api.order == ["pushing", "planned", "report"] and len(api.reports) == 1
            assert api.pushing == ([] if refuse else [{"branch": push.branch, "result": "done it"}])
    asyncio.run(go())
