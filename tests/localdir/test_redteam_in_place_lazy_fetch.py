"""An in-place folder's `.git` is the agent's to write: after the run the daemon's git must not read
it as a repository. The reviewer's scenario (issue 29 style): the agent makes `origin` a promisor
remote whose `uploadpack` is a program of its choosing and commits a tree naming a blob that is not
there; a git that read that config would fetch the blob lazily and run the program as the daemon,
outside the sandbox. The run's start, its end (branch, review, origin URL) and a later merge or
discard of the task's branch run nothing of the agent's."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from ld_git import git, make_repo

from predictorx.daemon import inplace, localmerge
from predictorx.daemon.gitdata import RefNotWritten, config_values, create_ref, delete_ref, ref_value

MISSING = "0123456789abcdef0123456789abcdef01234567"


def sh(cwd: Path, script: str) -> str:
    return subprocess.run(["sh", "-ec", script], cwd=cwd, check=True, capture_output=True, text=True).stdout


def plant(folder: Path, marker: Path) -> None:
    """What a prompt-injected agent does inside the sandbox, to the folder and its `.git` only."""
    sh(folder, f"""
git config core.repositoryformatversion 1
git config extensions.partialClone origin
git config remote.origin.url "$PWD"
git config remote.origin.promisor true
git config remote.origin.uploadpack "id > '{marker}'; git-upload-pack"
git config filter.evil.smudge "id > '{marker}'; cat"
git config filter.evil.clean "id > '{marker}'; cat"
git config core.fsmonitor "id > '{marker}'; true"
""")


def missing_blob_commit(folder: Path, parent: str = "HEAD") -> str:
    return sh(folder, f"""
