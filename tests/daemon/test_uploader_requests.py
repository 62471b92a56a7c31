"""The uploader's requests (issue 30): a burst of messages is one batch with the run's latest
usage; while the run goes on, usage alone is sent (a hard budget is checked on it); at the end,
usage alone is not — the finish carries the final figures — but messages still waiting go up
with it."""

from __future__ import annotations

from typing import Any

from predictorx.daemon.uploader import MessageUploader
from predictorx.protocol import MessageBatch


class _Api:
    def __init__(self) -> None:
        self.batches: list[MessageBatch] = []

    async def upload(self, task_id: str, batch: MessageBatch) -> dict[str, Any]:
        self.batches.append(batch)
        return {}


def _usage(tokens: int) -> dict[str, Any]:
    return {"event": "usage", "input_tokens": tokens, "output_tokens": 1}


async def test_the_closing_flush_sends_no_usage_only_batch() -> None:
    api = _Api()
    up = MessageUploader(api, "t-1", min_gap=0.0)  # type: ignore[arg-type]
    up.start()
    await up.add("text", {"text": "hi"})
    await up._send_some()  # the message went up
    await up.add("system", _usage(20))  # the CLI's last figures, after its last message
    await up.close()
    assert [len(b.messages) for b in api.batches] == [1], "a batch of usage alone was sent at the end"
    assert up.usage is not None and up.usage["input_tokens"] == 20  # what the run's finish reports


async def test_messages_waiting_at_the_end_go_up_with_the_usage() -> None:
    api = _Api()
    up = MessageUploader(api, "t-1", min_gap=60.0)  # type: ignore[arg-type]
    up.start()
    await up.add("text", {"text": "first"})
    await up.add("system", _usage(5))
    await up.add("text", {"text": "second"})
    await up.close()
    texts = [m.content["text"] for b in api.batches for m in b.messages]
    assert texts == ["first", "second"]
    assert any(b.usage is not None for b in api.batches)


async def test_usage_alone_is_sent_while_the_run_goes_on() -> None:
    api = _Api()
    up = MessageUploader(api, "t-1", min_gap=0.0)  # type: ignore[arg-type]
    up.start()
    await up.add("system", _usage(7))
    await up._send_some()
    assert len(api.batches) == 1 and not api.batches[0].messages and api.batches[0].usage is not None
    await up.close()


async def test_a_message_is_encoded_once_to_measure_it(monkeypatch) -> None:
    """Its size is taken when it is bounded and kept for the batch (issue 30: JSON-encoding each
    message twice was daemon CPU per line the agent printed); a huge one is still cut to size."""
    from predictorx.daemon import uploader

    measured: list[dict[str, Any]] = []
    size = uploader._size
    monkeypatch.setattr(uploader, "_size", lambda m: measured.append(m) or size(m))
    up = MessageUploader(_Api(), "t-1", min_gap=60.0)  # type: ignore[arg-type]
    await up.add("text", {"text": "hi"})
    assert len(measured) == 1
    assert up._pending[0]["_bytes"] == size({"seq": 0, "kind": "text", "content": {"text": "hi"}})
    await up.add("tool_result", {"items": ["x" * 1000] * 2000})  # huge in structure: a preview
    assert up._pending[1]["content"]["truncated"] is True
    assert up._pending[1]["_bytes"] == size({k: v for k, v in up._pending[1].items() if k != "_bytes"})


async def test_what_comes_while_a_batch_is_in_flight_waits_its_turn() -> None:
    """A message that arrives while a batch is on its way waits for the next round (min_gap), with
    whatever comes after it: it used to go in a request of its own the moment the first returned
    (a Claude Code run's text and its tool call went up in two requests 40 ms apart, issue 30)."""
    class Slow(_Api):
        up: MessageUploader

        async def upload(self, task_id: str, batch: MessageBatch) -> dict[str, Any]:
            if not self.batches:
                await self.up.add("tool_use", {"id": "t1", "name": "Bash", "input": {}})  # (mid-flight)
            return await super().upload(task_id, batch)

    api = Slow()
    up = api.up = MessageUploader(api, "t-1", min_gap=60.0)  # type: ignore[arg-type]
    await up.add("text", {"text": "Running the command."})
    await up._send_some()
    assert [[m.kind for m in b.messages] for b in api.batches] == [["text"]]
    assert [m["kind"] for m in up._pending] == ["tool_use"]  # still here: the next round takes it
    await up.add("tool_result", {"tool_use_id": "t1", "output": "", "is_error": False})
    up.start()
    await up.close()  # closing sends what waits, in one batch
    assert [[m.kind for m in b.messages] for b in api.batches] == [["text"], ["tool_use", "tool_result"]]


async def test_a_cli_announcing_its_session_opens_no_batch_of_its_own() -> None:
    """Claude Code's `init` (its session id, model, folder) goes up with the first message that shows
    what the agent does: one request fewer a run (issue 30)."""
    api = _Api()
    up = MessageUploader(api, "t-1", min_gap=0.0, interval=0.0)  # type: ignore[arg-type]
    up.start()
    await up.add("system", {"event": "init", "session_id": "s1", "model": "m"})
    assert not up._arrived.is_set() and not api.batches  # the uploader was not woken for it
    await up.add("text", {"text": "hi"})
    assert up._arrived.is_set()
    await up.close()
    assert [[m.kind for m in b.messages] for b in api.batches] == [["system", "text"]]
