"""Run the git command line with a timeout, in an environment that cannot be redirected.

Everything the daemon does to a person's repository goes through `git(...)`: one place decides
which environment git sees, how long it may take and what a failure looks like.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

DEFAULT_TIMEOUT = 120.0

# Variables that would point git at another repository, index or object store than the one we
# name with -C. The daemon may itself run inside a git hook or a test harness that sets them.
_REDIRECTING = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX",
    "GIT_QUARANTINE_PATH", "GIT_LITERAL_PATHSPECS", "GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
)

# Options for every command. Hooks are the person's, for their own work: our plumbing commits
# (baselines, leftovers) must neither be blocked by a lint hook nor run a post-checkout script.
# Automatic gc would make timings unpredictable and is the person's business.
# The daemon's git never runs in a git dir a run could write (a run's checkout is a repository of
# its own, read back only as data: `delivery`, `gitview`); these switches are defence in depth for
# the repositories it does run in, and for an in-place folder's `.git` an older daemon's
# worktree shared: `core.fsmonitor` (any status/add/diff) or `gpg.program` with `commit.gpgSign`
# would run a program (docs/security-sandbox.md, "Git").
_ALWAYS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "commit.gpgSign=false",
           "-c", "tag.gpgSign=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false")


#: Config scopes an agent could write in an older daemon's linked worktree (GC still meets those):
#: the repository's own files and what they include. Global and system config are the person's.
_REPOSITORY_SCOPES = (b"local", b"worktree")


class GitError(RuntimeError):
    """A git command failed or timed out: the daemon's one git error. `stderr` holds what git
    said, stripped, with any credentials in URLs masked (messages reach the server and agents);
    the message names the subcommand and git's last lines."""

    def __init__(self, args: Sequence[str], returncode: int | None, stderr: str, stdout: bytes = b"", *,
                 timed_out: bool | None = None):
        self.git_args = list(args)
        self.returncode = returncode
        self.stderr = _redact(stderr).strip()
        self.stdout = stdout
        self.timed_out = returncode is None if timed_out is None else timed_out
        detail = self.stderr.splitlines()[-3:]
        reason = "timed out" if self.timed_out else f"failed (exit {returncode})"
        super().__init__(f"git {_subcommand(self.git_args)} {reason}" + (": " + " / ".join(detail) if detail else ""))


def _subcommand(args: Sequence[str]) -> str:
    """`fetch` out of `--git-dir X -c k=v fetch --prune …`, for messages."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("--git-dir", "-c", "-C") else 1
    return args[i] if i < len(args) else "command"


def _redact(text: str) -> str:
    # Messages reach the server and the agent: never a token embedded in a URL.
    return re.sub(r"(://)[^/@\s]+@", r"\1***@", text)


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for git: ours minus redirections, never prompting, optional locks off.

    GIT_OPTIONAL_LOCKS=0 matters: without it read-only commands such as `git status` refresh and
    rewrite the index, and the person's index must stay byte-identical.
    """
    env = {k: v for k, v in os.environ.items() if k not in _REDIRECTING}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C", LANGUAGE="C")
    if extra:
        env.update(extra)
    return env


def sealed_env(git_dir: str | os.PathLike[str] | None = None, **more: str) -> dict[str, str]:
    """Environment entries for a git command that must read no configuration but the repository's
    own file, and none of the person's (system, global) either: for repositories the daemon made
    itself (a run's new repository, the delivery's quarantine). `git_dir` pins GIT_DIR."""
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_COUNT": "0"}
    if git_dir is not None:
        env["GIT_DIR"] = str(git_dir)
    env.update(more)
    return env


