import logging

import pytest

# The forge stand-ins (tests/forgestand) for the client tests; pytest_plugins only works in the
# root conftest, so the fixtures are imported here.
from forgestand.fixtures import (forge_standin_factory, forgejo_standin, gitea_standin,  # noqa: F401
                                 github_standin, gitlab_standin)


@pytest.fixture(autouse=True)
def no_token_in_logs(request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture):
    """Whatever a test drives, a stand-in's token shows up in no log record, at any level."""
    caplog.set_level(logging.DEBUG)
    yield
    # In teardown `caplog.text` holds only teardown's records: read the test's own.
    records = caplog.get_records("setup") + caplog.get_records("call")
    logged = "\n".join(f"{r.getMessage()} {r.args!r}" for r in records)
    tokens = [t for t in (getattr(v, "token", None) for v in request.node.funcargs.values())
              if isinstance(t, str) and t]
    if tokens:
        assert any(r.name.startswith("predictorx.forges") for r in records), "the clients logged nothing"
        assert not any(t in logged for t in tokens), "a forge token reached a log"
