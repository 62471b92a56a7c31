"""The diff view's parser against real `git diff` output: renames, binary files, paths with
spaces and non-ASCII names, '\\ No newline' lines, side-by-side pairing (issue 13 §1)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from predictorx.daemon.review import branch_review
from predictorx.server.web import diffview


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          timeout=30).stdout


def test_renames_binaries_odd_paths_and_pairs(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@e.x")
    git(repo, "config", "user.name", "T")
    body = "".join(f"line {i}\n" for i in range(30))
    (repo / "old name.txt").write_text(body)
    (repo / "blob.bin").write_bytes(b"\x00\x01\x02")
    (repo / "naïve.md").write_text("a\nb")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-qb", "agent/x/1")
    git(repo, "mv", "old name.txt", "new name.txt")
    (repo / "new name.txt").write_text(body.replace("line 3\n", "line three\n"))
    (repo / "blob.bin").write_bytes(b"\x00\x09\x02\x03")
    (repo / "naïve.md").write_text("a\nc")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "work")
    review = branch_review(repo, base, "agent/x/1", mode="worktree", repo_label="r")
    files = {f.path: f for f in diffview.parse(review["patch"])}
    assert set(files) == {"new name.txt", "blob.bin", "naïve.md"}
    renamed = files["new name.txt"]
    assert renamed.status == "renamed" and renamed.old_path == "old name.txt"
    assert (renamed.added, renamed.removed) == (1, 1)
    assert files["blob.bin"].binary
    md = files["naïve.md"]
    assert [r.kind for r in md.hunks[0].rows].count("note") == 2  # "\ No newline at end of file" twice
    pairs = md.hunks[0].pairs()
    assert any(a is not None and b is not None and a.kind == "del" and b.kind == "add" for a, b in pairs)
    numstat = {f["path"]: (f["added"], f["removed"]) for f in review["files"]}
    assert numstat["new name.txt"] == (1, 1) and review["files"][0]["path"] in files
    cmds = diffview.commands({**review, "head": base})
    assert any("merge --no-ff agent/x/1" in c["cmd"] for c in cmds)