def git(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git -C cwd <args>`; raise GitError on failure (if check) or timeout (always).

    stdout is bytes (callers use -z for paths); stderr is decoded for messages. On timeout the
    whole process group is killed, so filters or helpers git started do not linger.
    """
    cmd = ["git", "-C", str(Path(cwd)), *_ALWAYS, *args]
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=git_env(env),
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        raise GitError(args, None, f"no answer within {timeout:g}s", out) from None
    stderr = err.decode("utf-8", "replace")
    if check and proc.returncode != 0:
        raise GitError(args, proc.returncode, stderr, out)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def filters_off(cwd: str | os.PathLike[str], *, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """`-c` options that switch off every filter driver the repository's own config defines, for a
    command that reads or writes a work tree (add, commit, status, worktree add) in a repository an
    agent could write: a `filter.<driver>.clean|smudge|process` it added there with a
    `.gitattributes` line ran its program as the daemon, outside the sandbox. Raises GitError when
    git cannot say which drivers there are (then the command must not run)."""
    args = ["config", "-z", "--show-scope", "--get-regexp", r"^filter\."]
    out = git(args, cwd=cwd, timeout=timeout, check=False)
    if out.returncode not in (0, 1):  # 1: no filter at all
        raise GitError(args, out.returncode, out.stderr.decode("utf-8", "replace"), out.stdout)
    fields = out.stdout.split(b"\0")
    names = set()
    for scope, entry in zip(fields[0::2], fields[1::2]):
        if scope in _REPOSITORY_SCOPES:
            key = entry.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
            names.add(key[len("filter."):].rsplit(".", 1)[0])
    off: list[str] = []
    for name in sorted(names):
        if "=" in name:  # `-c` would split the key there
            raise GitError(args, 1, f"the repository's config names a filter driver {name!r} that cannot be switched off")
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
            off += ["-c", f"filter.{name}.{key}={value}"]
    return off


def git_text(args: Sequence[str], **kwargs) -> str:
    """stdout of a successful git command as stripped text (for hashes, names, single values)."""
    return git(args, **kwargs).stdout.decode("utf-8", "surrogateescape").strip()


KEPT_REFS = "refs/predictorx/kept"


def anchor_unbranched_head(worktree: str | os.PathLike[str], name: str, *,
                           timeout: float = DEFAULT_TIMEOUT) -> tuple[str, str] | None:
    """Before a worktree is removed: if its HEAD commit is on no branch of the repository, keep
    it under `refs/predictorx/kept/<name>` (`-2`, `-3`, … when taken; never overwritten), so
    removing the worktree cannot leave it dangling for git's gc.

    Returns (ref, commit) when a ref holds it (made now, or an earlier anchor already held it),
    None when a branch holds it or there is no commit to keep. Raises GitError when git cannot
    tell — then the worktree must not be removed.
    """
    from .branches import ref_component  # no cycle: branches imports nothing of ours

    wt = Path(worktree)
    if not os.path.lexists(wt / ".git"):
        return None  # not a working tree (git would look in the folders above it)
    r = git(["rev-parse", "--verify", "-q", "HEAD^{commit}"], cwd=wt, timeout=timeout, check=False)
    if r.returncode == 1 and not r.stderr.strip():
        return None  # HEAD has no commit yet: nothing to lose
    if r.returncode != 0:
        raise GitError(["rev-parse", "--verify", "-q", "HEAD^{commit}"], r.returncode,
                       r.stderr.decode("utf-8", "replace"), r.stdout)
    sha = r.stdout.decode().strip()
    holders = ["for-each-ref", "--count=1", "--format=%(refname)", "--contains", sha]
    if git_text([*holders, "refs/heads/"], cwd=wt, timeout=timeout):
        return None
    earlier = git_text([*holders, f"{KEPT_REFS}/"], cwd=wt, timeout=timeout)
    if earlier:
        return earlier, sha
    base = f"{KEPT_REFS}/{ref_component(name, 'worktree')}"
    last: GitError | None = None
    for ref in (base, *(f"{base}-{n}" for n in range(2, 100))):
        try:  # "" as the old value: only if the ref does not exist yet
            git(["update-ref", "-m", "predictorx: keep a worktree's HEAD that no branch holds", ref, sha, ""],
                cwd=wt, timeout=timeout)
            return ref, sha
        except GitError as e:
            last = e
    assert last is not None
    raise last
