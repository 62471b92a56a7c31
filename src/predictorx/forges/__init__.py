"""Forges behind one interface (issue 22): GitHub, GitLab, Gitea, Forgejo. See `base`.

Importing this package registers the built-in kinds through `registry.register`, the same call a
plugin's entry point (group `predictorx.forges`) gets."""

from . import gitea, github, gitlab  # noqa: F401  (registration side effect)
