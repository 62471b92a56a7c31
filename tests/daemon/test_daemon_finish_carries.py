"""Fewer requests per task (issue 30): a claim from a new server carries the task-start sweep and
says its finish takes the handoff and the run's last messages (protocol.FINISH_CARRIES); the
daemon then asks for no sweep and posts no handoff, and its last batch of messages goes with the
finish. From an older server's claim (neither there) it asks and posts as before. A finish refused
with what it carried sends that on its own, so nothing is lost."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from predictorx.daemon import runner
from predictorx.daemon.main import Daemon
from predictorx.daemon.retry import ServerError
from predictorx.daemon.runner import TaskRun
from predictorx.daemon.uploader import MessageUploader
from predictorx.protocol import FINISH_CARRIES, Claim, MessageBatch

from fake_host import FakeHost

#: A stand-in `claude`: keeps its prompt, says one thing and ends.
_CLAUDE = """
import json, sys
open(sys.argv[1], "w").write(sys.stdin.read())
print(json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": "done it"}]}}), flush=True)
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "ok", "session_id": "s-1"}))
"""

_SWEEP = {"issue": {"number": 3, "title": "Fix the login", "status": "in_progress"},
          "beans": {"counts": {}, "open": [], "open_total": 0}, "instances": [],
          "interaction": {"state": "the-claimed-state", "active": None, "stack": [], "pending": None},
          "last_handoff": None, "sibling_branches": [], "pending_classifications": []}


class _Api:
    """The server's side of a run, recorded: every request by method and path."""

    server_url = "http://127.0.0.1:9"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.uploaded: list[MessageBatch] = []

    async def status(self, task_id: str, status: str, wait_reason: str | None = None,
                     branch_name: str | None = None) -> dict[str, Any]:
        self.calls.append(("POST", f"/api/daemon/tasks/{task_id}/status", status))
        return {}

    async def call(self, method: str, path: str, body: Any = None, retries: int = 0) -> Any:
        self.calls.append((method, path, body))
        if path.endswith("/harness/sweep"):
            return {**_SWEEP, "interaction": {**_SWEEP["interaction"], "state": "the-asked-state"}}
        return {}

    async def upload(self, task_id: str, batch: MessageBatch) -> dict[str, Any]:
        self.calls.append(("POST", f"/api/tasks/{task_id}/messages", None))
        self.uploaded.append(batch)
        return {"last_seq": batch.messages[-1].seq if batch.messages else -1, "stop": None}


def _claim(tmp_path: Path, **server_says: Any) -> tuple[Claim, Path]:
    script, prompt = tmp_path / "claude.py", tmp_path / "prompt.txt"
    script.write_text(_CLAUDE)
    wire = {"task": {"id": "t-1", "workspace_id": "w-1"}, "issue": {"number": 3, "title": "Fix the login"},
            "context": {}, "token": "pxt_x",
            "agent": {"name": "c", "provider": "claude", "command": [sys.executable, str(script), str(prompt)]},
            **server_says}
    return Claim.from_wire(json.loads(json.dumps(wire))), prompt


def _paths(api: _Api) -> list[str]:
    return [f"{m} {p.rsplit('/', 2)[-2]}/{p.rsplit('/', 1)[-1]}" for m, p, _ in api.calls]


async def test_against_a_new_server_the_sweep_comes_with_the_claim_and_the_finish_carries_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IS_SANDBOX", "1")  # (these tests may run as root)
    # No batch while the run goes on, however slow the machine: every message is left for the end.
    monkeypatch.setattr(runner, "MessageUploader", functools.partial(MessageUploader, interval=600.0))
    host = FakeHost(tmp_path / "ws", _Api())
    claim, prompt = _claim(tmp_path, sweep=_SWEEP, finish_takes=list(FINISH_CARRIES))
    await TaskRun(host, claim).run()  # type: ignore[arg-type]
    fields = host.finished
    assert fields["status"] == "completed", fields
    assert "the-claimed-state" in prompt.read_text()  # the claim's sweep is the prompt's tail
    assert _paths(host.api) == ["POST t-1/status"], "no sweep asked, no handoff posted, no message batch"
    assert fields["handoff"] == {"result": "ok"}  # the git facts (none outside a repository) and the result
    texts = [m["content"].get("text") for m in fields["messages"]]
    assert "done it" in texts and [m["seq"] for m in fields["messages"]] == list(range(len(texts)))


async def test_against_an_older_server_it_asks_for_the_sweep_and_posts_the_handoff_and_messages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IS_SANDBOX", "1")
    host = FakeHost(tmp_path / "ws", _Api())
    claim, prompt = _claim(tmp_path)  # an older server's claim: no sweep, no finish_takes
    await TaskRun(host, claim).run()  # type: ignore[arg-type]
    fields = host.finished
    assert fields["status"] == "completed", fields
    assert "the-asked-state" in prompt.read_text()
    paths = _paths(host.api)
    assert "GET harness/sweep" in paths and "POST harness/handoff" in paths and "POST t-1/messages" in paths
    assert "handoff" not in fields and "messages" not in fields  # an older server refuses unknown keys
    assert "done it" in [m.content.get("text") for b in host.api.uploaded for m in b.messages]


