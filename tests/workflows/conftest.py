"""Harness tests: the diagrams beside these tests are in the seed's style (R-HAR-3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from predictorx.workflows.engine import Actor
from predictorx.workflows.library import load_library

DIAGRAMS = Path(__file__).parent / "diagrams"


@pytest.fixture(scope="session")
def lib():
    return load_library([DIAGRAMS])


@pytest.fixture
def agent() -> Actor:
    return Actor("agent", "a-1", "bot", frozenset({"agent"}))


@pytest.fixture
def person() -> Actor:
    return Actor("person", "u-1", "ann", frozenset({"stakeholder", "reviewer"}))


from tests.api.conftest import (  # noqa: E402,F401 — the API fixtures, for the route tests
    api,
    app,
)
