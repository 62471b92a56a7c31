"""Finding 3, the daemon's side (R-SEC-5): a real daemon registers once with its owner's token,
then runs on its own daemon-scoped token kept 0600 in its state dir — a restart needs no person's
token at all — and a daemon whose owner was removed stops instead of running on."""

from __future__ import annotations

import json
import stat

from .harness import Daemon, wait_until


def test_finding_03_daemon_runs_on_its_own_token(server, start_daemon):
    daemon = start_daemon("own")
    saved = daemon.home / "daemon_token.json"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    data = json.loads(saved.read_text())
    assert data["token"].startswith("pxd_") and data["daemon_id"] == daemon.id
    assert server.token not in saved.read_text()
    daemon.stop()
    # No person's token anywhere in its reach: it starts, registers and connects on its own token.
    config = json.loads((daemon.home / "config.json").read_text())
    config.pop("token")
    (daemon.home / "config.json").write_text(json.dumps(config))
    again = Daemon(server, daemon.home)
    try:
        assert "registering again with its owner's token" not in again.output()
        assert json.loads(saved.read_text())["token"] == data["token"]
    finally:
        again.stop()


def test_finding_04_a_removed_members_daemon_stops(server, start_daemon, tmp_path):
    ws = server.api("GET", "/api/workspaces")[0]["id"]
    bob = server.api("POST", f"/api/workspaces/{ws}/members", {"name": "bob"})
    home = tmp_path / "bob-home"
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"server_url": server.url, "token": bob["token"],
                                                  "workspace_id": ws}))
    (server.home / "config.json").rename(server.home / "config.owner.json")
    try:
        (server.home / "config.json").write_text((home / "config.json").read_text())
        daemon = start_daemon("bob")  # copies the server's config.json: bob's
    finally:
        (server.home / "config.owner.json").replace(server.home / "config.json")
    assert server.api("GET", f"/api/daemons/{daemon.id}")["owner_id"] == bob["user_id"]
    server.api("DELETE", f"/api/workspaces/{ws}/members/{bob['user_id']}")
    try:
        wait_until(lambda: daemon.proc.poll() is not None, 30, what="the removed member's daemon to stop")
    except AssertionError:
        raise AssertionError(daemon.output()[-3000:]) from None
    assert "may no longer run for this workspace" in daemon.output()
    assert server.api("GET", f"/api/daemons/{daemon.id}")["online"] is False
