"""How one agent run ended."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

RunStatus = Literal["completed", "failed", "cancelled"]


@dataclass
class RunResult:
    status: RunStatus
    #: The agent's final answer (the CLI's result, else its last text message).
    result: str | None
    #: The CLI's own session id, to resume the conversation later; kept even when the run failed.
    session_id: str | None
    #: Why the run did not complete, in words a user can act on (includes the tail of stderr).
    failure_reason: str | None
    exit_code: int | None
    #: Token counts and cost as the CLI reported them, keys as the CLI names them.
    usage: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
