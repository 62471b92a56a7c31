"""Rendering what the agent is told: every resource in words, repository precedence (R-CTX-2, R-CTX-3)."""

from __future__ import annotations

from predictorx.daemon.context.block import instruction_file_for
from predictorx.daemon.context.render import describe_resource, render_context_block
from predictorx.daemon.context.types import Resource, TaskContext, WorkspaceRepo, allowed_repo_urls, task_repo_urls

DAEMON = "5b0c0c2e-8a43-4c55-9d83-6b1b0c7f2a11"
REPO = Resource("r1", "github_repo", {"url": "https://github.com/acme/shop", "ref": "release/2.0",
                                      "default_branch_hint": "main"}, "storefront")
IN_PLACE = Resource("r2", "local_directory", {"local_path": "/home/ann/shop", "daemon_id": DAEMON,
                                              "execution_mode": "in_place"}, "main checkout")
WORKTREE = Resource("r3", "local_directory", {"local_path": "/home/ann/shop", "daemon_id": DAEMON,
                                              "execution_mode": "worktree"}, None)
NOTION = Resource("r4", "notion_page", {"page_id": "abc123", "title": "Roadmap"}, "roadmap")
WS_REPOS = (WorkspaceRepo("https://git.example.com/acme/infra.git", "terraform"),
            WorkspaceRepo("git@github.com:acme/tools.git"))


def ctx(*resources: Resource, **kw) -> TaskContext:
    return TaskContext(project_id="p1", project_title="Agent UX 2026", project_description="Make agents useful.",
                       resources=resources, workspace_repos=WS_REPOS, **kw)


def _no_json(text: str) -> None:
    assert "{" not in text and '"' not in text, text


def test_github_repo_in_words_with_ref_and_hint() -> None:
    line = describe_resource(REPO)
    assert "https://github.com/acme/shop" in line and "storefront" in line
    assert "`release/2.0`" in line and "`main`" in line and "hint" in line
    _no_json(line)


def test_local_directory_modes_in_words() -> None:
    in_place = describe_resource(IN_PLACE)
    assert "/home/ann/shop" in in_place and "main checkout" in in_place and "directly in the person's folder" in in_place
    worktree = describe_resource(WORKTREE)
    assert "worktree" in worktree and "branch" in worktree
    for line in (in_place, worktree):
        _no_json(line)
        assert DAEMON not in line


def test_unknown_type_still_rendered_in_words() -> None:
    line = describe_resource(NOTION)
    assert "roadmap" in line and "notion_page" in line and "Roadmap" in line
    _no_json(line)


def test_block_has_both_sections_one_bullet_per_resource() -> None:
    text = render_context_block(ctx(REPO, IN_PLACE, NOTION))
    assert text.startswith("## Project Context\n")
    assert "**Agent UX 2026**" in text and "> Make agents useful." in text
    assert "`.predictorx/project/resources.json`" in text
    context = text.split("## Repositories")[0]
    assert sum(1 for line in context.splitlines() if line.startswith("- ")) == 3
    assert "## Repositories" in text
    assert "`predictorx repo checkout <url> [--ref R]`" in text
    _no_json(text.replace('"', ""))  # only the checkout hint has no quotes either


def test_precedence_project_repos_hide_workspace_repos() -> None:
    text = render_context_block(ctx(REPO, IN_PLACE))
    repos = text.split("## Repositories")[1]
    assert "https://github.com/acme/shop" in repos and "`release/2.0`" in repos
    assert "infra" not in repos and "tools" not in repos


def test_precedence_without_project_repos_shows_workspace_repos() -> None:
    text = render_context_block(ctx(IN_PLACE))
    repos = text.split("## Repositories")[1]
    assert "https://git.example.com/acme/infra.git — terraform" in repos
    assert "git@github.com:acme/tools.git" in repos
    assert "names no repository" in repos


def test_task_outside_a_project_gets_only_workspace_repos() -> None:
    text = render_context_block(TaskContext(workspace_repos=WS_REPOS))
    assert "## Project Context" not in text and text.startswith("## Repositories")


def test_nothing_to_say_renders_nothing() -> None:
    assert render_context_block(TaskContext()) == ""


def test_duplicate_repo_urls_listed_once() -> None:
    twin = Resource("r9", "github_repo", {"url": "https://GitHub.com/acme/shop.git/"}, None)
    text = render_context_block(ctx(REPO, twin))
    assert text.split("## Repositories")[1].count("acme/shop") == 1


def test_checked_out_repos_say_where() -> None:
    text = render_context_block(ctx(REPO), checkouts={"https://github.com/acme/shop.git": "shop"})
    assert "already checked out at `shop`" in text


def test_description_cannot_break_the_structure() -> None:
    c = TaskContext(project_id="p", project_title="T", project_description="## Goals\n- a\n\nend")
    text = render_context_block(c)
    assert "\n## Goals" not in text and "> ## Goals" in text


def test_resources_json_remark_only_when_written() -> None:
    assert "resources.json" not in render_context_block(ctx(REPO), resources_json_written=False)


def test_allowed_lists() -> None:
    c = ctx(REPO, IN_PLACE)
    assert task_repo_urls(c) == ["https://github.com/acme/shop"]
    assert allowed_repo_urls(c) == [r.url for r in WS_REPOS] + ["https://github.com/acme/shop"]


def test_from_dict_accepts_claim_shapes() -> None:
    c = TaskContext.from_dict({
        "project_id": "p", "project_title": "T", "project_description": None,
        "resources": [{"id": "r1", "resource_type": "github_repo", "resource_ref": {"url": "https://h/o/r"}, "label": None}],
        "workspace_repos": ["https://h/o/w", {"url": "https://h/o/x", "description": "x"}],
    })
    assert c.resources[0].resource_ref == {"url": "https://h/o/r"}
    assert [r.url for r in c.workspace_repos] == ["https://h/o/w", "https://h/o/x"]


def test_other_machines_rows_are_dropped() -> None:
    """R-RES-8 on the daemon's side too: a row of another machine never reaches the agent."""
    other = "0e0e0e0e-0000-4000-8000-000000000000"
    rows = [{"id": "a", "resource_type": "local_directory",
             "resource_ref": {"local_path": "/theirs", "daemon_id": other, "execution_mode": "in_place"}},
            {"id": "b", "resource_type": "local_directory",
             "resource_ref": {"local_path": "/mine", "daemon_id": DAEMON, "execution_mode": "in_place"}},
            {"id": "c", "resource_type": "github_repo", "resource_ref": {"url": "https://h/o/r"}}]
    c = TaskContext.from_dict({"project_id": "p", "resources": rows}, daemon_id=DAEMON)
    assert [r.id for r in c.resources] == ["b", "c"]
    assert "/theirs" not in render_context_block(c)


def test_instruction_file_per_provider() -> None:
    assert instruction_file_for("claude") == "CLAUDE.md"
    assert instruction_file_for("gemini") == "GEMINI.md"
    assert instruction_file_for("codex") == "AGENTS.md"
    assert instruction_file_for("opencode") == "AGENTS.md"
    assert instruction_file_for("command") == "AGENTS.md"
