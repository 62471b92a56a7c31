"""The agent-adapter registry: provider name → adapter.

Built-in adapters register themselves through the same `register` call a plugin uses
(entry-point group `predictorx.agent_adapters`), so supporting another CLI is one module and
nothing else.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from .adapter import AgentAdapter

ENTRY_POINT_GROUP = "predictorx.agent_adapters"

_ADAPTERS: dict[str, AgentAdapter] = {}
_loaded_plugins = False


class UnknownProvider(LookupError):
    """No adapter is registered under that provider name."""


def register(adapter: AgentAdapter | type[AgentAdapter]) -> AgentAdapter | type[AgentAdapter]:
    """Register an adapter (class or instance). Usable as a class decorator."""
    instance = adapter() if isinstance(adapter, type) else adapter
    if not instance.provider:
        raise ValueError("an agent adapter needs a provider name")
    _ADAPTERS[instance.provider] = instance
    return adapter


def unregister(provider: str) -> None:
    _ADAPTERS.pop(provider, None)


def _load_plugins() -> None:
    global _loaded_plugins
    if _loaded_plugins:
        return
    _loaded_plugins = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        register(ep.load())


def known_providers() -> list[str]:
    _load_plugins()
    return sorted(_ADAPTERS)


def get(provider: str) -> AgentAdapter:
    _load_plugins()
    try:
        return _ADAPTERS[provider]
    except KeyError:
        raise UnknownProvider(
            f"unknown agent provider {provider!r}; known providers: {', '.join(known_providers())}"
        ) from None
