"""One plugin registry for resource types and agent adapters (issue 10): both are `plugins.Registry`
objects, loaded from their entry-point group on first use, with the same register/unregister/get."""

from __future__ import annotations

import pytest

from predictorx import agents, plugins, resources
from predictorx.agents import registry as adapters
from predictorx.resources import registry as types


def test_both_registries_are_the_one_mechanism() -> None:
    assert isinstance(types.TYPES, plugins.Registry) and isinstance(adapters.ADAPTERS, plugins.Registry)
    assert (types.TYPES.group, adapters.ADAPTERS.group) == ("predictorx.resource_types", "predictorx.agent_adapters")
    assert {"github_repo", "local_directory"} <= set(resources.known_types())
    assert {"claude", "codex"} <= set(agents.known_providers())


def test_a_resource_type_plugin_loads_from_its_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    class Sheet(resources.ResourceType):
        name = "sheet"

    class EntryPoint:
        def load(self):
            return Sheet

    monkeypatch.setattr(types.TYPES, "loaded", False)
    monkeypatch.setattr(plugins, "entry_points",
                        lambda group: [EntryPoint()] if group == "predictorx.resource_types" else [])
    try:
        assert "sheet" in resources.known_types() and isinstance(resources.get("sheet"), Sheet)
    finally:
        resources.unregister("sheet")
    with pytest.raises(resources.ResourceError) as err:
        resources.get("sheet")
    assert err.value.status == 400 and "known types: github_repo, local_directory" in str(err.value)


def test_a_handler_needs_its_name() -> None:
    with pytest.raises(ValueError, match="needs a name"):
        resources.register(type("Nameless", (resources.ResourceType,), {}))
    with pytest.raises(ValueError, match="needs a provider"):
        agents.register(type("Nameless", (agents.AgentAdapter,), {}))


def test_a_folder_picker_type_must_say_what_a_picked_folder_becomes() -> None:
    """The web's picker asks `folder_picker` types for `folder_ref`: a type that declares the one
    without the other is refused when it is declared, not when a person picks a folder."""
    with pytest.raises(TypeError, match="declares folder_picker but not folder_ref"):
        class Drive(resources.ResourceType):
            name = "drive"
            folder_picker = True

    class Sheet(resources.ResourceType):
        name = "sheet"

    with pytest.raises(TypeError, match="makes no rows from the folder picker"):
        Sheet().folder_ref("/srv", "d", None)
