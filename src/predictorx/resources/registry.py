"""The resource-type registry (R-RES-1).

A resource type is a name plus one handler object that owns everything about the type: the
server-side validator/normaliser and its conflict message, the prompt renderer the daemon uses,
where the agent runs (`placement`), what the owning machine checks (`daemon_check` and its
answer), the CLI flags and web form fields (`form_fields`), and the web renderer. Built-in types
register themselves through the same `register` call a plugin uses (entry-point group
`predictorx.resource_types`), so adding a type is one module and nothing else — no migration, no
endpoint, no CLI or web change.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Iterable, Protocol

from ..errors import ClientError
from ..plugins import Registry
from .placement import CHECKOUT, OWN, RANK, Placement


class ResourceError(ClientError, ValueError):
    """A resource payload a client sent is wrong. `status` is the HTTP status to answer with."""

    status = 422


@dataclass(frozen=True)
class Field:
    """One payload key as people type it: a CLI flag (`--local-path`) and a web form field."""

    key: str
    help: str = ""
    #: Allowed values, when there is a fixed list: the CLI says them, the web shows a select.
    choices: tuple[str, ...] = ()
    #: The web form's label (default: the key in words).
    label: str = ""
    #: The web form's example text, and whether it must be filled in.
    placeholder: str = ""
    required: bool = False
    #: Shown in a fixed-width font (URLs, paths).
    mono: bool = False

    @property
    def title(self) -> str:
        return self.label or self.key.replace("_", " ").capitalize()

    @property
    def flag(self) -> str:
        return "--" + self.key.replace("_", "-")


@dataclass(frozen=True)
class WebForm:
    """The resources panel's "add" form of a type, made of its `form_fields`."""

    id: str      # the form is #add-<id>-form, posted with form=<id>
    button: str  # the button that opens it ("+ Git repository")
    submit: str  # its submit button ("Add repository")


class ResourceType:
    """Base handler. Subclasses set `name` and override what they need."""

    name: ClassVar[str] = ""
    #: Short words for prompts and the web UI ("GitHub repository", "local folder").
    title: ClassVar[str] = ""
    #: The payload keys people set by hand (CLI flags, web form fields); others go as JSON.
    form_fields: ClassVar[tuple[Field, ...]] = ()
    #: Capabilities a daemon of this version has for this type; it declares them when it registers.
    daemon_capabilities: ClassVar[frozenset[str]] = frozenset()
    #: The `op`s of `daemon_check` requests this type answers on the owning machine.
    daemon_ops: ClassVar[frozenset[str]] = frozenset()
    #: Rows of this type are made by the web's "Add local folder" picker (`folder_ref`).
    folder_picker: ClassVar[bool] = False
    #: The resources panel has an "add" form of this type's `form_fields` (None: only the generic
    #: JSON one, or the folder picker).
    web_form: ClassVar[WebForm | None] = None

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

    def conflict_message(self, ref: dict[str, Any]) -> str:
        """The 409's sentence when a row with the same `unique_key` exists."""
        return f"this project already has a {self.name} resource with the same key"

    def adders_machines_only(self, ref: dict[str, Any]) -> bool:
        """Whether only the daemons of the person who added this row may carry it (R-SEC-6): by
        default, a row whose repository URL is a folder on the fetching machine (`file://…`),
        which on anyone else's daemon would read *their* folder. The server keeps such a row from
        other people's claims and refuses its changes by anyone but that person."""
        from .local_urls import local_git_url

        url = self.repository_url(ref)
        return url is not None and local_git_url(url)

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

    def placement(self, ref: dict[str, Any], label: str | None, daemon_id: str | None) -> Placement | None:
        """Where the agent of a task on daemon `daemon_id` should run for this row (`placement`
        module); None: this row asks for no place. By default a row with a repository asks for a
        checkout of it."""
        url = self.repository_url(ref)
        return Placement(CHECKOUT, url=url, ref=ref.get("ref"), label=label) if url else None

    def check_folder(self, path: str) -> Any:
        """The path rules a folder this type places the agent in must pass, on the machine, before
        every task (R-LD-1): return its real path, or raise `PathRuleError` with the reason."""
        from .local_directory_paths import check_local_directory

        return check_local_directory(path)

    def answer_daemon_check(self, request: dict[str, Any]) -> str | None:
        """On the owning daemon: answer a `daemon_check` request (one of `daemon_ops`); a sentence
        saying why the row cannot be saved, or None when it can."""
        return None

    # -- people: CLI and web ----------------------------------------------------------------------
    def folder_ref(self, path: str, daemon_id: str, mode: str | None) -> dict[str, Any]:
        """The payload for a folder chosen in the web's picker. Only a type that declares
        `folder_picker` is asked, and such a type must define it (checked when it is declared)."""
        raise TypeError(f"resource type {self.name!r} makes no rows from the folder picker")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.folder_picker and cls.folder_ref is ResourceType.folder_ref:
            raise TypeError(f"resource type {cls.name or cls.__name__!r} declares folder_picker "
                            "but not folder_ref, the row a picked folder becomes")

    def form_field(self, key: str) -> Field | None:
        return next((f for f in self.form_fields if f.key == key), None)

    # -- web ----------------------------------------------------------------------------------
    def render_html(self, ref: dict[str, Any], label: str | None) -> str:
        return html.escape(self.describe(ref, label))


