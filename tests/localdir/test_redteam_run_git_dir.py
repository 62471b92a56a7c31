"""Issue 29 findings 1 and 11: whatever an agent writes into the git dir of its checkout — config,
includes, hooks, alternates, `config.worktree`, attributes naming drivers — is never read as
configuration or object-store indirection by the daemon's own git: not when it delivers the run's
work (the leftover commit, the fetch into the cache), not in the review's diff, not in the next
task's fetch and checkout of the same repository. Each vector's program would leave a marker.

The agent writes the way it would from inside its run: `git config` in its checkout and files at
the paths `git rev-parse --git-path` names. (On the code before this fix those were the repo
cache's own config and object store, shared with every later task of the repository.)
"""

from __future__ import annotations

import http.server
import subprocess
import threading
from pathlib import Path

import pytest

from predictorx.daemon import review, runcheckouts
from predictorx.daemon.repocache import RepoCache


def git(cwd: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=check, capture_output=True, text=True,
                          timeout=60).stdout.strip()


class _AskForPassword(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="forge"')
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def forge_asking_for_a_password():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _AskForPassword)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/r.git"
    server.shutdown()
    server.server_close()


class Programs:
    """One program per vector (`evil/<vector>`), leaving `markers/<vector>` when run, whatever its arguments."""

    def __init__(self, base: Path):
        self.markers, self.dir = base / "markers", base / "evil"
        self.markers.mkdir()
        self.dir.mkdir()

    def __call__(self, vector: str) -> str:
        path = self.dir / vector
        path.write_text(f'#!/bin/sh\ntouch "{self.markers}/{vector}"\nexit 1\n')
        path.chmod(0o755)
        return str(path)

    def ran(self) -> list[str]:
        return sorted(p.name for p in self.markers.iterdir())


def _git_path(checkout: Path, name: str) -> Path:
    return Path(git(checkout, "rev-parse", "--path-format=absolute", "--git-path", name))


def _elsewhere(tmp_path: Path) -> tuple[Path, str]:
    """A repository the agent must not reach (another workspace's cache, say), and a commit of it."""
    secret = tmp_path / "secret"
    secret.mkdir()
    git(secret, "init", "-q", "-b", "main")
    (secret / "plan.txt").write_text("the other workspace's secret\n")
    git(secret, "add", "plan.txt")
    git(secret, "-c", "user.name=s", "-c", "user.email=s@x", "commit", "-qm", "secret")
    return secret, git(secret, "rev-parse", "HEAD")


def _config(co: Path, *pairs: tuple[str, str]) -> None:
    for key, value in pairs:
        git(co, "config", "--add", key, value)


def _alternate(co: Path, objects: Path) -> None:
    alternates = _git_path(co, "objects/info/alternates")
    alternates.parent.mkdir(parents=True, exist_ok=True)
    alternates.write_text((alternates.read_text() if alternates.exists() else "") + f"{objects}\n")


def _other_objects(tmp_path: Path) -> Path:
    other = tmp_path / "other.git"
    if not other.exists():
        git(tmp_path, "init", "-q", "--bare", str(other))
        git(tmp_path, "--git-dir", str(other), "update-ref", "refs/heads/x",
            git(tmp_path, "--git-dir", str(other), "commit-tree", "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
                "-m", "x"))
    return other / "objects"


def _alternate_refs_command(co: Path, evil: Programs, ctx: dict) -> None:
    _alternate(co, _other_objects(ctx["tmp"]))
    _config(co, ("core.alternateRefsCommand", evil("alternateRefsCommand")))


def _git_proxy(co: Path, evil: Programs, ctx: dict) -> None:
    _config(co, ("core.gitProxy", evil("gitProxy")), ("url.git://127.0.0.1:9/proxied.insteadOf", ctx["url"]))


def _include_path(co: Path, evil: Programs, ctx: dict) -> None:
    included = ctx["tmp"] / "included.gitconfig"
    included.write_text(f"[core]\n\tfsmonitor = {evil('includePath-fsmonitor')}\n"
                        f"\tgitProxy = {evil('includePath-gitProxy')}\n"
                        f"[url \"git://127.0.0.1:9/proxied\"]\n\tinsteadOf = {ctx['url']}\n"
                        f"[gpg]\n\tprogram = {evil('includePath-gpg')}\n[commit]\n\tgpgSign = true\n"
                        "[log]\n\tshowSignature = true\n")
    _config(co, ("include.path", str(included)))


