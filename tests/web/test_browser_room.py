"""In Chromium: a project's agents-room room, read-only (issue 13 §4) — who is in it (live),
recent messages in threads, active leases — read through the real `agents-room` command."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

from predictorx.agentsroom import project_room

pytestmark = pytest.mark.browser
AGENTS_ROOM = str(Path(sys.executable).with_name("agents-room"))


def room(db: Path, *args: str) -> dict:
    out = subprocess.run([AGENTS_ROOM, "--db", str(db), *args, "--json"], check=True, capture_output=True,
                         text=True, timeout=30).stdout
    return json.loads(out)


def test_project_room_shows_who_messages_and_leases(page, live, tmp_path, monkeypatch, axe):
    db = tmp_path / "room.db"
    monkeypatch.setenv("AGENTS_ROOM_DB", str(db))
    project = live.post("/api/projects", {"title": "Storefront"})
    page.goto(f"/projects/{project['id']}/room")
    expect(page.locator("#room-unavailable")).to_contain_text("No agents-room store")

    name = f"shared:{project_room(project['id'], 'Storefront')}"
    repo = tmp_path / "web-repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=30)
    api = room(db, "join", "--room", name, "--label", "claude-api", "--cwd", str(tmp_path))["session"]
    web = room(db, "join", "--room", name, "--label", "codex-web", "--cwd", str(repo))["session"]
    sent = room(db, "send", "--session", api, "--to", "*", "--room", name, "the /orders API now paginates")
    room(db, "send", "--session", web, "--reply-to", str(sent.get("id") or sent.get("message_id")), "--room", name,
         "thanks, the web client follows")
    # Leases are taken over MCP; the test takes one through agents-room's public Room API.
    from agents_room.room import Room

    store = Room.open(db)
    try:
        store.lease_acquire(web, ["src/checkout.ts"])
    finally:
        store.close()
    page.goto(f"/projects/{project['id']}/room")
    expect(page.locator("#room-sessions li[data-session]")).to_have_count(2)
    expect(page.locator("#room-sessions")).to_contain_text("claude-api")
    thread = page.locator(".thread").filter(has_text="the /orders API now paginates")
    expect(thread).to_have_count(1)
    expect(thread).to_contain_text("thanks, the web client follows")  # the reply sits in its thread
    expect(thread.locator("li.reply")).to_have_count(1)
    expect(page.locator("#room-lease-list")).to_contain_text("checkout.ts")
    expect(page.locator("#room-lease-list")).to_contain_text("codex-web")
    # Times the human way, the exact one on hover; states in words (issue 26 §8)
    whole = page.locator("#room").inner_text()
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:", whole) and "no-pid" not in whole, whole
    seen = page.locator("#room-sessions time").first
    expect(seen).to_have_text(re.compile(r"just now|\d+ min ago"))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", seen.get_attribute("title") or "")
    expect(page.locator("#room-lease-list time")).to_have_text(re.compile(r"in \d+ (min|h)"))
    expect(page.locator("#room-sessions .session-state").first).to_have_text(re.compile(r"online"))
    assert not axe(page)

    # Live: a third agent joins and the page shows it without a reload.
    room(db, "join", "--room", name, "--label", "gemini-docs", "--cwd", str(tmp_path))
    expect(page.locator("#room-sessions li[data-session]")).to_have_count(3, timeout=15000)
