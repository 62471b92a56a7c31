"""Pushing a task's branch to its forge, and fetching a branch from there (issue 22 §2, §5).

The forge's credential reaches git only through git's environment, as one HTTP header scoped to
the remote's URL:

    GIT_CONFIG_COUNT=N, GIT_CONFIG_KEY_i=http.<remote url>.extraHeader,
    GIT_CONFIG_VALUE_i=Authorization: Basic base64(user:token)

— never argv (every process's argv is readable by every user of the machine), never a config
file, never the agent's environment (the push runs in the daemon, after the run, in the daemon's
own repository: the repo cache or the person's repository). System and global config are off,
credential helpers are off (so a refused header never sends git asking a helper, nor a helper
storing it) and git never prompts. What git says on failure is scrubbed of the token (and its
base64 form) before it is reported or logged.

A push overwrites the forge's branch only when the forge still has what Predictor X pushed last
(`--force-with-lease=<ref>:<last pushed sha>`, or "must not exist yet" before the first push): a
person's commit pushed there meanwhile is never lost, the push is refused with a sentence instead.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from pathlib import Path

from ..forges.base import PushTarget
from .gitcmd import GitError, git

PUSH_TIMEOUT = 300.0
_SHA = re.compile(r"^[0-9a-f]{40}$")
#: What Predictor X keeps a fetched forge branch under in the repository it fetched into.
FETCHED_REFS = "refs/predictorx/forge"


#: The sentence of a push refused because the forge's branch is not what Predictor X pushed last.
CHANGED = ("the forge's branch {branch} was changed since Predictor X last pushed it "
           "(someone else pushed there), so it was not overwritten; look at it on the forge")


class PushError(RuntimeError):
    """The push or fetch did not happen; the message is a sentence for the task's page (no secret)."""


@dataclass(frozen=True)
class Pushed:
    sha: str


def credential_env(target: PushTarget) -> dict[str, str]:
    """git's environment for talking to `target.remote_url` with its credential (see the module)."""
    basic = base64.b64encode(f"{target.username}:{target.token}".encode()).decode()
    pairs = [
        (f"http.{target.remote_url}.extraHeader", f"Authorization: Basic {basic}"),
        ("credential.helper", ""),  # an empty value resets the list: no helper is asked
        ("core.askPass", ""),
    ]
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0",
           "GIT_ASKPASS": "", "SSH_ASKPASS": "", "GCM_INTERACTIVE": "never",
           "GIT_ALLOW_PROTOCOL": "https:http", "GIT_CONFIG_COUNT": str(len(pairs))}
    for i, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def scrub(text: str, target: PushTarget) -> str:
    """`text` without the credential in any form git could echo it."""
    basic = base64.b64encode(f"{target.username}:{target.token}".encode()).decode()
    for secret in (basic, target.token):
        if secret:
            text = text.replace(secret, "***")
    return re.sub(r"(://)[^/@\s]+@", r"\1***@", text)


def check_target(target: PushTarget) -> None:
    if not target.remote_url.startswith(("https://", "http://")):
        raise PushError(f"the forge remote {target.remote_url!r} is not an http(s) URL; nothing was pushed")
    if not _branch_name_ok(target.branch):
        raise PushError(f"{target.branch!r} is not a branch name Predictor X pushes")


#: What git's check-ref-format refuses in a ref name (control characters, space, ~^:?*[\ and DEL).
_REF_BAD = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def _branch_name_ok(branch: str) -> bool:
    """`branch` is a name git's check-ref-format takes for refs/heads/<branch> (and no option)."""
    return bool(branch) and not (
        branch.startswith(("-", "/", ".")) or branch.endswith(("/", ".", ".lock")) or ".." in branch
        or "//" in branch or "@{" in branch or branch == "@" or "/." in branch or ".lock/" in branch
        or _REF_BAD.search(branch))


