"""daemon/smartpush.py against real git smart HTTP (`git http-backend` behind nginx, tests/forgestand):
the daemon's own receive-pack push makes a new branch and updates it (leased), refuses to overwrite
a commit someone pushed meanwhile (before sending, and — with refs discovered earlier — under the
server's own ref lock), leaves a refused credential and what it does not speak to `git push`, and
never puts the token in a child's command line or environment (a `git` shim on PATH records both)."""

from __future__ import annotations

import asyncio
import base64
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from predictorx.daemon import forgepush, forgework, smartpush
from predictorx.daemon.gitobjects import present
from predictorx.forges.base import PushTarget

pytest_plugins = ["forgestand.fixtures"]
REPO = "acme/lib"
BRANCH = "agent/bot/t1"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True,
                          timeout=60).stdout.strip()


def _commit(repo: Path, name: str, text: str) -> str:
    (repo / name).write_text(text)
    _git(repo, "add", name)
    _git(repo, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", f"edit {name}")
    return _git(repo, "rev-parse", "HEAD")


def _target(standin, token: str | None = None) -> PushTarget:
    return PushTarget(remote_url=standin.repo(REPO).clone_url, branch=BRANCH, username=standin.git_username,
                      token=token or standin.token)


def _answer(target: PushTarget, repo: Path, tip: str, lease: str = "") -> dict:
    return {"remote_url": target.remote_url, "branch": target.branch, "username": target.username,
            "token": target.token, "extra": {"repo_path": str(repo), "tip": tip, "lease": lease}}


def _agents(standin) -> list[str]:
    """The User-Agent of each git request nginx logged (its default log format ends with it)."""
    log = standin.root / "nginx" / "access.log"
    return [line.rsplit('"', 2)[-2] for line in log.read_text().splitlines() if ".git/" in line]


@pytest.fixture
def here(github_standin, tmp_path: Path) -> Path:
    github_standin.create_repo(REPO, {"README.md": "hi\n"})
    folder = tmp_path / "lib"
    _git(tmp_path, "clone", "-q", github_standin.authed_url(REPO), str(folder))
    _git(folder, "remote", "set-url", "origin", github_standin.repo(REPO).clone_url)
    _git(folder, "checkout", "-qb", BRANCH)
    _git(folder, "gc", "-q")  # the base's objects in a pack: the advertised head is found in its index
    return folder


def test_a_new_branch_then_an_update_leased_on_it_and_a_refused_overwrite(github_standin, here: Path) -> None:
    standin = github_standin
    main = standin.branch_head(REPO, "main")
    assert present(here / ".git", [main, "0" * 40, "1" * 40]) == {main}
    first = _commit(here, "a.txt", "one\n")
    target = _target(standin)

    assert asyncio.run(smartpush.push(here, first, target, lease=None, is_git_dir=False)).sha == first
    assert standin.branch_head(REPO, BRANCH) == first
    assert _agents(standin)[-2:] == [smartpush.AGENT, smartpush.AGENT]  # discovery and push: no git process
    # Not ours to overwrite (no lease): refused before anything is sent.
    second = _commit(here, "a.txt", "two\n")
    with pytest.raises(forgepush.PushError, match="changed since"):
        asyncio.run(smartpush.push(here, second, target, lease=None, is_git_dir=False))
    assert asyncio.run(smartpush.push(here, second, target, lease=first, is_git_dir=False)).sha == second
    assert standin.branch_head(REPO, BRANCH) == second
    # The same tip again: nothing to send, it is there.
    assert asyncio.run(smartpush.push(here, second, target, lease=first, is_git_dir=False)).sha == second

    async def with_discovery_under_way(tip: str, lease: str) -> str:
        return (await smartpush.push(here, tip, target, lease=lease, is_git_dir=False,
                                     session=asyncio.ensure_future(smartpush.discover(target)))).sha
    fourth = _commit(here, "c.txt", "four\n")  # a follow-up: pushed as its refs arrive
    assert asyncio.run(with_discovery_under_way(fourth, second)) == fourth == standin.branch_head(REPO, BRANCH)
    second = fourth

    # Refs discovered, then someone pushes on the forge: the server's ref lock refuses the stale update.
    third = _commit(here, "a.txt", "three\n")

    async def stale() -> None:
        session = await smartpush.discover(target)
        standin.commit_on_server(REPO, BRANCH, {"b.txt": "reviewer\n"}, "reviewer")
        await smartpush.push(here, third, target, lease=second, is_git_dir=False, session=session)
    with pytest.raises(forgepush.PushError, match="changed since"):
        asyncio.run(stale())
    theirs = standin.branch_head(REPO, BRANCH)
    assert theirs not in (second, third)
    with pytest.raises(forgepush.PushError, match="changed since"):  # and without a session: checked first
        asyncio.run(smartpush.push(here, third, target, lease=second, is_git_dir=False))
    assert standin.branch_head(REPO, BRANCH) == theirs


def test_a_refused_credential_is_left_to_git_push_whose_sentence_holds_no_secret(github_standin, here: Path) -> None:
    tip = _commit(here, "a.txt", "one\n")
    wrong = "wrong-" + github_standin.token[::-1]
    target = _target(github_standin, wrong)
    with pytest.raises(smartpush.Unsupported, match="401"):
        asyncio.run(smartpush.discover(target))
    ok, sha, error = asyncio.run(forgework.push_with(here.parent, "t1", _answer(target, here, tip), here / ".git"))
    basic = base64.b64encode(f"{target.username}:{wrong}".encode()).decode()
    assert ok is False and sha is None and error and wrong not in error and basic not in error
    assert github_standin.branch_head(REPO, BRANCH) is None
    assert _agents(github_standin)[-1].startswith("git/2")  # git push made the second try


def test_what_it_does_not_speak_goes_through_git_push(github_standin, here: Path, monkeypatch) -> None:
    tip = _commit(here, "a.txt", "one\n")
    monkeypatch.setenv("GIT_HTTP_USER_AGENT", "git/fallback")  # an HTTP setting of git's: git pushes
    target = _target(github_standin)
    ok, sha, error = asyncio.run(forgework.push_with(here.parent, "t1", _answer(target, here, tip), here / ".git"))
    assert (ok, sha, error) == (True, tip, None)
    assert github_standin.branch_head(REPO, BRANCH) == tip
    assert set(_agents(github_standin)[-2:]) == {"git/fallback"}
    monkeypatch.delenv("GIT_HTTP_USER_AGENT")
    _git(here, "config", "http.postBuffer", "1048576")  # the same in the repository's config
    with pytest.raises(smartpush.Unsupported, match="config"):
        smartpush.git_dir_of(here, False)


def test_the_token_reaches_no_childs_argv_or_environment(github_standin, here: Path, tmp_path: Path,
                                                         monkeypatch) -> None:
    shim_dir, record = tmp_path / "shim", tmp_path / "git-calls.txt"
    shim_dir.mkdir()
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True, check=True).stdout.strip()
    shim = shim_dir / "git"
    shim.write_text(f"#!{sys.executable}\nimport os, sys\n"
                    f"with open({str(record)!r}, 'a') as f:\n"
                    "    f.write(repr(sys.argv) + repr(dict(os.environ)) + '\\n')\n"
                    f"os.execv({real!r}, [{real!r}] + sys.argv[1:])\n")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{shim_dir}{os.pathsep}{os.environ['PATH']}")
    tip = _commit(here, "a.txt", "one\n")
    target = _target(github_standin)
    ok, _sha, _error = asyncio.run(forgework.push_with(here.parent, "t1", _answer(target, here, tip), here / ".git"))
    assert ok is True and github_standin.branch_head(REPO, BRANCH) == tip
    calls = record.read_text()
    assert "pack-objects" in calls and "'push'" not in calls  # the daemon spoke receive-pack itself
    basic = base64.b64encode(f"{target.username}:{target.token}".encode()).decode()
    assert target.token not in calls and basic not in calls


