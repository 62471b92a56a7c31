"""pytest fixtures for the forge stand-ins: `pytest_plugins = ["forgestand.fixtures"]` in a conftest.

Every stand-in a test starts is stopped at teardown, and the test FAILS there when the stand-in
recorded a violation (a request or answer its forge's description refuses)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest

from .standin import StandIn, start_standin

KINDS = ("github", "gitlab", "gitea", "forgejo")


@pytest.fixture
def forge_standin_factory(tmp_path: Path) -> Iterator[Callable[[str], StandIn]]:
    started: list[StandIn] = []

    def start(kind: str) -> StandIn:
        standin = start_standin(kind, tmp_path / f"standin-{kind}-{len(started)}")
        started.append(standin)
        return standin

    yield start
    for standin in started:
        standin.stop()
    problems = [f"{s.kind}: {v}" for s in started for v in s.violations]
    if problems:
        pytest.fail("the forge stand-in recorded violations of the forge's API description:\n  "
                    + "\n  ".join(problems[:20]), pytrace=False)


@pytest.fixture
def github_standin(forge_standin_factory) -> StandIn:
    return forge_standin_factory("github")


@pytest.fixture
def gitlab_standin(forge_standin_factory) -> StandIn:
    return forge_standin_factory("gitlab")


@pytest.fixture
def gitea_standin(forge_standin_factory) -> StandIn:
    return forge_standin_factory("gitea")


@pytest.fixture
def forgejo_standin(forge_standin_factory) -> StandIn:
    return forge_standin_factory("forgejo")


@pytest.fixture(params=KINDS)
def any_standin(request, forge_standin_factory) -> StandIn:
    return forge_standin_factory(request.param)
