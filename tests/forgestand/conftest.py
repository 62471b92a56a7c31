# The stand-in fixtures for these tests (another conftest does the same: pytest_plugins only works
# in the root conftest).
from forgestand.fixtures import (any_standin, forge_standin_factory, forgejo_standin,  # noqa: F401
                                 gitea_standin, github_standin, gitlab_standin, webhook_receiver)
