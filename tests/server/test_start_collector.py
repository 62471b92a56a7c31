"""`server start` builds the app with the garbage collector off (a quarter of the start's CPU went
to walking the objects it was still building); serving must find it on again, with what the start
built frozen, or the process would never free a cycle."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from predictorx.server import quietserver, run
from predictorx.server.web import render

from databases import sqlite_copy


def test_the_server_serves_with_the_collector_on_and_its_start_frozen(tmp_path: Path, sqlite_template: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}

    def serve(app, **options) -> None:  # where uvicorn would run until stopped
        seen.update(enabled=gc.isenabled(), frozen=gc.get_freeze_count())

    monkeypatch.setattr(quietserver, "serve", serve)
    monkeypatch.setattr(render.ENV, "bytecode_cache", render.ENV.bytecode_cache)  # serve() gives it one: not for later tests
    gc.disable()  # as `server start` does before its imports
    try:
        run.serve("127.0.0.1", 8484, db_url=sqlite_copy(sqlite_template, tmp_path / "px.db"))
    finally:
        gc.unfreeze()
        gc.enable()
    assert seen["enabled"] is True
    assert isinstance(seen["frozen"], int) and seen["frozen"] > 10_000
