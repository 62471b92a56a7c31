"""The bodies a daemon sends the server are described once (issue 23, protocol): protocol.py's
classes say what the daemon sends, server/models.py's pydantic models add the limits, and
`models.mirrors` ties each model to its class — the two cannot name different keys."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from predictorx import protocol
from predictorx.server import models

SAMPLE_USAGE = protocol.Usage(model="m", input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4,
                              reasoning_tokens=5, cost_usd=0.5)
RUNTIME = protocol.Runtime("claude", "2.1.0", "/usr/bin/claude", ("mcp",))
SAMPLES = {  # every body a daemon sends, each field given
    protocol.Runtime: RUNTIME,
    protocol.Registration: protocol.Registration("0" * 8 + "-0000-4000-8000-" + "0" * 12, "laptop", "host", "1.0",
                                                 ("local_directory",), (RUNTIME,)),
    protocol.Heartbeat: protocol.Heartbeat(("t1", "t2")),
    protocol.ClaimRequest: protocol.ClaimRequest(3, "t1"),
    protocol.RequestAnswer: protocol.RequestAnswer(False, "no such folder", {"merged": False}),
    protocol.Usage: SAMPLE_USAGE,
    protocol.Message: protocol.Message(3, "text", {"text": "hi"}),
    protocol.MessageBatch: protocol.MessageBatch((protocol.Message(0, "text", {"text": "a"}),), SAMPLE_USAGE),
    protocol.TaskStatus: protocol.TaskStatus("waiting", "a folder is in use", "agent/x"),
    protocol.PushReport: protocol.PushReport(False, "a" * 40, "rejected"),
    protocol.Pushing: protocol.Pushing({"mode": "worktree", "branch": "agent/x", "origin_url": "https://h/o/r.git"},
                                       "result"),
    protocol.Finish: protocol.Finish(protocol.Outcome("failed", "why", "result", "sess"), "agent/x",
                                     {"branch": "agent/x"}, SAMPLE_USAGE, protocol.PushReport(True, "b" * 40)),
}


def test_every_report_body_has_one_model_with_the_same_keys() -> None:
    assert set(models.MIRRORS.values()) == set(SAMPLES)
    for model, wire in models.MIRRORS.items():
        extra = {"claim_next"} if wire is protocol.Finish else set()
        assert set(model.model_fields) == protocol.wire_keys(wire) | extra, model.__name__


@pytest.mark.parametrize("wire", list(SAMPLES), ids=lambda c: c.__name__)
def test_what_the_daemon_sends_the_server_takes_whole(wire: type) -> None:
    model = next(m for m, w in models.MIRRORS.items() if w is wire)
    sent = SAMPLES[wire].to_wire()
    taken = model.model_validate(sent).model_dump(exclude_unset=True)
    assert taken == sent


def test_a_field_on_one_side_only_stops_the_server_loading() -> None:
    class Drifted(models.Strict):
        ok: bool
        sha: str | None = None
        error: str | None = None
        branch: dict | None = None
        result: str | None = None
        retried: bool = False  # added on the server's side only

    with pytest.raises(TypeError, match=r"only the model has \['retried'\]"):
        models.mirrors(protocol.PushReport)(Drifted)

    class Short(BaseModel):
        ok: bool

    with pytest.raises(TypeError, match=r"only the protocol \['branch', 'error', 'result', 'sha'\]"):
        models.mirrors(protocol.PushReport)(Short)


def test_an_adapters_usage_keeps_only_the_keys_of_the_wire() -> None:
    assert protocol.Usage.from_mapping({"input_tokens": 7, "currency": "USD"}) == protocol.Usage(input_tokens=7)
    assert protocol.Usage.from_mapping(None) is None
