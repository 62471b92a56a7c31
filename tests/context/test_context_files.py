"""`.predictorx/project/resources.json` (R-CTX-1) and best-effort preparation (R-CTX-5)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from predictorx.daemon.context import prepare as context_mod
from predictorx.daemon.context.prepare import prepare_context
from predictorx.daemon.context.resourcesjson import write_resources_json
from predictorx.daemon.context.types import RESOURCES_JSON, Resource, TaskContext

CTX = TaskContext(
    project_id="p1", project_title="Agent UX 2026", project_description="desc",
    resources=(Resource("r1", "github_repo", {"url": "https://github.com/acme/shop", "default_branch_hint": "main"}),
               Resource("r2", "notion_page", {"page_id": "x"}, "roadmap")),
)


def snapshot(folder: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames:
            out[os.path.relpath(os.path.join(dirpath, name), folder) + "/"] = None
        for name in filenames:
            path = os.path.join(dirpath, name)
            out[os.path.relpath(path, folder)] = Path(path).read_bytes()
    return out


def test_content_and_removal(tmp_path: Path) -> None:
    files = write_resources_json(tmp_path, CTX, task_id="t1")
    data = json.loads((tmp_path / RESOURCES_JSON).read_text())
    assert data["project_id"] == "p1" and data["project_title"] == "Agent UX 2026"
    assert data["project_description"] == "desc"
    assert data["resources"] == [
        {"id": "r1", "resource_type": "github_repo",
         "resource_ref": {"url": "https://github.com/acme/shop", "default_branch_hint": "main"}, "label": None},
        {"id": "r2", "resource_type": "notion_page", "resource_ref": {"page_id": "x"}, "label": "roadmap"},
    ]
    assert data["generated_by"] == "predictorx" and data["task_id"] == "t1"
    assert files.dirs == [tmp_path / ".predictorx", tmp_path / ".predictorx" / "project"]
    files.remove()
    assert snapshot(tmp_path) == {}


def test_never_overwrites_the_users_file(tmp_path: Path) -> None:
    target = tmp_path / RESOURCES_JSON
    target.parent.mkdir(parents=True)
    target.write_text('{"mine": true}')
    before = snapshot(tmp_path)
    files = write_resources_json(tmp_path, CTX)
    assert files.skipped and "belongs to the user" in files.skipped
    assert files.files == [] and files.dirs == []
    files.remove()
    assert snapshot(tmp_path) == before


def test_not_json_is_the_users_too(tmp_path: Path) -> None:
    target = tmp_path / RESOURCES_JSON
    target.parent.mkdir(parents=True)
    target.write_text("notes, not json")
    assert write_resources_json(tmp_path, CTX).skipped
    assert target.read_text() == "notes, not json"


def test_stale_file_of_ours_is_replaced(tmp_path: Path) -> None:
    write_resources_json(tmp_path, TaskContext(project_id="old", project_title="Old"))  # crashed run
    files = write_resources_json(tmp_path, CTX)
    assert json.loads((tmp_path / RESOURCES_JSON).read_text())["project_id"] == "p1"
    assert files.files == [tmp_path / RESOURCES_JSON]


def test_only_what_we_made_is_removed(tmp_path: Path) -> None:
    (tmp_path / ".predictorx").mkdir()
    (tmp_path / ".predictorx" / "user-notes.txt").write_text("mine")
    files = write_resources_json(tmp_path, CTX)
    assert files.dirs == [tmp_path / ".predictorx" / "project"]
    (tmp_path / ".predictorx" / "project" / "agent.txt").write_text("the agent left this")
    files.remove()
    assert (tmp_path / ".predictorx" / "user-notes.txt").read_text() == "mine"
    assert (tmp_path / ".predictorx" / "project" / "agent.txt").exists()
    assert not (tmp_path / RESOURCES_JSON).exists()


def test_symlink_on_the_way_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / ".predictorx").symlink_to(outside)
    files = write_resources_json(folder, CTX)
    assert files.skipped and "symlink" in files.skipped
    assert list(outside.iterdir()) == []


# -- prepare_context ------------------------------------------------------------------------------

async def test_prepare_and_cleanup_leave_a_persons_folder_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_bytes(b"# House rules\r\nNo force pushes.")
    (tmp_path / "src.py").write_text("print(1)\n")
    before = snapshot(tmp_path)
    prepared = await prepare_context(tmp_path, "claude", "task-1", CTX)
    assert prepared.error is None and "## Project Context" in prepared.block
    assert (tmp_path / RESOURCES_JSON).exists()
    assert b"## Repositories" in (tmp_path / "CLAUDE.md").read_bytes()
    prepared.cleanup()
    prepared.cleanup()  # idempotent
    assert snapshot(tmp_path) == before


async def test_async_loader_and_provider_file(tmp_path: Path) -> None:
    async def load() -> TaskContext:
        return CTX

    prepared = await prepare_context(tmp_path, "codex", "t", load)
    assert (tmp_path / "AGENTS.md").exists() and not (tmp_path / "CLAUDE.md").exists()
    prepared.cleanup()
    assert snapshot(tmp_path) == {}


async def test_fetch_failure_runs_without_context(tmp_path: Path, caplog) -> None:
    def load() -> TaskContext:
        raise ConnectionError("server unreachable")

    prepared = await prepare_context(tmp_path, "claude", "t", load)
    assert prepared.error and "server unreachable" in prepared.error
    assert prepared.block == "" and snapshot(tmp_path) == {}
    assert "runs without project context" in caplog.text
    prepared.cleanup()


async def test_render_failure_undoes_the_file(tmp_path: Path, monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("renderer bug")

    monkeypatch.setattr(context_mod, "render_context_block", broken)
    prepared = await prepare_context(tmp_path, "claude", "t", CTX)
    assert prepared.error and "renderer bug" in prepared.error
    assert snapshot(tmp_path) == {}


async def test_instruction_file_linked_outside_the_folder_is_not_touched(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "CLAUDE.md").write_text("global rules\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "CLAUDE.md").symlink_to(dotfiles / "CLAUDE.md")
    prepared = await prepare_context(folder, "claude", "t", CTX)
    assert prepared.error and "outside the working directory" in prepared.error
    assert (dotfiles / "CLAUDE.md").read_text() == "global rules\n"
    assert not (folder / ".predictorx").exists()


async def test_users_resources_json_kept_block_still_written(tmp_path: Path) -> None:
    target = tmp_path / RESOURCES_JSON
    target.parent.mkdir(parents=True)
    target.write_text("{}")
    prepared = await prepare_context(tmp_path, "claude", "t", CTX)
    assert prepared.error is None and "resources.json" not in prepared.block
    assert target.read_text() == "{}"
    prepared.cleanup()
    assert target.read_text() == "{}" and not (tmp_path / "CLAUDE.md").exists()