# An unknown type is refused with 400 and the list of known types (R-RES-6).
TYPES: Registry[ResourceType] = Registry("predictorx.resource_types", "name", lambda name, known: ResourceError(
    f"unknown resource type {name!r}; known types: {', '.join(known)}", status=400))

register = TYPES.register
unregister = TYPES.unregister
known_types = TYPES.names
get = TYPES.get


def daemon_capabilities() -> list[str]:
    """What a daemon declares: every registered type's capabilities, sorted."""
    return sorted(set().union(*(t.daemon_capabilities for t in TYPES.handlers())))


def answer_daemon_check(request: dict[str, Any]) -> tuple[bool, str | None] | None:
    """On a daemon: (ok, reason) for a server's `daemon_check` request, by the type that answers
    its `op`; None when no type here knows that op (the server's wait then says so)."""
    op = request.get("op")
    for handler in TYPES.handlers():
        if op in handler.daemon_ops:
            reason = handler.answer_daemon_check(request)
            return reason is None, reason
    return None


def folder_picker() -> ResourceType | None:
    """The type whose rows the web's folder picker makes, if one is registered."""
    return next((t for t in TYPES.handlers() if t.folder_picker), None)


def web_forms() -> list[ResourceType]:
    """The types with an "add" form of their own in the resources panel."""
    return [t for t in TYPES.handlers() if t.web_form is not None]


def by_web_form(form_id: str) -> ResourceType | None:
    return next((t for t in web_forms() if t.web_form and t.web_form.id == form_id), None)


def all_form_fields() -> dict[str, list[tuple[str, Field]]]:
    """Every registered type's hand-set fields, by key: key → [(type name, field), …]."""
    out: dict[str, list[tuple[str, Field]]] = {}
    for handler in TYPES.handlers():
        for f in handler.form_fields:
            out.setdefault(f.key, []).append((handler.name, f))
    return out


class _Row(Protocol):
    resource_type: str
    resource_ref: Any
    label: str | None


def choose_placement(rows: Iterable[_Row], daemon_id: str | None) -> Placement:
    """Where a task's agent runs: ask each row's type (`placement`); the best-ranked first answer
    wins, and with none the task gets a working directory of its own."""
    best: Placement | None = None
    for row in rows:
        try:
            handler = get(row.resource_type)
        except ResourceError:  # a type this machine does not know places nothing
            continue
        try:
            placed = handler.placement(dict(row.resource_ref or {}), row.label, daemon_id)
        except (KeyError, TypeError, ValueError):  # a payload it cannot read places nothing
            continue
        if placed is not None and placed.kind != OWN and (best is None or RANK[placed.kind] < RANK[best.kind]):
            best = replace(placed, resource_type=row.resource_type)
    return best or Placement(OWN)


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
