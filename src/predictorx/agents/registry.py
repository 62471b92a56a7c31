"""The agent-adapter registry: provider name → adapter (`plugins.Registry`).

Built-in adapters register themselves through the same `register` call a plugin uses
(entry-point group `predictorx.agent_adapters`), so supporting another CLI is one module and
nothing else.
"""

from __future__ import annotations

from ..plugins import Registry
from .adapter import AgentAdapter

ENTRY_POINT_GROUP = "predictorx.agent_adapters"


class UnknownProvider(LookupError):
    """No adapter is registered under that provider name."""


ADAPTERS: Registry[AgentAdapter] = Registry(ENTRY_POINT_GROUP, "provider", lambda name, known: UnknownProvider(
    f"unknown agent provider {name!r}; known providers: {', '.join(known)}"))

register = ADAPTERS.register
unregister = ADAPTERS.unregister
known_providers = ADAPTERS.names
get = ADAPTERS.get
