"""The wire between server and daemon is typed (issue 23 item 3, `predictorx/protocol.py`): the daemon
reads a claim only through `Claim.from_wire`, which refuses a malformed one with a sentence, and an
unreadable claim is reported failed on its task instead of breaking the daemon's claim loop."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from predictorx.agents import message
from predictorx.daemon.main import Daemon
from predictorx.protocol import MESSAGE_KINDS, Claim, ClaimContext, Event, ProtocolError, ResourceRow, WorkspaceRef
from predictorx.server import hub


def _wire(**over: Any) -> dict[str, Any]:
    context = ClaimContext(workspace=WorkspaceRef("w-1", "acme", "Acme"), workspace_repos=("https://git.example.com/a",),
                           project_id="p-1", project_title="Shop",
                           resources=(ResourceRow("r-1", "github_repo", {"url": "https://git.example.com/shop"}),))
    claim = Claim.wire(task={"id": "t-1", "workspace_id": "w-1", "status": "dispatched", "prompt": None},
                       agent={"name": "bot", "provider": "command", "command": ["true"], "network": "open",
                              "allow_hosts": [], "mcp_servers": [], "sandbox": False, "permissions": "allow"},
                       issue={"number": 7, "title": "Fix it", "body": "please"}, context=context, token="pxt_x",
                       resume_session_id=None)
    claim.update(over)
    return claim


def test_a_claim_is_read_into_frozen_types_and_its_context_round_trips() -> None:
    wire = _wire(env=[{"name": "API_KEY", "value": "s3cret", "secret": True, "scope": "workspace"}],
                 continue_branch={"branch": "agent/bot/t-0", "remote_url": "https://git.example.com/shop"})
    claim = Claim.from_wire(json.loads(json.dumps(wire)))  # as it crosses HTTP
    assert (claim.task.id, claim.agent.command, claim.issue.number) == ("t-1", ("true",), 7)
    assert claim.context.to_wire() == wire["context"]
    assert claim.continue_branch is not None and claim.continue_branch.branch == "agent/bot/t-0"
    assert claim.env[0].secret and "s3cret" not in repr(claim)  # never in a log line
    assert claim.env[0].scope == "workspace" and claim.env[0].to_wire() == wire["env"][0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        claim.task.id = "t-2"  # type: ignore[misc]


@pytest.mark.parametrize(("change", "said"), [
    ({"token": None}, "claim.token"),
    ({"agent": {"name": "bot"}}, "agent.provider"),
    ({"agent": {"name": "bot", "provider": "command", "command": "rm -rf /"}}, "agent.command"),
    ({"issue": {"number": "7", "title": "x"}}, "issue.number"),
    ({"context": {"resources": [{"id": "r", "resource_ref": {}}]}}, "context.resources[0].resource_type"),
    ({"context": {"workspace_repos": [3]}}, "context.workspace_repos[0]"),
    ({"env": [{"name": "A", "value": 1}]}, "claim.env[0].value"),
    ({"env": [{"name": "A", "value": "v", "scope": 1}]}, "claim.env[0].scope"),
])
def test_a_malformed_claim_is_refused_with_a_sentence(change: dict[str, Any], said: str) -> None:
    with pytest.raises(ProtocolError, match=said.replace("[", r"\[").replace("]", r"\]")):
        Claim.from_wire(_wire(**change))


class _Api:
    """The server's side of a finish, recorded."""

    def __init__(self) -> None:
        self.finished: list[tuple[str, dict[str, Any]]] = []

    async def finish(self, task_id: str, **fields: Any) -> dict[str, Any]:
        self.finished.append((task_id, fields))
        return {}


async def test_the_daemon_reports_an_unreadable_claim_failed_and_runs_nothing(tmp_path: Path) -> None:
    api = _Api()
    daemon = Daemon(api, name="host", workspaces_root=tmp_path / "ws")  # type: ignore[arg-type]
    daemon._start(_wire(agent={"name": "bot"}))
    daemon._start({"task": "not even an object"})  # no task id to report it on: logged only
    await asyncio.gather(*daemon._background_jobs)  # the report, sent beside the claim loop
    [(task_id, fields)] = api.finished
    assert task_id == "t-1" and fields["status"] == "failed" and "agent.provider" in fields["failure_reason"]
    assert daemon.runs == {} and daemon.busy_slots == 0


def test_event_names_and_message_kinds_are_one_list_for_both_sides() -> None:
    assert json.dumps({"type": Event.TASK_QUEUED}) == '{"type": "task_queued"}'
    assert set(hub.DAEMON_TYPES) == {"task_queued", "task_cancelled", "permission_answered", "request",
                                     "daemon_revoked"}
    assert message.MESSAGE_KINDS is MESSAGE_KINDS
