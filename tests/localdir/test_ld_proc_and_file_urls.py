"""Issue 8 finding 14 (input part, R-LD-1): `/proc/<pid>/cwd` is refused as a local directory, and
a `file://` repository URL goes through the same path rules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ld_git import make_repo

from predictorx.resources.local_directory_paths import SYSTEM_TREE, PathRuleError, check_local_directory, check_repository_path
from predictorx.daemon.repocache import LocalPathRefused, RepoCache


@pytest.fixture
def process_in(tmp_path: Path):
    """Another process working in an allowed folder (a git repository): its /proc/<pid>/cwd
    resolves there, which is how a member reached another task's or the daemon's folder."""
    repo = make_repo(tmp_path / "someone-elses-work", {"a.txt": "a\n"})
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], cwd=repo)
    try:
        yield proc.pid, repo
    finally:
        proc.kill()
        proc.wait(10)


def test_finding_14_proc_pid_cwd_is_refused_as_a_local_directory(process_in, tmp_path):
    pid, repo = process_in
    assert check_local_directory(str(repo)) == repo.resolve()  # the folder itself is fine
    for given in (f"/proc/{pid}/cwd", f"/proc/{pid}/cwd/", "/proc/self/cwd", f"/proc/{pid}/root{repo}"):
        with pytest.raises(PathRuleError) as e:
            check_local_directory(given)
        assert e.value.rule == SYSTEM_TREE and "/proc" in str(e.value), given
    link = tmp_path / "innocent-looking"
    link.symlink_to(f"/proc/{pid}/cwd")  # a link on the way into /proc counts too
    with pytest.raises(PathRuleError, match="through /proc"):
        check_local_directory(str(link))


def test_finding_14_file_urls_go_through_the_path_rules(process_in, tmp_path):
    pid, repo = process_in
    cache = RepoCache(tmp_path / "cache-root")
    for url in (f"file:///proc/{pid}/cwd", f"/proc/{pid}/cwd", "file:///etc", "file:///"):
        with pytest.raises(LocalPathRefused, match="cannot be used"):
            cache.checkout(url, None, tmp_path / "out", "agent/x/1")
        assert not (tmp_path / "out").exists()
    co = cache.checkout(f"file://{repo}", None, tmp_path / "ok", "agent/x/2")  # an allowed folder works
    assert (co.path / "a.txt").read_text() == "a\n"
    with pytest.raises(PathRuleError):
        check_repository_path("/usr/share")

