"""Which repositories a sandboxed run's plan mounts (issue 29 finding 4): its workspace's caches of
the repositories its task allows, read-only, and no other — not another workspace's cache, even
of the same URL (its object store holds that workspace's delivered work); never `.repos/` writable. And an in-place folder that holds the
daemon's workspaces root (every cache, other tasks' files) is refused for a sandboxed run."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from predictorx.daemon import envroot, runner
from predictorx.daemon.context.types import TaskContext
from predictorx.daemon.repocache import RepoCache
from predictorx.protocol import Claim


def _run(root: Path, allowed: list[str]) -> runner.TaskRun:
    host = SimpleNamespace(workspaces_root=root, repo_cache=RepoCache(root), name="d1", sandbox=True, api=None)
    claim = Claim.from_wire({"task": {"id": "t1", "workspace_id": "w"}, "agent": {"name": "bot", "provider": "command"},
                             "issue": {"number": 1}, "context": {"workspace_repos": [{"url": u} for u in allowed]},
                             "token": "x"})
    return runner.TaskRun(host, claim)  # type: ignore[arg-type]


def _plan(run: runner.TaskRun, env: envroot.EnvRoot, cwd: Path, local: Path | None):
    return run._sandbox_plan(TaskContext.of_claim(run.claim.context), env, cwd, local)


def _bind_targets(args: list[str], flag: str) -> set[str]:
    return {args[i + 2] for i, a in enumerate(args) if a == flag}


def test_only_the_allowed_caches_are_mounted_and_read_only(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    run = _run(root, ["file:///srv/ours"])
    cache = run.daemon.repo_cache.for_workspace("w")
    ours = cache.cache_path("file:///srv/ours")
    theirs = cache.cache_path("file:///srv/theirs")
    same_url_elsewhere = run.daemon.repo_cache.for_workspace("other").cache_path("file:///srv/ours")
    (same_url_elsewhere / "objects").mkdir(parents=True)
    (ours / "objects").mkdir(parents=True)
    (theirs / "objects").mkdir(parents=True)
    env = envroot.create_env_root(root, "w", "t1")
    plan = _plan(run, env, env.workdir, None)
    args = plan.arguments(["true"], {"PATH": "/usr/bin"})
    mounted = _bind_targets(args, "--ro-bind") | _bind_targets(args, "--bind")
    assert str(theirs) not in mounted and str(root / ".repos") not in mounted
    assert str(same_url_elsewhere) not in mounted  # another workspace's cache of the same repository
    assert not any(p.startswith(str(root / ".repos")) for p in _bind_targets(args, "--bind"))
    assert str(ours) in _bind_targets(args, "--ro-bind")


def test_an_in_place_folder_holding_the_workspaces_root_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    root = folder / "px-workspaces"
    root.mkdir(parents=True)
    run = _run(root, [])
    env = envroot.create_env_root(root, "w", "t1", workdir_kind="in_place", local_path=folder)
    with pytest.raises(runner.TaskFailed, match="PREDICTORX_WORKSPACES_ROOT"):
        _plan(run, env, folder, folder)


def test_a_workdir_left_by_an_earlier_attempt_names_no_mount(tmp_path: Path) -> None:
    """A task put back in the queue runs again in the same env root, whose workdir the first
    attempt's agent wrote: its `.git/objects/info/alternates` naming another workspace's cache (or
    the workspaces root, `/`) made the next attempt's plan mount those read-only. What a run
    borrows is what the daemon made it borrow (`TaskRun.borrowed_objects`), never read back."""
    root = tmp_path / "ws"
    run = _run(root, [])
    elsewhere = run.daemon.repo_cache.for_workspace("other").cache_path("file:///srv/private")
    (elsewhere / "objects").mkdir(parents=True)
    env = envroot.create_env_root(root, "w", "t1")
    info = env.workdir / ".git" / "objects" / "info"
    info.mkdir(parents=True)
    (info / "alternates").write_text(f"{elsewhere / 'objects'}\n{root}\n")
    args = _plan(run, env, env.workdir, None).arguments(["true"], {"PATH": "/usr/bin"})
    mounted = _bind_targets(args, "--ro-bind") | _bind_targets(args, "--bind")
    assert not any(p == str(root) or p.startswith(str(elsewhere)) for p in mounted), mounted