def test_a_proxy_or_a_tls_setting_of_gits_leaves_the_push_to_git(monkeypatch) -> None:
    plain = PushTarget(remote_url="http://127.0.0.1:9/o/app.git", branch=BRANCH, username="x", token="t")
    tls = PushTarget(remote_url="https://forge.example/o/app.git", branch=BRANCH, username="x", token="t")
    for name in [n for n in os.environ if n.startswith(("GIT_SSL_", "GIT_HTTP_", "GIT_CURL_")) or "proxy" in n.lower()
                 or n in ("SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE")]:
        monkeypatch.delenv(name)
    assert smartpush.unsupported_here(plain) is None and smartpush.unsupported_here(tls) is None
    monkeypatch.setenv("GIT_SSL_CAINFO", "/etc/ssl/certs/ca-certificates.crt")  # used as git uses it
    assert smartpush.unsupported_here(tls) is None
    monkeypatch.setenv("GIT_SSL_NO_VERIFY", "1")  # a TLS setting: only for an https remote
    assert smartpush.unsupported_here(plain) is None and "GIT_SSL_NO_VERIFY" in (smartpush.unsupported_here(tls) or "")
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")
    monkeypatch.delenv("GIT_SSL_NO_VERIFY")
    assert "https_proxy" in (smartpush.unsupported_here(plain) or "")
    with_token = PushTarget(remote_url="https://x:tok@forge.example/o/app.git", branch=BRANCH, username="x", token="t")
    assert "credentials" in (smartpush.unsupported_here(with_token) or "")