async def test_a_run_that_waited_asks_for_the_sweep_afresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IS_SANDBOX", "1")
    host = FakeHost(tmp_path / "ws", _Api())
    claim, prompt = _claim(tmp_path, sweep=_SWEEP, finish_takes=list(FINISH_CARRIES))
    run = TaskRun(host, claim)
    run.waited = True  # (as _on_wait leaves it: hours may have passed since the claim)
    await run.run()  # type: ignore[arg-type]
    assert "the-asked-state" in prompt.read_text() and "GET harness/sweep" in _paths(host.api)


async def test_the_uploader_hands_its_last_small_batch_to_the_finish_and_sends_a_big_one() -> None:
    api = _Api()
    up = MessageUploader(api, "t-1", min_gap=60.0, hand_over=True)  # type: ignore[arg-type]
    up.start()
    await up.add("text", {"text": "first"})
    await up.close()
    assert api.uploaded == [] and [m.content["text"] for m in up.handed_over] == ["first"]
    big = MessageUploader(api, "t-2", min_gap=60.0, hand_over=True)  # type: ignore[arg-type]
    big.start()
    for i in range(3):
        await big.add("text", {"text": str(i) * 200_000})
    await big.close()
    assert [m.seq for b in api.uploaded for m in b.messages] + [m.seq for m in big.handed_over] == [0, 1, 2]
    assert api.uploaded, "past the size the finish carries, messages go up on their own"


class _RefusingApi(_Api):
    """A server that refuses a finish's body the first `refusals` times (an older one: unknown keys)."""

    def __init__(self, refusals: int = 1) -> None:
        super().__init__()
        self.finishes: list[dict[str, Any]] = []
        self.refusals = refusals

    async def finish(self, task_id: str, **fields: Any) -> dict[str, Any]:
        self.finishes.append(fields)
        if len(self.finishes) <= self.refusals:
            raise ServerError(422, "the report does not validate")
        return {}


_CARRYING = {"status": "completed", "result": "ok", "review": {"branch": "b", "changed": True},
             "handoff": {"branch": "b", "result": "ok"},
             "messages": [{"seq": 4, "kind": "text", "content": {"text": "last words"}}]}


async def test_a_finish_refused_with_what_it_carried_goes_again_without_it_and_keeps_the_review(tmp_path: Path) -> None:
    api = _RefusingApi()  # (a replica not upgraded yet refuses the keys it does not know)
    daemon = Daemon(api, name="host", workspaces_root=tmp_path / "ws")  # type: ignore[arg-type]
    await daemon.report_finish("t-1", dict(_CARRYING))
    assert [b.messages[0].content["text"] for b in api.uploaded] == ["last words"]
    assert ("POST", "/api/tasks/t-1/harness/handoff", {"branch": "b", "result": "ok"}) in api.calls
    second = api.finishes[1]
    assert "messages" not in second and "handoff" not in second and second["review"]["branch"] == "b"


async def test_a_finish_refused_again_sends_the_essentials(tmp_path: Path) -> None:
    api = _RefusingApi(refusals=2)
    daemon = Daemon(api, name="host", workspaces_root=tmp_path / "ws")  # type: ignore[arg-type]
    await daemon.report_finish("t-1", dict(_CARRYING))
    assert len(api.finishes) == 3 and "review" not in api.finishes[2] and api.finishes[2]["status"] == "completed"
    assert len(api.uploaded) == 1  # what it carried, sent once


async def test_a_handoff_goes_on_its_own_when_a_push_report_may_open_the_pr_first(tmp_path: Path) -> None:
    from predictorx.daemon.workflowhooks import EndState, Handoff

    for push_first in (False, True):
        api = _Api()
        handoff = Handoff(api, "t-1", lambda facts: facts, carried=lambda first=push_first: not first)  # type: ignore[arg-type]
        await handoff.at_end(tmp_path, "ok", EndState())
        kept = await handoff.sent(None)
        posted = [body for _, path, body in api.calls if path.endswith("/harness/handoff")]
        # The PR's body reads the handoff: with a push report on its way it is in before the finish.
        assert (kept, posted) == ((None, [{"result": "ok"}]) if push_first else ({"result": "ok"}, []))


def test_an_early_push_under_way_may_report_first(tmp_path: Path) -> None:
    from predictorx.daemon.earlypush import EarlyPush

    push = EarlyPush(_Api(), tmp_path, "t-1", lambda x: x)  # type: ignore[arg-type]
    assert not push.may_report_first()
    push._target = object()  # type: ignore[assignment]  # (as prefetch or ask leave it: a target asked)
    assert push.may_report_first()
