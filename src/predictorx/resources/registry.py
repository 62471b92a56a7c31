"""The resource-type registry (R-RES-1).

A resource type is a name plus one handler object that owns everything about the type: the
server-side validator/normaliser, the prompt renderer the daemon uses, the web renderer, and the
daemon-side hooks. Built-in types register themselves through the same `register` call a plugin
uses (entry-point group `predictorx.resource_types`), so adding a type is one module and nothing
else — no migration, no endpoint, no CLI change.
"""

from __future__ import annotations

import html
import json
from importlib.metadata import entry_points
from typing import Any, ClassVar


class ResourceError(ValueError):
    """A resource payload a client sent is wrong. `status` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 422):
        super().__init__(message)
        self.message = message
        self.status = status


class ResourceType:
    """Base handler. Subclasses set `name` and override what they need."""

    name: ClassVar[str] = ""
    #: Short words for prompts and the web UI ("GitHub repository", "local folder").
    title: ClassVar[str] = ""

    # -- server side -------------------------------------------------------------------------
    def normalize(self, ref: dict[str, Any]) -> dict[str, Any]:
        """Validate a full payload and return its canonical form; raise ResourceError if wrong."""
        return dict(ref)

    def unique_key(self, ref: dict[str, Any]) -> str | None:
        """A key unique per project, enforced by a database index (None: no constraint)."""
        return None

    def required_capabilities(self, ref: dict[str, Any]) -> set[str]:
        """Capabilities the owning daemon must declare for this payload (R-RES-9)."""
        return set()

    def owner_daemon_id(self, ref: dict[str, Any]) -> str | None:
        """The daemon this row belongs to, if it is machine-local (R-RES-8)."""
        return None

    def daemon_check(self, ref: dict[str, Any]) -> dict[str, Any] | None:
        """A request the owning daemon should answer before the row is saved (None: nothing to ask).

        Only the machine can see what is on it, e.g. whether a folder breaks the path rules."""
        return None

    def visible_to_daemon(self, ref: dict[str, Any], daemon_id: str | None) -> bool:
        """Whether a claim by `daemon_id` may carry this row (R-RES-8)."""
        owner = self.owner_daemon_id(ref)
        return owner is None or owner == daemon_id

    # -- daemon side -------------------------------------------------------------------------
    def describe(self, ref: dict[str, Any], label: str | None) -> str:
        """One readable bullet for the agent's instruction file: words, never raw JSON."""
        shown = ", ".join(f"{k}: {v}" for k, v in ref.items() if v not in (None, ""))
        head = label or self.title or self.name
        return f"{head} ({self.name}) — {shown}" if shown else f"{head} ({self.name})"

    def repository_url(self, ref: dict[str, Any]) -> str | None:
        """A git URL this resource contributes to the task's repositories, if any."""
        return None

    # -- web ----------------------------------------------------------------------------------
    def render_html(self, ref: dict[str, Any], label: str | None) -> str:
        return html.escape(self.describe(ref, label))


_TYPES: dict[str, ResourceType] = {}
_loaded_plugins = False


def register(handler: ResourceType | type[ResourceType]) -> ResourceType:
    """Register a handler (class or instance). Usable as a class decorator."""
    instance = handler() if isinstance(handler, type) else handler
    if not instance.name:
        raise ValueError("a resource type needs a name")
    _TYPES[instance.name] = instance
    return handler  # type: ignore[return-value]


def unregister(name: str) -> None:
    _TYPES.pop(name, None)


def _load_plugins() -> None:
    global _loaded_plugins
    if _loaded_plugins:
        return
    _loaded_plugins = True
    for ep in entry_points(group="predictorx.resource_types"):
        register(ep.load())


def known_types() -> list[str]:
    _load_plugins()
    return sorted(_TYPES)


def get(name: str) -> ResourceType:
    """The handler of a type; an unknown type is refused with 400 and the known types (R-RES-6)."""
    _load_plugins()
    try:
        return _TYPES[name]
    except KeyError:
        raise ResourceError(
            f"unknown resource type {name!r}; known types: {', '.join(known_types())}", status=400
        ) from None


def split_label(ref: dict[str, Any], label: str | None) -> tuple[dict[str, Any], str | None]:
    """A label may arrive inside the payload; it is kept in one place only, the row's `label`."""
    ref = dict(ref)
    inner = ref.pop("label", None)
    if label is None and inner is not None:
        if not isinstance(inner, str):
            raise ResourceError("label must be a string")
        label = inner
    if label is not None and (len(label) > 500 or "\x00" in label):
        raise ResourceError("label must be at most 500 characters, without NUL characters")
    return ref, label


def merge_patch(current: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Partial update: an omitted key is kept, a key set to null is cleared."""
    merged = dict(current)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def canonical_json(ref: dict[str, Any]) -> str:
    return json.dumps(ref, sort_keys=True, separators=(",", ":"))
