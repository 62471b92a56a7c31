"""The one plugin registry: a name → handler map filled by `register` calls and by an entry-point
group, loaded on first use. Resource types (`predictorx.resource_types`) and agent adapters
(`predictorx.agent_adapters`) are two registries of this kind; the built-ins register through the
same `register` call a plugin's entry point gets.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, group: str, key: str, unknown: Callable[[str, list[str]], Exception]):
        """`key`: the handler's attribute that names it; `unknown(name, known)`: the error `get`
        raises for a name nobody registered."""
        self.group = group
        self.key = key
        self.unknown = unknown
        self.loaded = False
        self._items: dict[str, T] = {}

    def register(self, handler: T | type[T]) -> T | type[T]:
        """Register a handler (class or instance). Usable as a class decorator."""
        instance = handler() if isinstance(handler, type) else handler
        name = getattr(instance, self.key, "")
        if not name:
            raise ValueError(f"a plugin of {self.group} needs a {self.key}")
        self._items[name] = instance  # type: ignore[assignment]
        return handler

    def unregister(self, name: str) -> None:
        self._items.pop(name, None)

    def load(self) -> None:
        """Register the entry points of the group, once."""
        if self.loaded:
            return
        self.loaded = True
        for ep in entry_points(group=self.group):
            self.register(ep.load())

    def names(self) -> list[str]:
        self.load()
        return sorted(self._items)

    def handlers(self) -> list[T]:
        self.load()
        return [self._items[n] for n in sorted(self._items)]

    def get(self, name: str) -> T:
        self.load()
        try:
            return self._items[name]
        except KeyError:
            raise self.unknown(name, self.names()) from None
