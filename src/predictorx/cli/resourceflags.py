"""The `project resource add/update` flags that come from the resource types (R-RES-1).

Each registered type lists the payload keys people set by hand (`ResourceType.form_fields`);
every such key is one flag (`local_path` → `--local-path`), its help naming the types that use
it. The flags are read from the registry when the command line is built, so a plugin type's
fields are flags without a change here. `--ref` stays the seeds' overloaded flag: a checkout ref,
or `'{…}'`, the whole payload as JSON for any type.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Callable, Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from .. import resources as registry
from .client import fail

_GENERIC = {"ref"}  # flags the commands declare themselves


def _field_parameters(taken: set[str]) -> list[inspect.Parameter]:
    params = []
    for key, owners in registry.all_form_fields().items():
        if key in _GENERIC or key in taken or not key.isidentifier():
            continue
        helps = [f"{name}: {f.help}" if f.help else name for name, f in owners]
        option = typer.Option(None, owners[0][1].flag, help="; ".join(helps) + ".")
        params.append(inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=option,
                                        annotation=Optional[str]))
    return params


class WithFieldFlags:
    """A command whose parameters are `fn`'s own plus one flag per field; `fn` gets the fields'
    values (those given) as its `fields` argument."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__

    def _own(self) -> list[inspect.Parameter]:
        sig = inspect.signature(self.fn, eval_str=True)
        return [p for p in sig.parameters.values() if p.name != "fields"]

    @property
    def __signature__(self) -> inspect.Signature:  # read by typer when it builds the command
        own = self._own()
        return inspect.Signature([*own, *_field_parameters({p.name for p in own})])

    @property
    def __annotations__(self) -> dict[str, Any]:  # type: ignore[override]
        return {p.name: p.annotation for p in self.__signature__.parameters.values()}

    def __call__(self, **kwargs: Any) -> Any:
        own = {p.name for p in self._own()}
        fields = {k: kwargs.pop(k) for k in list(kwargs) if k not in own}
        return self.fn(**kwargs, fields={k: v for k, v in fields.items() if v is not None})


def ref_payload(ref: str | None) -> dict[str, Any] | None:
    """`--ref` is overloaded by the seeds: '{…}' is the generic JSON payload, anything else the
    checkout ref of a github_repo."""
    if ref is None or not ref.lstrip().startswith("{"):
        return None
    try:
        payload = json.loads(ref)
    except ValueError as e:
        fail(f"--ref looks like JSON but does not parse ({e.msg} at character {e.pos}); quote it like --ref '{{\"key\": \"value\"}}'", 2)
    if not isinstance(payload, dict):
        fail("--ref JSON must be an object", 2)
    return payload


def payload(ref: str | None, fields: dict[str, Any]) -> dict[str, Any]:
    """The resource payload from `--ref` (JSON, or a checkout ref) and the field flags given."""
    out = ref_payload(ref) or {}
    if ref is not None and not out:
        out["ref"] = ref
    out.update({k: v for k, v in fields.items() if v is not None})
    return out
