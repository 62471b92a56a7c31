"""Predictor X's side of an ACP connection (the SDK's `acp.Client`): permissions and files.

What we declare in `initialize` (`CAPABILITIES`) is what this class honours:

- ``fs.readTextFile`` / ``fs.writeTextFile``: yes, confined to the task's workdir (the real path,
  symlinks resolved, must lie inside it); anything else is refused with a sentence. The daemon
  serves these itself, outside the agent's sandbox, so the confinement is the whole guard.
- ``terminal``: no. A terminal the daemon ran for the agent would run outside the agent's
  sandbox and network policy; the agents run their shell tools themselves, inside it.

`session/request_permission` is answered by the agent's policy — `allow` (the allow-once option,
else allow-always: what headless runs of the other CLIs do), `deny` (reject-once, else
reject-always, else cancelled) or `ask` (a person picks an option; none within the timeout: deny)
— and the question, its options and the choice are recorded in the task's messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallUpdate,
    WriteTextFileResponse,
)

from . import message as m
from .message import AgentMessage

CAPABILITIES = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                                  terminal=False)
POLICIES = ("allow", "deny", "ask")
_INVALID_PARAMS = -32602  # JSON-RPC; the message itself is the sentence the agent shows its model
_PREFERENCE = {"allow": ("allow_once", "allow_always"), "deny": ("reject_once", "reject_always")}


def choose(policy: str, options: list[dict[str, Any]]) -> str | None:
    """The option id the policy picks, or None (the request is then answered `cancelled`)."""
    for kind in _PREFERENCE.get(policy, _PREFERENCE["deny"]):
        for option in options:
            if option.get("kind") == kind:
                return str(option.get("optionId"))
    return None


class PredictorClient:
    """The client half of one run's connection. `record` queues a message in the run's order."""

    def __init__(self, workdir: Path, policy: str, record: Callable[[AgentMessage], None],
                 ask: Callable[[str], Awaitable[str | None]] | None = None, ask_timeout_s: float = 600.0):
        self.root = Path(os.path.realpath(workdir))
        self.policy = policy if policy in POLICIES else "deny"
        self.record = record
        self.ask, self.ask_timeout_s = ask, ask_timeout_s

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        """Nothing here: updates are mapped in arrival order by the connection's observer (acp.py)."""

    async def request_permission(self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption],
                                 **kwargs: Any) -> RequestPermissionResponse:
        offered = [o.model_dump(mode="json", by_alias=True, exclude_none=True) for o in options]
        question = {"tool_call": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
                    "options": [{k: o.get(k) for k in ("optionId", "name", "kind")} for o in offered]}
        if self.policy == "ask":
            chosen = await self._ask_person(question, offered)
        else:
            chosen = choose(self.policy, offered)
            self.record(m.system("permission", policy=self.policy, choice=chosen, **question))
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen))

    async def _ask_person(self, question: dict[str, Any], offered: list[dict[str, Any]]) -> str | None:
        """`ask`: the question goes into the task's messages (the task page and `predictorx task
        answer` show it), and the run waits for a person's pick; none in time: deny."""
        request_id = uuid.uuid4().hex[:12]
        self.record(m.system("permission", policy="ask", waiting=True, request_id=request_id, **question))
        picked = None
        if self.ask is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                picked = await asyncio.wait_for(self.ask(request_id), self.ask_timeout_s)
        valid = {str(o.get("optionId")) for o in offered}
        if picked in valid:
            self.record(m.system("permission_answer", request_id=request_id, choice=picked))
            return picked
        chosen = choose("deny", offered)
        self.record(m.system("permission_timeout", request_id=request_id, choice=chosen,
                             message=f"no one answered within {self.ask_timeout_s:g} s: answered deny"))
        return chosen

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        target = self._inside(path)
        try:
            text = target.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            raise RequestError.resource_not_found(str(path)) if isinstance(e, FileNotFoundError) else \
                RequestError.internal_error({"details": f"cannot read {path}: {e.strerror}"}) from None
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            text = "".join(lines[start:start + limit] if limit is not None else lines[start:])
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        target = self._inside(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        except OSError as e:
            raise RequestError.internal_error({"details": f"cannot write {path}: {e.strerror}"}) from None
        return WriteTextFileResponse()

    def _inside(self, path: str) -> Path:
        if not os.path.isabs(path):
            raise RequestError(_INVALID_PARAMS, f"{path!r} is not an absolute path")
        real = Path(os.path.realpath(path))
        if real != self.root and self.root not in real.parents:
            raise RequestError(_INVALID_PARAMS, f"{path} is outside the task's folder {self.root}")
        return real

    # Terminals are not declared (CAPABILITIES): an agent that asks anyway is told so.
    async def create_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("terminal/create (this client runs no terminals)")

    def on_connect(self, conn: Any) -> None:
        pass
