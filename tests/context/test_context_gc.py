"""Env roots and garbage collection (R-LD-6, R-EX-7): old things go, people's folders never do."""

from __future__ import annotations

import asyncio
import json
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from predictorx import config
from predictorx.daemon.envroot import (
    META_NAME,
    create_env_root,
    env_root_path,
    mark_finished,
    open_env_root,
    read_meta,
    record_repo_urls,
)
from predictorx.daemon import runcheckouts
from predictorx.daemon.gc import GcTimer, collect
from predictorx.daemon.repocache import RepoCache, task_branch, touch_last_used

from ctx_gitutil import Remote, git

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
LONG_AGO = NOW - timedelta(days=30)
RECENT = NOW - timedelta(hours=2)


def finished_env(root: Path, task: str, when: datetime = LONG_AGO, **kw):
    env = create_env_root(root, "acme", task, now=when - timedelta(hours=1), **kw)
    (env.logs / "agent.jsonl").write_text("{}\n")
    mark_finished(env, now=when, status="completed")
    return env


def person_folder(base: Path) -> tuple[Path, dict[str, bytes]]:
    folder = base / "ann" / "shop"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "app.py").write_text("print('mine')\n")
    (folder / "CLAUDE.md").write_text("my rules\n")
    return folder, tree(folder)


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- env roots ------------------------------------------------------------------------------------

def test_env_root_layout_and_meta(tmp_path: Path) -> None:
    env = create_env_root(None, "Acme Corp", "task/1", repo_urls=["https://h/o/r"], now=RECENT)
    assert env.path == config.workspaces_root() / "Acme-Corp" / "task-1"
    assert env.workdir.is_dir() and env.output.is_dir() and env.logs.is_dir()
    meta = json.loads(env.meta_path.read_text())
    assert meta["task_id"] == "task/1" and meta["workspace"] == "Acme Corp"
    assert meta["workdir_kind"] == "own" and meta["local_path"] is None and meta["finished_at"] is None
    assert meta["created_at"] == RECENT.isoformat()
    record_repo_urls(env, ["https://h/o/r", "https://h/o/s"])
    mark_finished(env, now=NOW, status="failed")
    meta = read_meta(env.path)
    assert meta["repo_urls"] == ["https://h/o/r", "https://h/o/s"]
    assert meta["finished_at"] == NOW.isoformat() and meta["status"] == "failed"


def test_in_place_env_root_runs_in_the_persons_folder(tmp_path: Path) -> None:
    folder, _ = person_folder(tmp_path)
    env = create_env_root(tmp_path / "ws", "acme", "t1", workdir_kind="in_place", local_path=folder)
    assert env.workdir == folder.resolve() and not (env.path / "workdir").exists()
    assert read_meta(env.path)["local_path"] == str(folder.resolve())
    with pytest.raises(ValueError):
        create_env_root(tmp_path / "ws", "acme", "t2", workdir_kind="in_place")


def test_open_env_root_reads_back_what_was_created(tmp_path: Path) -> None:
    folder, _ = person_folder(tmp_path)
    made = create_env_root(tmp_path / "ws", "acme", "t1", workdir_kind="worktree", local_path=folder)
    assert open_env_root(made.path) == made
    with pytest.raises(FileNotFoundError):
        open_env_root(tmp_path)


def test_env_root_names_cannot_escape(tmp_path: Path) -> None:
    assert env_root_path(tmp_path, "../..", "../../etc").parent.parent == tmp_path
    with pytest.raises(ValueError):
        env_root_path(tmp_path, "///", "t")


# -- collecting env roots -------------------------------------------------------------------------