tree=$(printf '100644 blob {MISSING}\\tmissing.txt\\n' | git mktree --missing)
git -c user.name=a -c user.email=a@x commit-tree $tree -p {parent} -m work
""").strip()


def test_the_run_end_reviews_the_agents_commits_and_runs_no_program_of_its(tmp_path: Path) -> None:
    folder = make_repo(tmp_path / "mine", {"README.md": "hi\n"})
    begun = inplace.start(folder)
    assert begun is not None and begun.top == folder
    marker = tmp_path / "PWNED-outside-sandbox"
    plant(folder, marker)
    commit = missing_blob_commit(folder)
    git(folder, "update-ref", "refs/heads/main", commit)
    branch, review = inplace.reviewed(begun, "evil", "task1")
    assert not marker.exists(), marker.read_text()
    assert branch == "agent/evil/task1" and ref_value(folder / ".git", f"refs/heads/{branch}") == commit
    assert review is not None and review["head"] == begun.head
    assert review["origin_url"] == str(folder)  # read off the config as text, as the agent left it
    assert "error" in review  # the missing blob cannot be shown; nothing fetched it
    assert inplace.start(folder) is None or not marker.exists()
    assert not marker.exists()


def test_the_next_run_start_on_a_missing_head_commit_runs_no_program(tmp_path: Path) -> None:
    folder = make_repo(tmp_path / "mine", {"README.md": "hi\n"})
    marker = tmp_path / "PWNED-outside-sandbox"
    plant(folder, marker)
    (folder / ".git" / "refs" / "heads" / "main").write_text(MISSING + "\n")  # HEAD names a commit not there
    assert inplace.start(folder) is None
    assert not marker.exists(), marker.read_text()


def test_a_normal_in_place_run_is_recorded_and_reviewed(tmp_path: Path) -> None:
    folder = make_repo(tmp_path / "mine", {"a.txt": "a\n"})
    (folder / "sub").mkdir()
    begun = inplace.start(folder / "sub")  # a folder inside the repository: its top is found
    assert begun is not None and begun.top == folder
    assert inplace.reviewed(begun, "bot", "t1") == (None, None)
    (folder / "a.txt").write_text("agent\n")
    git(folder, "commit", "-qam", "the agent's commit")
    git(folder, "branch", "agent/bot/t1")  # taken: the next free name is used
    branch, review = inplace.reviewed(begun, "bot", "t1")
    assert branch == "agent/bot/t1-2" and review is not None
    assert review["files"] == [{"path": "a.txt", "old_path": None, "binary": False, "added": 1, "removed": 1}]
    assert review["tip"] == git(folder, "rev-parse", "HEAD").strip() and len(review["commits"]) == 1
    assert git(folder, "rev-parse", branch).strip() == review["tip"]
    assert "Your branch" not in git(folder, "status")  # git reads the ref the daemon wrote


def test_merge_and_discard_in_place_run_no_program_of_the_agents(tmp_path: Path) -> None:
    folder = make_repo(tmp_path / "mine", {"a.txt": "a\n"})
    base = git(folder, "rev-parse", "HEAD").strip()
    marker = tmp_path / "PWNED-outside-sandbox"
    (folder / ".gitattributes").write_text("* filter=evil\n")
    plant(folder, marker)
    commit = missing_blob_commit(folder, base)
    git(folder, "update-ref", "refs/heads/agent/bot/t2", commit)  # not on the person's branch
    with pytest.raises(localmerge.Refused, match="merge it yourself"):
        localmerge.merge(folder, "agent/bot/t2", issue="#1", task_id="t2", in_place=True)
    assert not marker.exists(), marker.read_text()
    assert git(folder, "rev-parse", "HEAD").strip() == base
    with pytest.raises(localmerge.Refused, match="moved"):
        localmerge.discard(folder, "agent/bot/t2", expected=base, start=base, in_place=True)
    out = localmerge.discard(folder, "agent/bot/t2", expected=commit, start=base, in_place=True)
    assert out.how == "deleted" and out.sha == commit and not marker.exists()
    assert git(folder, "branch", "--list", "agent/bot/t2") == ""


def test_in_place_merge_says_the_work_is_already_on_the_persons_branch(tmp_path: Path) -> None:
    folder = make_repo(tmp_path / "mine", {"a.txt": "a\n"})
    begun = inplace.start(folder)
    assert begun is not None
    (folder / "a.txt").write_text("agent\n")
    git(folder, "commit", "-qam", "the agent's commit, in place")
    branch = inplace.record(begun, "bot", "t3")
    assert branch == "agent/bot/t3"
    git(folder, "pack-refs", "--all")  # the branch now lives in packed-refs
    out = localmerge.merge(folder, branch, issue="#1", task_id="t3", in_place=True)
    assert out.how == "already-merged" and out.into in ("main", "master")
    head = git(folder, "rev-parse", "HEAD").strip()
    out = localmerge.discard(folder, branch, expected=head, start=begun.head, in_place=True)
    assert "git reset --keep" in out.message and git(folder, "branch", "--list", branch) == ""
    assert git(folder, "rev-parse", "HEAD").strip() == head and git(folder, "fsck", "--no-dangling") == ""


def test_refs_as_data_refuse_clashes_and_follow_no_symlink(tmp_path: Path) -> None:
    folder = make_repo(tmp_path / "mine")
    head = git(folder, "rev-parse", "HEAD").strip()
    common = folder / ".git"
    git(folder, "branch", "agent/x")
    git(folder, "pack-refs", "--all")
    with pytest.raises(RefNotWritten):
        create_ref(common, "refs/heads/agent/x/t", head)  # a branch `agent/x` is there (packed)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (common / "refs" / "heads" / "evil").symlink_to(elsewhere)
    with pytest.raises(RefNotWritten):
        create_ref(common, "refs/heads/evil/t", head)
    assert list(elsewhere.iterdir()) == []
    with pytest.raises(RefNotWritten):
        create_ref(common, "refs/heads/../../config", head)
    create_ref(common, "refs/heads/agent/y/t", head)
    with pytest.raises(RefNotWritten):
        create_ref(common, "refs/heads/agent/y/t", head)
    with pytest.raises(RefNotWritten):
        delete_ref(common, "refs/heads/agent/y/t", "f" * 40)
    delete_ref(common, "refs/heads/agent/y/t", head)
    assert git(folder, "branch", "--list", "agent/y/t") == "" and not (common / "packed-refs.lock").exists()


@pytest.mark.parametrize("text", [
    '[remote "origin"]\n\turl = https://x/y.git\n',
    '[Remote "origin"]\n\tURL = "https://a b/c" ; comment\n\turl=second # c\n',
    '[remote.origin]\nurl = legacy\n',
    '[remote "Origin"]\nurl = notme\n[remote "origin"]\n  url = a\\\n  b  \n',
    '[core]\n\tbare = false\n[remote "origin"]\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n\turl = "q\\"uo" t\n',
    '[remote "ori\\"gin"]\nurl=x\n[remote "origin"]\nurl\n[include]\n\tpath = other\n',
])
def test_config_values_read_as_text_agree_with_git(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config"
    path.write_text(text)
    theirs = subprocess.run(["git", "config", "--file", str(path), "--get-all", "remote.origin.url"],
                            capture_output=True, text=True).stdout.split("\n")[:-1]
    assert config_values(text, "remote", "origin", "url") == theirs


def test_an_in_place_branch_is_pushed_from_the_sealed_view_not_the_folder(tmp_path: Path, monkeypatch) -> None:
    import asyncio

    from predictorx.daemon import forgepush, forgework

    folder = make_repo(tmp_path / "mine", {"a.txt": "a\n"})
    marker = tmp_path / "PWNED-outside-sandbox"
    plant(folder, marker)
    tip = missing_blob_commit(folder)
    git(folder, "update-ref", "refs/heads/agent/bot/t4", tip)
    seen: dict[str, object] = {}

    async def push(task_id, repo, local, target, is_git_dir, session):
        seen.update(repo=repo, is_git_dir=is_git_dir, config=(repo / "config").read_text(),
                    tip=forgepush._commit_of(repo, "refs/heads/agent/bot/t4"))
        return forgepush.Pushed(local)

    monkeypatch.setattr(forgework, "_push", push)
    monkeypatch.setattr(forgework, "checked_repository", lambda _root, path: Path(path))
    answer = {"remote_url": "https://forge.example/o/r.git", "branch": "agent/bot/t4", "username": "u", "token": "t",
              "extra": {"repo_path": str(folder), "tip": tip, "mode": "in_place"}}
    ok, sha, error = asyncio.run(forgework.push_with(tmp_path, "t4", answer))
    assert (ok, sha, error) == (True, tip, None)
    assert seen["is_git_dir"] is True and seen["repo"] != folder / ".git" and seen["tip"] == tip
    assert "promisor" not in str(seen["config"]) and "uploadpack" not in str(seen["config"])
    assert not marker.exists()


def test_an_agent_named_in_any_script_gets_its_branch(tmp_path: Path) -> None:
    folder = make_repo(tmp_path / "mine", {"a.txt": "a\n"})
    begun = inplace.start(folder)
    assert begun is not None
    (folder / "a.txt").write_text("agent\n")
    git(folder, "commit", "-qam", "the agent's commit")
    branch = inplace.record(begun, "Émile", "t5")
    assert branch == "agent/Émile/t5"
    assert git(folder, "rev-parse", branch).strip() == git(folder, "rev-parse", "HEAD").strip()