def _include_if(co: Path, evil: Programs, ctx: dict) -> None:
    cond = ctx["tmp"] / "includeif.gitconfig"
    cond.write_text(f"[core]\n\tgitProxy = {evil('includeIf-gitProxy')}\n"
                    f"[url \"git://127.0.0.1:9/r\"]\n\tinsteadOf = {ctx['url']}\n"
                    f"[diff]\n\texternal = {evil('includeIf-diff')}\n")
    _config(co, ("includeIf.gitdir:/.path", str(cond)), ("includeIf.onbranch:**.path", str(cond)))


def _ssh_command(co: Path, evil: Programs, ctx: dict) -> None:
    _config(co, ("core.sshCommand", evil("sshCommand")), ("url.ssh://127.0.0.1:9/r.insteadOf", ctx["url"]))


def _credential_helper(co: Path, evil: Programs, ctx: dict) -> None:
    _config(co, ("credential.helper", "!" + evil("credentialHelper")), (f"url.{ctx['forge']}.insteadOf", ctx["url"]))


def _drivers(co: Path, evil: Programs, ctx: dict) -> None:
    for kind in ("clean", "smudge", "process"):
        _config(co, (f"filter.evil.{kind}", evil(f"filter-{kind}")))
    _config(co, ("filter.evil.required", "true"), ("merge.evil.driver", evil("merge-driver") + " %O %A %B"),
            ("diff.evil.command", evil("diff-command")), ("diff.evil.textconv", evil("diff-textconv")),
            ("core.attributesFile", str(ctx["tmp"] / "attributes")))
    (ctx["tmp"] / "attributes").write_text("* filter=evil diff=evil merge=evil\n")
    (co / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    info = _git_path(co, "info/attributes")
    info.parent.mkdir(parents=True, exist_ok=True)
    info.write_text("* filter=evil diff=evil merge=evil\n")


def _hooks(co: Path, evil: Programs, ctx: dict) -> None:
    hooks = ctx["tmp"] / "hooks"
    for where in (hooks, _git_path(co, "hooks")):
        where.mkdir(parents=True, exist_ok=True)
        for hook in ("pre-commit", "post-commit", "post-checkout", "reference-transaction", "post-index-change",
                     "pre-auto-gc", "post-merge", "post-rewrite"):
            (where / hook).write_text(f"#!/bin/sh\nexec {evil('hook-' + hook)}\n")
            (where / hook).chmod(0o755)
    _config(co, ("core.hooksPath", str(hooks)), ("core.fsmonitor", evil("fsmonitor")))


def _worktree_config(co: Path, evil: Programs, ctx: dict) -> None:
    _alternate(co, _other_objects(ctx["tmp"]))
    _config(co, ("core.repositoryformatversion", "1"), ("extensions.worktreeConfig", "true"))
    _git_path(co, "config.worktree").write_text(
        f"[core]\n\talternateRefsCommand = {evil('worktreeConfig-alternateRefs')}\n"
        f"\tgitProxy = {evil('worktreeConfig-gitProxy')}\n"
        f"[url \"git://127.0.0.1:9/proxied\"]\n\tinsteadOf = {ctx['url']}\n")


VECTORS = {
    "core.alternateRefsCommand + objects/info/alternates": _alternate_refs_command,
    "core.gitProxy + url.<x>.insteadOf": _git_proxy,
    "include.path": _include_path,
    "includeIf": _include_if,
    "core.sshCommand": _ssh_command,
    "credential.helper": _credential_helper,
    "filter/merge/diff drivers + .gitattributes": _drivers,
    "core.hooksPath and hooks/": _hooks,
    "extensions.worktreeConfig + config.worktree": _worktree_config,
}


def _source(tmp_path: Path) -> tuple[Path, str]:
    """The forge's repository: one commit, reached by a file:// URL."""
    src = tmp_path / "src"
    src.mkdir()
    git(src, "init", "-q", "-b", "main")
    (src / "README.md").write_text("hello\n")
    git(src, "add", "README.md")
    git(src, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qm", "base")
    return src, f"file://{src}"


@pytest.mark.parametrize("vector", list(VECTORS))
def test_nothing_an_agent_writes_into_its_checkouts_git_dir_runs_in_the_daemon(
        vector: str, tmp_path: Path, forge_asking_for_a_password: str) -> None:
    evil = Programs(tmp_path)
    src, url = _source(tmp_path)
    cache = RepoCache(tmp_path / "root")
    co = cache.checkout(url, None, tmp_path / "task1" / "workdir" / "src", "agent/bot/t1")
    VECTORS[vector](co.path, evil, {"tmp": tmp_path, "url": url, "forge": forge_asking_for_a_password})
    (co.path / "work.txt").write_text("the agent's work, left uncommitted\n")

    # The run ends: its work is delivered (the leftover commit, the fetch into the cache), reviewed.
    placed = {"url": url, "path": str(co.path), "branch": co.branch, "start": co.commit, "cache": str(co.cache)}
    done = runcheckouts.deliver_placement(cache, placed, tmp_path / "task1" / ".delivery", agent_name="bot",
                                          task_id="t1")
    assert done.problem is None and done.leftovers
    out = review.branch_review(co.cache, co.commit, co.branch, mode="checkout", repo_label=url)
    assert "work.txt" in {f["path"] for f in out["files"]}
    # The next tasks of the repository: a fetch of the cache, new checkouts (one of the agent's branch).
    (src / "README.md").write_text("hello again\n")
    git(src, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qam", "more")
    second = cache.checkout(url, None, tmp_path / "task2" / "workdir" / "src", "agent/bot/t2")
    assert second.fetch_error is None and (second.path / "README.md").read_text() == "hello again\n"
    third = cache.checkout(url, co.branch, tmp_path / "task3" / "workdir" / "src", "agent/bot/t3")
    assert (third.path / "work.txt").read_text() == "the agent's work, left uncommitted\n"
    assert evil.ran() == []
    # The cache's config and object store are the daemon's still.
    assert "evil" not in (co.cache / "config").read_text()
    assert not (co.cache / "objects" / "info" / "alternates").exists()


def test_alternates_pointing_elsewhere_bring_nothing_of_there_into_the_cache(tmp_path: Path) -> None:
    """The agent points its object store at another repository it should not reach and its branch
    at a commit there: the delivery neither reads that store nor puts the commit into the cache."""
    secret, secret_commit = _elsewhere(tmp_path)
    src, url = _source(tmp_path)
    cache = RepoCache(tmp_path / "root")
    co = cache.checkout(url, None, tmp_path / "task1" / "workdir" / "src", "agent/bot/t1")
    alternates = _git_path(co.path, "objects/info/alternates")
    alternates.parent.mkdir(parents=True, exist_ok=True)
    alternates.write_text(alternates.read_text() + f"{secret / '.git' / 'objects'}\n")
    git(co.path, "update-ref", f"refs/heads/{co.branch}", secret_commit)
    placed = {"url": url, "path": str(co.path), "branch": co.branch, "start": co.commit, "cache": str(co.cache)}
    runcheckouts.deliver_placement(cache, placed, tmp_path / "task1" / ".delivery", agent_name="bot", task_id="t1")
    assert git(co.cache, "--git-dir", str(co.cache), "cat-file", "-e", secret_commit, check=False) == ""
    assert subprocess.run(["git", "--git-dir", str(co.cache), "cat-file", "-e", secret_commit],
                          capture_output=True, timeout=30).returncode != 0
    out = review.branch_review(co.cache, co.commit, co.branch, mode="checkout", repo_label=url)
    assert "secret" not in out["patch"]
    assert not (co.cache / "objects" / "info" / "alternates").exists()


def test_a_checkout_replaced_by_a_link_is_not_delivered(tmp_path: Path) -> None:
    """The agent swaps its checkout's folder for a link to somewhere it cannot read from inside (the
    daemon's state dir, `/`): the daemon must not commit what is there into the cache for it."""
    src = tmp_path / "src"
    src.mkdir()
    git(src, "init", "-q", "-b", "main")
    (src / "README.md").write_text("hello\n")
    git(src, "add", "README.md")
    git(src, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qm", "base")
    secrets = tmp_path / "state"
    secrets.mkdir()
    (secrets / "config.json").write_text('{"token": "pxu_owner"}\n')
    url = f"file://{src}"
    cache = RepoCache(tmp_path / "root")
    co = cache.checkout(url, None, tmp_path / "task1" / "workdir" / "src", "agent/bot/t1")
    import shutil
    shutil.rmtree(co.path)
    co.path.symlink_to(secrets)
    placed = {"url": url, "path": str(co.path), "branch": co.branch, "start": co.commit, "cache": str(co.cache)}
    with pytest.raises(Exception, match="no longer a folder"):
        runcheckouts.deliver_placement(cache, placed, tmp_path / "task1" / ".delivery", agent_name="bot", task_id="t1")
    assert subprocess.run(["git", "--git-dir", str(co.cache), "log", "-p", co.branch], capture_output=True,
                          text=True, timeout=30).stdout.count("pxu_owner") == 0
