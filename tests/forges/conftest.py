# The forge stand-ins (tests/forgestand) for the client tests; pytest_plugins only works in the
# root conftest, so the fixtures are imported here.
from forgestand.fixtures import (forge_standin_factory, forgejo_standin, gitea_standin,  # noqa: F401
                                 github_standin, gitlab_standin)
