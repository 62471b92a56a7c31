"""daemon/forgepush.py against real git smart HTTP (`git http-backend` behind nginx with basic
auth, tests/forgestand): a push and a fetch with the credential in git's environment only, a
lease that refuses to overwrite someone else's commit, a refused credential whose sentence holds
no secret, and nothing of the credential left in the repository's files."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest

from predictorx.daemon import forgepush
from predictorx.forges.base import PushTarget

pytest_plugins = ["forgestand.fixtures"]
REPO = "acme/lib"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True,
                          timeout=60).stdout.strip()


def _clone(standin, tmp_path: Path) -> Path:
    here = tmp_path / "lib"
    _git(tmp_path, "clone", "-q", standin.authed_url(REPO), str(here))
    _git(here, "remote", "set-url", "origin", standin.repo(REPO).clone_url)
    return here


def _commit(repo: Path, name: str, text: str) -> str:
    (repo / name).write_text(text)
    _git(repo, "add", name)
    _git(repo, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", f"edit {name}")
    return _git(repo, "rev-parse", "HEAD")


def _target(standin, token: str | None = None, branch: str = "agent/bot/t1") -> PushTarget:
    return PushTarget(remote_url=standin.repo(REPO).clone_url, branch=branch, username=standin.git_username,
                      token=token or standin.token)


def test_push_lease_fetch_and_a_refused_credential(github_standin, tmp_path: Path) -> None:
    standin = github_standin
    standin.create_repo(REPO, {"README.md": "hi\n"})
    here = _clone(standin, tmp_path)
    _git(here, "checkout", "-qb", "agent/bot/t1")
    first = _commit(here, "a.txt", "one\n")

    pushed = forgepush.push(here, "refs/heads/agent/bot/t1", _target(standin), lease=None)
    assert pushed.sha == first == standin.branch_head(REPO, "agent/bot/t1")
    # A second push with the branch there and no lease (not ours): refused, nothing overwritten.
    second = _commit(here, "a.txt", "two\n")
    with pytest.raises(forgepush.PushError, match="changed since"):
        forgepush.push(here, "refs/heads/agent/bot/t1", _target(standin), lease=None)
    assert forgepush.push(here, "refs/heads/agent/bot/t1", _target(standin), lease=first).sha == second
    # Someone pushes on the forge: a push leased on what we pushed last refuses to overwrite it.
    theirs = standin.commit_on_server(REPO, "agent/bot/t1", {"b.txt": "reviewer\n"}, "reviewer")
    _commit(here, "a.txt", "three\n")
    with pytest.raises(forgepush.PushError, match="changed since"):
        forgepush.push(here, "refs/heads/agent/bot/t1", _target(standin), lease=second)
    assert standin.branch_head(REPO, "agent/bot/t1") == theirs
    # The follow-up's way: fetch the forge's head, adopt it, build on it, push leased on it.
    fetched = forgepush.fetch(here, _target(standin), "refs/predictorx/forge/t2")
    assert fetched == theirs
    local = _git(here, "rev-parse", "HEAD")
    start = forgepush.adopt(here / ".git", "agent/bot/t1", fetched, "refs/predictorx/kept/t2-before")
    assert start == fetched and _git(here, "rev-parse", "refs/predictorx/kept/t2-before") == local

    wrong = "wrong-" + standin.token[::-1]
    basic = base64.b64encode(f"{standin.git_username}:{wrong}".encode()).decode()
    with pytest.raises(forgepush.PushError) as refused:
        forgepush.push(here, "refs/heads/agent/bot/t1", _target(standin, wrong), lease=theirs)
    assert wrong not in str(refused.value) and basic not in str(refused.value)
    for f in (here / ".git").rglob("*"):  # nothing of any credential was written into the repository
        if f.is_file() and f.stat().st_size < 5_000_000:
            data = f.read_bytes()
            assert standin.token.encode() not in data and wrong.encode() not in data, f


def test_credential_env_is_scoped_to_the_remote_and_turns_helpers_off() -> None:
    t = PushTarget(remote_url="https://forge.example/o/r.git", branch="b", username="x-access-token", token="tok")
    env = forgepush.credential_env(t)
    pairs = {env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"] for i in range(int(env["GIT_CONFIG_COUNT"]))}
    basic = base64.b64encode(b"x-access-token:tok").decode()
    assert pairs == {"http.https://forge.example/o/r.git.extraHeader": f"Authorization: Basic {basic}",
                     "credential.helper": "", "core.askPass": ""}
    assert env["GIT_TERMINAL_PROMPT"] == "0" and env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert forgepush.scrub(f"fatal: {basic} tok https://u:tok@h/x", t) == "fatal: *** *** https://***@h/x"
    with pytest.raises(forgepush.PushError, match="not an http"):
        forgepush.push(Path("/"), "HEAD", PushTarget("ssh://h/o/r", "b", "u", "t"), lease=None)