def push(repo: Path, local_ref: str, target: PushTarget, *, lease: str | None,
         timeout: float = PUSH_TIMEOUT, git_dir: bool = False) -> Pushed:
    """Push `local_ref` (a ref or commit in the git dir or working copy `repo`) to
    `refs/heads/<target.branch>` at `target.remote_url`. `lease`: the sha Predictor X pushed
    there last (the forge's branch must still be that), or None (it must not exist yet).
    `git_dir`: `repo` is a git dir the daemon made itself (the delivery's quarantine), pinned as
    GIT_DIR. Raises PushError with a scrubbed sentence."""
    check_target(target)
    sha = local_ref if _SHA.match(local_ref) else _commit_of(repo, local_ref)
    remote_ref = f"refs/heads/{target.branch}"
    expect = lease if lease and _SHA.match(lease) else ""
    args = ["push", "--porcelain", "--no-verify", f"--force-with-lease={remote_ref}:{expect}",
            target.remote_url, f"{sha}:{remote_ref}"]
    done = _run(repo, args, target, timeout, git_dir=git_dir)
    if done.returncode != 0:
        said = scrub(done.stderr.decode("utf-8", "replace") + done.stdout.decode("utf-8", "replace"), target)
        if "stale info" in said or "fetch first" in said or "rejected" in said:
            raise PushError(CHANGED.format(branch=target.branch))
        raise PushError(f"git push to {scrub(target.remote_url, target)} failed: {_tail(said)}")
    return Pushed(sha)


def _commit_of(repo: Path, local_ref: str) -> str:
    try:
        return git(["rev-parse", "--verify", "-q", f"{local_ref}^{{commit}}"], cwd=repo,
                   timeout=60).stdout.decode().strip()
    except GitError as e:
        raise PushError(f"the branch {local_ref} is not in {repo} any more ({e}); nothing was pushed") from None


def fetch(repo: Path, target: PushTarget, dest_ref: str, *, timeout: float = PUSH_TIMEOUT) -> str:
    """Fetch `refs/heads/<target.branch>` from the forge into `dest_ref` of `repo`; return its sha."""
    check_target(target)
    args = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", target.remote_url,
            f"+refs/heads/{target.branch}:{dest_ref}"]
    done = _run(repo, args, target, timeout)
    if done.returncode != 0:
        said = scrub(done.stderr.decode("utf-8", "replace"), target)
        raise PushError(f"could not fetch branch {target.branch} from {scrub(target.remote_url, target)}: {_tail(said)}")
    sha = git(["rev-parse", "--verify", "-q", f"{dest_ref}^{{commit}}"], cwd=repo, timeout=60,
              check=False).stdout.decode().strip()
    if not _SHA.match(sha):
        raise PushError(f"branch {target.branch} fetched from the forge holds no commit")
    return sha


def _run(repo: Path, args: list[str], target: PushTarget, timeout: float, *, git_dir: bool = False):
    env = credential_env(target)
    if git_dir:
        env["GIT_DIR"] = str(repo)
    try:
        return git(args, cwd=repo, env=env, timeout=timeout, check=False)
    except GitError as e:  # only a timeout raises with check=False
        raise PushError(f"git {args[0]} to the forge {scrub(str(e), target)}") from None


def _tail(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith(("To ", "Done"))]
    return " / ".join(lines[-3:]) or "no reason given"


def adopt(repo: Path, branch: str, forge_sha: str, keep_as: str, *, timeout: float = 60.0) -> str:
    """Make `refs/heads/<branch>` of `repo` (the repo cache, the person's repository) hold the
    forge's head `forge_sha` before a follow-up run continues it; return where the run starts.
    A local branch behind the forge moves forward; one ahead of it (work not pushed yet) stays
    and the run starts there; one that went elsewhere is kept as `keep_as` and the run starts
    from the forge's head — nothing local is lost."""
    ref = f"refs/heads/{branch}"
    out = git(["rev-parse", "--verify", "-q", f"{ref}^{{commit}}"], cwd=repo, timeout=timeout, check=False)
    local = out.stdout.decode().strip() if out.returncode == 0 else ""
    if local == forge_sha:
        return forge_sha
    if not local:
        git(["update-ref", ref, forge_sha, ""], cwd=repo, timeout=timeout)
        return forge_sha

    def ancestor(a: str, b: str) -> bool:
        return git(["merge-base", "--is-ancestor", a, b], cwd=repo, timeout=timeout, check=False).returncode == 0

    if ancestor(forge_sha, local):
        return local
    if not ancestor(local, forge_sha):
        git(["update-ref", keep_as, local], cwd=repo, timeout=timeout)
    git(["update-ref", ref, forge_sha, local], cwd=repo, timeout=timeout)
    return forge_sha