def test_old_finished_env_roots_go_recent_and_active_ones_stay(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    old = finished_env(root, "old")
    recent = finished_env(root, "recent", RECENT)
    active = finished_env(root, "active")
    running = create_env_root(root, "acme", "running", now=LONG_AGO)
    report = collect(root, NOW, is_task_active=lambda t: t in {"active", "running"})
    assert report.removed_env_roots == [old.path] and not old.path.exists()
    assert report.reason_kept(recent.path) == "not expired"
    assert report.reason_kept(active.path) == report.reason_kept(running.path) == "task is active"


def test_abandoned_unfinished_env_root_goes_after_ttl_of_inactivity(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    env = create_env_root(root, "acme", "crashed", now=LONG_AGO)
    old = LONG_AGO.timestamp()
    for path in (env.meta_path, env.logs, env.output):
        os.utime(path, (old, old))
    assert collect(root, NOW).removed_env_roots == [env.path]


def test_abandoned_env_root_with_a_log_still_growing_is_kept(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    env = create_env_root(root, "acme", "long", now=LONG_AGO)
    log_file = env.logs / "agent.jsonl"
    log_file.write_text("line\n")
    old = LONG_AGO.timestamp()
    for path in (env.meta_path, env.logs, env.output):
        os.utime(path, (old, old))
    os.utime(log_file, (NOW.timestamp(), NOW.timestamp()))
    assert collect(root, NOW).reason_kept(env.path) == "not expired"


def test_custom_ttl(tmp_path: Path) -> None:
    env = finished_env(tmp_path / "ws", "t", NOW - timedelta(days=2))
    assert collect(tmp_path / "ws", NOW).removed_env_roots == []
    assert collect(tmp_path / "ws", NOW, env_root_ttl=timedelta(days=1)).removed_env_roots == [env.path]


def test_in_place_env_root_loses_only_its_own_artefacts(tmp_path: Path) -> None:
    folder, before = person_folder(tmp_path)
    env = finished_env(tmp_path / "ws", "t", workdir_kind="in_place", local_path=folder)
    report = collect(tmp_path / "ws", NOW)
    assert report.removed_env_roots == [env.path] and not env.path.exists()
    assert tree(folder) == before


def test_in_place_leaves_what_it_did_not_make(tmp_path: Path) -> None:
    folder, _ = person_folder(tmp_path)
    env = finished_env(tmp_path / "ws", "t", workdir_kind="in_place", local_path=folder)
    (env.path / "notes.txt").write_text("someone put this here")
    report = collect(tmp_path / "ws", NOW)
    assert not (env.path / "logs").exists() and (env.path / "notes.txt").exists()
    assert "left what we did not make (notes.txt)" in report.reason_kept(env.path)


def test_workdir_symlinked_to_a_persons_folder_is_not_followed(tmp_path: Path) -> None:
    folder, before = person_folder(tmp_path)
    env = finished_env(tmp_path / "ws", "t", workdir_kind="own")
    env.workdir.rmdir()
    env.workdir.symlink_to(folder)
    assert collect(tmp_path / "ws", NOW).removed_env_roots == [env.path]
    assert tree(folder) == before


def test_symlinked_env_root_is_not_followed(tmp_path: Path) -> None:
    folder, before = person_folder(tmp_path)
    (folder / META_NAME).write_text(json.dumps({"task_id": "x", "finished_at": LONG_AGO.isoformat(),
                                                "workdir_kind": "own"}))
    before = tree(folder)
    (tmp_path / "ws" / "acme").mkdir(parents=True)
    (tmp_path / "ws" / "acme" / "x").symlink_to(folder)
    (tmp_path / "ws" / "evil").symlink_to(folder.parent)
    report = collect(tmp_path / "ws", NOW)
    assert report.removed_env_roots == []
    assert "symlink" in report.reason_kept(tmp_path / "ws" / "acme" / "x")
    assert "symlink" in report.reason_kept(tmp_path / "ws" / "evil")
    assert tree(folder) == before


def test_meta_pointing_at_a_persons_folder_never_gets_it_deleted(tmp_path: Path) -> None:
    """Even a meta that says `own` and names, as local folder, a directory inside the env root."""
    root = tmp_path / "ws"
    env = finished_env(root, "t")
    folder = env.workdir / "shop"  # a person's folder that (wrongly) lives inside an env root
    folder.mkdir()
    (folder / "precious.txt").write_text("mine")
    other = finished_env(root, "other", workdir_kind="in_place", local_path=folder)
    report = collect(root, NOW)
    assert "contains the local folder" in report.reason_kept(env.path)
    assert (folder / "precious.txt").read_text() == "mine"
    assert other.path in report.removed_env_roots


def test_caller_protected_paths(tmp_path: Path) -> None:
    env = finished_env(tmp_path / "ws", "t")
    report = collect(tmp_path / "ws", NOW, protect=[env.workdir])
    assert "contains the local folder" in report.reason_kept(env.path)


def test_directory_without_meta_is_left_alone(tmp_path: Path) -> None:
    stray = tmp_path / "ws" / "acme" / "stray"
    stray.mkdir(parents=True)
    (stray / "file").write_text("?")
    report = collect(tmp_path / "ws", NOW)
    assert stray.exists() and "no readable .gc_meta.json" in report.reason_kept(stray)


def test_missing_root_is_an_empty_report(tmp_path: Path) -> None:
    report = collect(tmp_path / "nothing", NOW)
    assert report.removed_env_roots == [] and report.kept == []


# -- worktrees ------------------------------------------------------------------------------------

def test_a_delivered_cache_checkout_is_removed(tmp_path: Path, remote: Remote) -> None:
    root = tmp_path / "ws"
    env = create_env_root(root, "acme", "t1", now=LONG_AGO)
    cache = RepoCache(root)
    checkout = cache.checkout(remote.url, None, env.workdir / "remote", task_branch("bot", "t1"))
    mark_finished(env, now=LONG_AGO)
    report = collect(root, NOW)
    assert report.removed_env_roots == [env.path]
    assert git("--git-dir", str(checkout.cache), "rev-parse", "--verify", checkout.branch)  # the branch stays


def test_an_undelivered_checkout_keeps_its_env_root_and_gc_runs_nothing_there(tmp_path: Path, remote: Remote) -> None:
    """Until the daemon delivered a run's checkouts (its record goes), GC keeps the env root; and it
    never runs git in a checkout, whose config is the agent's (core.fsmonitor ran as the daemon)."""
    root = tmp_path / "ws"
    env = create_env_root(root, "acme", "t1", now=LONG_AGO)
    checkout = RepoCache(root).checkout(remote.url, None, env.workdir / "remote", "agent/bot/t1")
    marker, evil = tmp_path / "ran.txt", tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    evil.chmod(0o755)
    git("config", "core.fsmonitor", str(evil), cwd=checkout.path)
    (checkout.path / "README.md").write_text("unsaved agent work\n")
    runcheckouts.mark_pending(env.path, task_id="t1", agent_name="bot", allowed=[remote.url])
    mark_finished(env, now=LONG_AGO)
    report = collect(root, NOW)
    assert report.removed_env_roots == []
    assert "never delivered" in report.reason_kept(env.path)
    assert (checkout.path / "README.md").read_text() == "unsaved agent work\n"
    runcheckouts.clear_pending(env.path)
    assert collect(root, NOW).removed_env_roots == [env.path]
    assert not marker.exists()


def test_worktree_of_a_persons_repository(tmp_path: Path) -> None:
    """local_directory in worktree mode: the env root goes, the person's repo only loses the worktree entry."""
    folder, _ = person_folder(tmp_path)
    git("init", "-q", "-b", "main", cwd=folder)
    git("add", "-A", cwd=folder)
    git("commit", "-qm", "init", cwd=folder)
    env = create_env_root(tmp_path / "ws", "acme", "t1", workdir_kind="worktree", local_path=folder, now=LONG_AGO)
    git("worktree", "add", "-q", "-b", "agent/bot/t1", str(env.workdir), cwd=folder)
    before = {k: v for k, v in tree(folder).items() if not k.startswith(".git/worktrees/")}
    mark_finished(env, now=LONG_AGO)
    report = collect(tmp_path / "ws", NOW)
    assert report.removed_env_roots == [env.path]
    assert tree(folder) == before  # only git's own record of the worktree is gone
    assert str(env.workdir) not in git("worktree", "list", cwd=folder)
    assert git("branch", "--list", "agent/bot/t1", cwd=folder)


def test_a_repository_the_agent_made_is_data_to_gc(tmp_path: Path) -> None:
    """A repository an agent made in its workdir is removed with the env root; GC asks its git nothing."""
    env = create_env_root(tmp_path / "ws", "acme", "t1", now=LONG_AGO)
    clone = env.workdir / "scratch"
    git("init", "-q", str(clone))
    marker, evil = tmp_path / "ran.txt", tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    evil.chmod(0o755)
    git("config", "core.fsmonitor", str(evil), cwd=clone)
    (clone / "new.txt").write_text("not committed")
    mark_finished(env, now=LONG_AGO)
    assert collect(tmp_path / "ws", NOW).removed_env_roots == [env.path]
    assert not marker.exists()


# -- repo caches ----------------------------------------------------------------------------------

def test_unused_cache_is_removed_recent_one_kept(tmp_path: Path, remote: Remote) -> None:
    root = tmp_path / "ws"
    path = RepoCache(root).ensure(remote.url)
    touch_last_used(path, RECENT.timestamp())
    assert collect(root, NOW).reason_kept(path) == "not expired"
    touch_last_used(path, (NOW - timedelta(days=31)).timestamp())
    report = collect(root, NOW)
    assert report.removed_repo_caches == [path] and not path.exists()
    assert RepoCache(root).ensure(remote.url) == path  # comes back on the next use


def test_cache_with_a_live_worktree_is_kept(tmp_path: Path, remote: Remote) -> None:
    root = tmp_path / "ws"
    env = create_env_root(root, "acme", "t1")
    checkout = RepoCache(root).checkout(remote.url, None, env.workdir / "r", "agent/bot/t1")
    touch_last_used(checkout.cache, LONG_AGO.timestamp() - 86400 * 30)
    report = collect(root, NOW, is_task_active=lambda t: True)
    assert "still used by a checkout" in report.reason_kept(checkout.cache)


def _deliver(root: Path, checkout, task: str = "t1"):
    placed = {"url": checkout.url, "path": str(checkout.path), "branch": checkout.branch, "start": checkout.commit,
              "cache": str(checkout.cache)}
    return runcheckouts.deliver_placement(RepoCache(root), placed, root / "scratch", agent_name="bot", task_id=task)


def test_cache_with_unpushed_task_commits_is_kept(tmp_path: Path, remote: Remote) -> None:
    root = tmp_path / "ws"
    env = create_env_root(root, "acme", "t1", now=LONG_AGO)
    checkout = RepoCache(root).checkout(remote.url, None, env.workdir / "r", "agent/bot/t1")
    (checkout.path / "x.txt").write_text("x")
    git("add", "x.txt", cwd=checkout.path)
    git("commit", "-qm", "never pushed", cwd=checkout.path)
    _deliver(root, checkout)
    mark_finished(env, now=LONG_AGO)
    touch_last_used(checkout.cache, LONG_AGO.timestamp() - 86400 * 30)
    report = collect(root, NOW)
    assert report.removed_env_roots == [env.path]
    assert "1 commit(s) the remote does not have" in report.reason_kept(checkout.cache)


def test_work_off_the_task_branch_is_kept_in_the_cache_and_keeps_it(tmp_path: Path, remote: Remote) -> None:
    """The agent committed on an unrelated line of history: delivery keeps it under
    refs/predictorx/kept/ in the cache, and GC must not delete the cache that holds it."""
    root = tmp_path / "ws"
    env = create_env_root(root, "acme", "t1", now=LONG_AGO)
    checkout = RepoCache(root).checkout(remote.url, None, env.workdir / "r", "agent/bot/t1")
    git("checkout", "-q", "--orphan", "elsewhere", cwd=checkout.path)
    (checkout.path / "x.txt").write_text("x")
    git("add", "x.txt", cwd=checkout.path)
    git("-c", "user.name=A", "-c", "user.email=a@b", "commit", "-qm", "on no branch of ours", cwd=checkout.path)
    sha = git("rev-parse", "HEAD", cwd=checkout.path)
    done = _deliver(root, checkout)
    assert done.problem and "refs/predictorx/kept/t1" in done.problem
    assert git("--git-dir", str(checkout.cache), "rev-parse", "refs/predictorx/kept/t1") == sha
    mark_finished(env, now=LONG_AGO)
    report = collect(root, NOW)
    assert report.removed_env_roots == [env.path]
    touch_last_used(checkout.cache, LONG_AGO.timestamp() - 86400 * 30)
    report = collect(root, NOW)
    assert report.removed_repo_caches == [] and checkout.cache.exists()
    assert "1 commit(s) the remote does not have" in report.reason_kept(checkout.cache)


def test_locked_cache_is_skipped(tmp_path: Path, remote: Remote) -> None:
    root = tmp_path / "ws"
    cache = RepoCache(root)
    path = cache.ensure(remote.url)
    touch_last_used(path, LONG_AGO.timestamp() - 86400 * 30)
    with cache.lock(remote.url):
        report = collect(root, NOW)
    assert "in use" in report.reason_kept(path) and path.exists()


# -- the timer ------------------------------------------------------------------------------------

async def test_timer_runs_collect_repeatedly_and_stops(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    env = create_env_root(root, "acme", "t1")
    mark_finished(env, now=datetime.now(timezone.utc) - timedelta(days=8))
    reports = []
    async with GcTimer(root, interval=timedelta(seconds=0.05), is_task_active=lambda t: False,
                       on_report=reports.append) as timer:
        deadline = time.monotonic() + 30  # generous: a loaded machine
        while timer.runs < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
    assert timer.runs >= 2 and reports[0].removed_env_roots == [env.path]
    runs = timer.runs
    await asyncio.sleep(0.1)
    assert timer.runs == runs  # stopped


async def test_timer_survives_a_failing_pass(tmp_path: Path) -> None:
    calls = []

    def protect():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("daemon state unavailable")
        return []

    async with GcTimer(tmp_path, interval=timedelta(seconds=0.02), is_task_active=lambda t: False,
                       protect=protect) as timer:
        deadline = time.monotonic() + 30
        while timer.runs < 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
    assert len(calls) >= 2 and timer.runs >= 1


def test_a_daemon_start_delivers_what_a_stopped_run_left_in_its_checkouts(tmp_path: Path, remote: Remote) -> None:
    root = tmp_path / "ws"
    env = create_env_root(root, "acme", "t9")
    cache = RepoCache(root)
    checkout = cache.checkout(remote.url, None, env.workdir / "r", "agent/bot/t9")
    placed = {"url": checkout.url, "path": str(checkout.path), "branch": checkout.branch,
              "start": checkout.commit, "cache": str(checkout.cache)}
    runcheckouts.mark_pending(env.path, task_id="t9", agent_name="bot", allowed=[remote.url], placement=placed)
    (checkout.path / "x.txt").write_text("work of a run whose daemon was killed\n")
    data = json.loads((env.path / runcheckouts.PENDING).read_text())
    data["pid"] = -1  # its daemon is gone
    (env.path / runcheckouts.PENDING).write_text(json.dumps(data))
    said = runcheckouts.recover([root], cache)
    assert len(said) == 1 and "t9" in said[0] and not (env.path / runcheckouts.PENDING).exists()
    assert git("--git-dir", str(checkout.cache), "show", f"{checkout.branch}:x.txt") == \
        "work of a run whose daemon was killed"


def test_each_workspace_has_its_own_caches_and_gc_sees_them_all(tmp_path: Path, remote: Remote) -> None:
    root = tmp_path / "ws"
    a = RepoCache(root).for_workspace("A").ensure(remote.url)
    b = RepoCache(root).for_workspace("B").ensure(remote.url)
    assert a != b and a.parent.name == "ws-A" and b.parent.name == "ws-B"
    assert RepoCache(root).list_caches() == sorted([a, b])
    touch_last_used(a, (NOW - timedelta(days=31)).timestamp())
    touch_last_used(b, RECENT.timestamp())
    report = collect(root, NOW)
    assert report.removed_repo_caches == [a] and b.exists()
