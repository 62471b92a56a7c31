"""Loopback stand-ins for GitHub, GitLab and Gitea/Forgejo (issue 22), held to each forge's own
published API description; git over real smart HTTP. The fixture API is in fixtures.py and
docs/forges-testing.md."""

from .standin import StandIn, start_standin

__all__ = ["StandIn", "start_standin"]
