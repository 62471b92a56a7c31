"""A push target naming the server's relay (service/forgerelay.py): its path is joined to the server
URL the daemon uses now (several may be configured), and the push goes there with the relay pass
alone — the daemon's own token is not in it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from predictorx.daemon import forgepush, forgework, smartpush
from predictorx.daemon.serverapi import ServerApi

PASS = "pxr1.e30.c2ln"
ANSWER = {"remote_url": "/api/daemon/tasks/t-1/git", "branch": "agent/bot/t-1", "username": "predictorx-relay",
          "token": PASS, "extra": {"repo_path": "/nowhere", "lease": "", "tip": "a" * 40}}


def test_a_relay_path_is_joined_to_the_server_in_use_now():
    api = ServerApi(["http://127.0.0.1:7001/", "http://127.0.0.1:7002"], "pxd_own-token")
    assert forgework.target_from(ANSWER, api.server_url).remote_url == "http://127.0.0.1:7001/api/daemon/tasks/t-1/git"
    api._failed(0, "down")  # the next replica is the one in use now
    target = forgework.target_from(ANSWER, api.server_url)
    assert target.remote_url == "http://127.0.0.1:7002/api/daemon/tasks/t-1/git"
    forgepush.check_target(target)  # an http(s) URL git and smartpush push to
    assert forgework.target_from({**ANSWER, "remote_url": "https://forge.example/o/r.git"},
                                 api.server_url).remote_url == "https://forge.example/o/r.git"
    with pytest.raises(ValueError):
        forgework.target_from(ANSWER)
    asyncio.run(api.http.aclose())


def test_the_push_goes_to_the_relay_with_the_pass_alone(monkeypatch, tmp_path: Path):
    for name in smartpush._ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    target = forgework.target_from(ANSWER, "http://127.0.0.1:7001")
    assert smartpush.unsupported_here(target) is None  # the daemon speaks it itself, as to a forge
    env = forgepush.credential_env(target)
    assert "pxd_own-token" not in repr(env) and "Bearer" not in repr(env)
    seen: list[Any] = []

    async def push(repo: Path, local: str, given: Any, **kw: Any) -> forgepush.Pushed:
        seen.append(given)
        return forgepush.Pushed("a" * 40)

    monkeypatch.setattr(smartpush, "push", push)
    monkeypatch.setattr(forgework, "checked_repository", lambda root, path: tmp_path)
    ok, sha, error = asyncio.run(forgework.push_with(tmp_path, "t-1", ANSWER, server_url="http://127.0.0.1:7001"))
    assert ok and sha == "a" * 40 and error is None
    assert seen[0].remote_url == "http://127.0.0.1:7001/api/daemon/tasks/t-1/git" and seen[0].token == PASS
