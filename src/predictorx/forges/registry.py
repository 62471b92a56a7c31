"""The forge registry: kind → `Forge` (`plugins.Registry`, entry-point group `predictorx.forges`).

The built-in kinds register through the same `register` call a plugin's entry point gets."""

from __future__ import annotations

from ..plugins import Registry
from .base import Forge

ENTRY_POINT_GROUP = "predictorx.forges"


class UnknownForge(LookupError):
    """No forge is registered under that kind."""


FORGES: Registry[Forge] = Registry(ENTRY_POINT_GROUP, "kind", lambda name, known: UnknownForge(
    f"unknown forge kind {name!r}; known kinds: {', '.join(known)}"))

register = FORGES.register
get = FORGES.get
known_kinds = FORGES.names
