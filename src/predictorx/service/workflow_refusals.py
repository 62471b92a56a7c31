"""A workflow step refused by the rules (not enabled, not the actor's role, strict policy, a bean
operation without its bean): raised by the instance and bean services before anything changes."""

from __future__ import annotations

from typing import Any

from .errors import Forbidden


class StepForbidden(Forbidden):
    """Refused before anything changed; `record` (if any) is the refused attempt to keep."""

    def __init__(self, message: str, record: dict[str, Any] | None = None):
        super().__init__(message)
        self.record = record
