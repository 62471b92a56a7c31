"""Real agent CLIs against scripted model servers, through a real server and daemon (R-EX-9).

The CLIs come from `tests/realcli/node_modules` (`make test` installs them with `npm ci`). Where
they are missing the tests skip — and fail instead when PREDICTORX_REQUIRE_REAL_CLIS is set (CI).
"""

from __future__ import annotations

import pytest

from .clis import ACP_ONLY, ALL, RealCli
from .scenario import Scenario

MISSING = "no real CLI"


def pytest_collection_modifyitems(items):
    """A real CLI starts in seconds, but a loaded 2-core machine runs several at once."""
    for item in items:
        if "realcli" in str(item.fspath):
            item.add_marker(pytest.mark.timeout(600))


def require(provider: str) -> RealCli:
    cli = ALL.get(provider) or ACP_ONLY[provider]
    if cli.path() is None:
        pytest.skip(f"{MISSING} {cli.executable} in tests/realcli/node_modules (`make test` installs it with npm ci)")
    return cli


@pytest.fixture
def scenario(tmp_path, request):
    """`scenario(provider)`: a server on SQLite, a model server and a daemon for that real CLI."""
    made: list[Scenario] = []

    def make(provider: str, **kw) -> Scenario:
        s = Scenario(require(provider), tmp_path / f"{provider}-{len(made)}", **kw)
        made.append(s)
        return s
    yield make
    for s in made:
        s.close()
