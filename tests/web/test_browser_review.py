"""In Chromium: the agent's work on the task page (issue 13 §1) — files changed, +/- lines, a
unified and a side-by-side view, checked line by line against `git diff` of the same branch; the
exact commands to merge or discard the branch, which work as printed; "no changes" otherwise."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from playwright.sync_api import expect

from predictorx.daemon.review import branch_review

pytestmark = pytest.mark.browser


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          timeout=30).stdout


def _finished_task(live, review: dict) -> str:
    live.register_local_daemon()
    live.post("/api/agents", {"name": "claude", "provider": "claude"})
    project = live.post("/api/projects", {"title": "Shop"})
    live.post("/api/issues", {"title": "Add tax", "project_id": project["id"], "assignee": "claude"})
    task = live.daemon("/api/daemon/claim", {"limit": 1})["tasks"][0]["task"]
    live.daemon(f"/api/daemon/tasks/{task['id']}/status", {"status": "running", "branch_name": review.get("branch") or "agent/claude/x"})
    live.daemon(f"/api/daemon/tasks/{task['id']}/finish", {
        "status": "completed", "branch_name": review.get("branch") or "", "review": review})
    return task["id"]


def _diff_lines(repo: Path, base: str, branch: str) -> tuple[list[str], list[str]]:
    added, removed = [], []
    for line in git(repo, "diff", base, branch).splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added.append(line[1:])
        elif line.startswith("-") and not line.startswith("---"):
            removed.append(line[1:])
    return added, removed


def test_diff_view_matches_git_diff_and_the_commands_work(page, live, branch_repo):
    repo, base, branch = branch_repo
    review = branch_review(repo, base, branch, mode="worktree", repo_label=str(repo))
    review["head"] = base
    task_id = _finished_task(live, review)
    page.goto(f"/tasks/{task_id}")

    numstat = {line.split("\t")[2]: line.split("\t")[:2] for line in git(repo, "diff", "--numstat", base, branch).splitlines()}
    files = page.locator("#review details.file")
    expect(files).to_have_count(len(numstat))
    assert sorted(files.evaluate_all("els => els.map(e => e.dataset.path)")) == sorted(numstat)
    total_add = sum(int(a) for a, _ in numstat.values())
    total_del = sum(int(d) for _, d in numstat.values())
    expect(page.locator("#diff-stat")).to_contain_text(f"+{total_add}")
    expect(page.locator("#diff-stat")).to_contain_text(f"−{total_del}")

    added, removed = _diff_lines(repo, base, branch)
    shown_add = page.locator("table.diff tr.add td.code").evaluate_all("els => els.map(e => e.innerText.slice(1))")
    shown_del = page.locator("table.diff tr.del td.code").evaluate_all("els => els.map(e => e.innerText.slice(1))")
    assert shown_add == added and shown_del == removed
    assert page.locator("table.diff .k, table.diff .kd, table.diff [class^=k]").count() > 0  # Python highlighted

    page.locator("#view-split").click()
    expect(page.locator("table.diff.split").first).to_be_visible()
    split_add = page.locator("table.diff td.add.code").evaluate_all(
        "els => els.map(e => e.textContent.replace(/^added /, ''))")
    assert split_add == added

    # The commands are the exact ones, and they work as printed.
    cmds = page.locator("#review-where .cmds code").all_inner_texts()
    merge = next(c for c in cmds if " merge " in c)
    discard = next(c for c in cmds if "branch -D" in c)
    assert branch in merge and str(repo) in merge
    subprocess.run(merge, shell=True, check=True, capture_output=True, timeout=30)
    assert (repo / "README.md").read_text() == "# Shop\n\nNow with tax.\n"
    subprocess.run(discard, shell=True, check=True, capture_output=True, timeout=30)
    assert branch not in git(repo, "branch", "--list")


def test_a_run_whose_branch_was_deleted_says_no_changes(page, live, branch_repo):
    repo, base, _ = branch_repo
    review = branch_review(repo, base, None, mode="worktree", repo_label=str(repo),
                           note="The task changed nothing, so its branch was deleted.")
    task_id = _finished_task(live, review)
    page.goto(f"/tasks/{task_id}")
    expect(page.locator("#review-none")).to_contain_text("No changes")
    expect(page.locator("#branch-name")).to_contain_text("no changes")
    expect(page.locator("#copy-branch")).to_have_count(0)
