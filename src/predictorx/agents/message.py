"""What an agent said, as one ordered stream of messages (R-EX-3).

Every adapter turns its CLI's own event format into these, so the server, the web UI and
`predictorx task messages` only ever see one shape. The content of each kind:

- ``text``        ``{"text": str}`` — what the agent said to the user.
- ``thinking``    ``{"text": str}`` — reasoning the CLI chose to show.
- ``tool_use``    ``{"id": str | None, "name": str, "input": Any}``
- ``tool_result`` ``{"tool_use_id": str | None, "output": Any, "is_error": bool}``
- ``error``       ``{"message": str}`` — the CLI reported a problem (it may still recover).
- ``system``      ``{"event": str, ...}`` — session start, plans, lines the adapter could not read.

Adapters may add keys (e.g. ``exit_code`` on a shell tool result); they never remove these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..protocol import MESSAGE_KINDS  # the wire's list, which the server checks without importing agents


@dataclass(frozen=True)
class AgentMessage:
    kind: str
    content: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in MESSAGE_KINDS:
            raise ValueError(f"unknown message kind {self.kind!r}; kinds: {', '.join(MESSAGE_KINDS)}")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "content": self.content}


def text(value: str) -> AgentMessage:
    return AgentMessage("text", {"text": value})


def thinking(value: str) -> AgentMessage:
    return AgentMessage("thinking", {"text": value})


def tool_use(id: str | None, name: str, input: Any) -> AgentMessage:
    return AgentMessage("tool_use", {"id": id, "name": name, "input": input})


def tool_result(tool_use_id: str | None, output: Any, is_error: bool = False, **extra: Any) -> AgentMessage:
    return AgentMessage("tool_result", {"tool_use_id": tool_use_id, "output": output, "is_error": is_error, **extra})


def error(message: str, **extra: Any) -> AgentMessage:
    return AgentMessage("error", {"message": message, **extra})


def system(event: str, **extra: Any) -> AgentMessage:
    return AgentMessage("system", {"event": event, **extra})
