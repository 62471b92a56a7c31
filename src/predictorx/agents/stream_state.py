"""What an adapter learns while reading a stream, besides the messages themselves."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class StreamState:
    session_id: str | None = None
    #: The final answer the CLI reported explicitly (Claude's `result`, …).
    result: str | None = None
    #: The last text the agent said: the answer when the CLI has no explicit result.
    last_text: str | None = None
    usage: dict[str, Any] | None = None
    #: The model the stream names (Claude Code's init, Gemini's init); else the agent's configured one.
    model: str | None = None
    #: A fatal error the stream reported; the run fails with it even if the exit code is 0.
    error: str | None = None
    #: The last non-fatal error or warning: context for a failure that comes later.
    last_error_message: str | None = None
    #: Adapter-private bookkeeping (buffered text deltas, tool calls already announced, …).
    scratch: dict[str, Any] = field(default_factory=dict)

    def add_usage(self, counts: dict[str, Any]) -> None:
        """Sum numeric counts into `usage` (for CLIs that report usage per step or per turn)."""
        usage = dict(self.usage or {})
        for key, value in counts.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                usage[key] = usage.get(key, 0) + value
        self.usage = usage
