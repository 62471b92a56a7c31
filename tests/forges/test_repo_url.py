"""Which repository a git URL names on a connection (Forge.repo_from_url), for every kind."""

from __future__ import annotations

import pytest

from predictorx.forges import registry
from predictorx.forges.base import RepoRef


@pytest.mark.parametrize("kind", ["github", "gitea", "forgejo"])
@pytest.mark.parametrize("url", [
    "https://git.example.org/acme/widgets",
    "https://git.example.org/acme/widgets.git",
    "https://git.example.org/acme/widgets.git/",
    "https://GIT.example.org:443/acme/widgets",
    "ssh://git@git.example.org/acme/widgets.git",
    "ssh://git@git.example.org:2222/acme/widgets.git",
    "git@git.example.org:acme/widgets.git",
    "git.example.org:acme/widgets",
    "https://user:secret@git.example.org/acme/widgets.git",
])
def test_two_part_urls_on_the_host(kind: str, url: str) -> None:
    assert registry.get(kind).repo_from_url("https://git.example.org", url) == RepoRef("acme/widgets")


@pytest.mark.parametrize("kind", ["github", "gitlab", "gitea", "forgejo"])
@pytest.mark.parametrize("url", [
    "https://elsewhere.example.org/acme/widgets.git",
    "https://git.example.org:8443/acme/widgets.git",   # same host, another port: another server
    "http://git.example.org/acme/widgets.git",         # port 80 is not 443
    "git@elsewhere.example.org:acme/widgets.git",
    "/srv/git/acme/widgets.git",
    "file:///srv/git/acme/widgets.git",
    "https://git.example.org/widgets",                  # one segment is no repository
    "",
    "not a url at all",
])
def test_urls_elsewhere_are_none(kind: str, url: str) -> None:
    assert registry.get(kind).repo_from_url("https://git.example.org", url) is None


def test_github_paths_are_exactly_owner_and_name() -> None:
    github = registry.get("github")
    assert github.repo_from_url("https://github.com", "https://github.com/a/b/c.git") is None
    assert github.repo_from_url("https://github.com", "git@github.com:octo-org/hello.git") == RepoRef("octo-org/hello")


def test_port_in_the_base_url_must_match() -> None:
    gitea = registry.get("gitea")
    base = "http://127.0.0.1:3000"
    assert gitea.repo_from_url(base, "http://127.0.0.1:3000/o/r.git") == RepoRef("o/r")
    assert gitea.repo_from_url(base, "http://127.0.0.1:3001/o/r.git") is None
    assert gitea.repo_from_url(base, "git@127.0.0.1:o/r.git") == RepoRef("o/r")  # ssh: the host name only


def test_gitlab_nested_groups_prefix_and_web_tail() -> None:
    gitlab = registry.get("gitlab")
    assert gitlab.repo_from_url("https://gitlab.com", "https://gitlab.com/g/sub/deeper/proj.git") == RepoRef("g/sub/deeper/proj")
    assert gitlab.repo_from_url("https://gitlab.com", "git@gitlab.com:g/sub/proj.git") == RepoRef("g/sub/proj")
    assert gitlab.repo_from_url("https://gitlab.com", "https://gitlab.com/g/proj/-/tree/main") == RepoRef("g/proj")
    # A self-managed GitLab served under a path: the prefix is not part of the project path.
    base = "https://example.com/gitlab"
    assert gitlab.repo_from_url(base, "https://example.com/gitlab/g/proj.git") == RepoRef("g/proj")
    assert gitlab.repo_from_url(base, "https://example.com/other/g/proj.git") is None


@pytest.mark.parametrize("kind,base,api", [
    ("github", "https://github.com", "https://api.github.com"),
    ("github", "https://github.com/", "https://api.github.com"),
    ("github", "https://ghe.example.com", "https://ghe.example.com/api/v3"),
    ("gitlab", "https://gitlab.example.com/", "https://gitlab.example.com/api/v4"),
    ("gitea", "https://gitea.example.com", "https://gitea.example.com/api/v1"),
    ("forgejo", "https://codeberg.org", "https://codeberg.org/api/v1"),
])
def test_default_api_url(kind: str, base: str, api: str) -> None:
    assert registry.get(kind).default_api_url(base) == api


def test_builtin_kinds_are_registered() -> None:
    assert set(registry.known_kinds()) >= {"github", "gitlab", "gitea", "forgejo"}
