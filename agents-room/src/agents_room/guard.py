"""The commit guard (R-ROOM-17): a git pre-commit hook that refuses a commit touching files another
live session holds an exclusive lease on in that repository, naming the holder and the expiry.

``git commit --no-verify`` still works (git skips the hook). The check is fast — one read-only
query and two git calls, no MCP import (< 100 ms on a 10,000-file repository, see bench/room.py) —
and fails open: a store that is missing, unreadable or broken lets the commit through with a
warning. The committer's own sessions are never in the way: a session whose harness process is an
ancestor of the commit, or whose id is in ``AGENTS_ROOM_SESSION``, is "you".
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time

from .sqlite_api import sqlite3
from .errors import AgentsRoomError

MARK = "agents-room guard"
REFUSED = 3  # the check's exit code for "refuse"; the hook script turns it into 1, any other failure into 0
GIT_TIMEOUT_S = 10.0


class GuardError(AgentsRoomError):
    """A reason `guard install` did nothing; one sentence."""


def _git(repo: str, *args: str) -> str:
    res = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S)
    if res.returncode != 0:
        raise GuardError((res.stderr.strip() or f"git {' '.join(args)} failed").splitlines()[-1])
    return res.stdout


def hook_script(python: str | None = None) -> str:
    py = shlex.quote(python or sys.executable)
    return f"""#!/bin/sh
# {MARK}: refuses a commit of files another live agents-room session leases exclusively.
# Skip it once with: git commit --no-verify. Installed by `agents-room guard install`.
if [ -x {py} ]; then
  {py} -m agents_room guard check --repo .
  [ $? -eq {REFUSED} ] && exit 1
fi
exit 0
"""


def install(repo: str = ".", force: bool = False) -> dict:
    """Write the pre-commit hook (git's hooks folder, honouring core.hooksPath)."""
    try:
        top = _git(repo, "rev-parse", "--show-toplevel").strip()
        hooks = _git(top, "rev-parse", "--git-path", "hooks").strip()
    except (GuardError, OSError, subprocess.SubprocessError) as exc:
        raise GuardError(f"{repo} is not a git repository ({exc})") from None
    hooks_dir = hooks if os.path.isabs(hooks) else os.path.join(top, hooks)
    os.makedirs(hooks_dir, exist_ok=True)
    path = os.path.join(hooks_dir, "pre-commit")
    if os.path.exists(path) and not force:
        with open(path, errors="replace") as fh:
            current = fh.read()
        if MARK not in current:
            raise GuardError(
                f"{path} already exists and is not agents-room's: add this line to it, or rerun with --force to replace it: "
                f"{shlex.quote(sys.executable)} -m agents_room guard check --repo . ; [ $? -eq {REFUSED} ] && exit 1"
            )
    with open(path, "w") as fh:
        fh.write(hook_script())
    os.chmod(path, 0o755)
    return {"installed": path, "repository": top, "bypass": "git commit --no-verify"}


def _ancestors() -> set[int]:
    pids, pid = set(), os.getpid()
    for _ in range(64):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if pid <= 1:
            break
        pids.add(pid)
    return pids


def check(repo: str = ".", db_path: str | None = None) -> tuple[int, str]:
    """(exit code, message): 0 to let the commit through, REFUSED to refuse it."""
    try:
        top = _git(repo, "rev-parse", "--show-toplevel").strip()
        staged = [p for p in _git(top, "diff", "--cached", "--name-only", "-z").split("\0") if p]
    except (GuardError, OSError, subprocess.SubprocessError) as exc:
        return 0, f"{MARK}: not checked ({exc})"
    if not staged:
        return 0, ""
    from .naming import glob_matches, repo_of
    from .store import default_db_path

    repo_room, _ = repo_of(top)
    store = str(db_path or default_db_path())
    if not os.path.exists(store):
        return 0, ""
    try:
        conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=2.0)
        conn.row_factory = sqlite3.Row
        try:
            rows = conn.execute(
                "SELECT l.pattern, l.expires_at, s.id, s.label, s.pid, s.pid_start, s.env_marker FROM leases l "
                "JOIN sessions s ON s.id=l.session_id WHERE l.repo=? AND l.mode='exclusive' AND l.expires_at>? "
                "AND s.ended_at IS NULL", (repo_room or "", time.time()),
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:  # fail open: an unreadable store never blocks a commit
        return 0, f"{MARK}: the store {store} could not be read ({exc}); commit not checked"
    if not rows:
        return 0, ""
    from . import liveness

    mine = {s for s in os.environ.get("AGENTS_ROOM_SESSION", "").split(",") if s}
    ancestors = _ancestors()
    hits = []
    for r in rows:
        if r["id"] in mine or (r["pid"] is not None and r["pid"] in ancestors):
            continue
        if liveness.is_alive(r["pid"], r["pid_start"], r["env_marker"]) is False:
            continue  # a gone holder protects nothing; the next lease_acquire takes it over
        for path in staged:
            if glob_matches(r["pattern"], path):
                hits.append((path, r))
    if not hits:
        return 0, ""
    lines = [f"{MARK}: commit refused: {len(hits)} staged file(s) are leased exclusively by another live session"]
    for path, r in hits[:20]:
        until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(r["expires_at"]))
        mins = max(1, int((r["expires_at"] - time.time()) // 60))
        lines.append(f"  {path}: lease {r['pattern']} held by {r['id']}" + (f" ({r['label']})" if r["label"] else "")
                     + f" in {repo_room} until {until} (in {mins}m)")
    lines.append(f"Ask the holder (agents-room send --session <you> --to file:{hits[0][0]} ...), wait for the lease to end, "
                 "or commit anyway with git commit --no-verify.")
    return REFUSED, "\n".join(lines)


def main(argv: list[str]) -> int:
    """`agents-room guard check [--repo DIR]` without argparse: it runs on every commit."""
    repo = "."
    if "--repo" in argv:
        i = argv.index("--repo")
        repo = argv[i + 1] if i + 1 < len(argv) else "."
    for a in argv:
        if a.startswith("--repo="):
            repo = a.split("=", 1)[1]
    try:
        code, message = check(repo)
    except Exception as exc:  # noqa: BLE001 -- fail open, say so
        code, message = 0, f"{MARK}: not checked ({type(exc).__name__}: {exc})"
    if message:
        print(message, file=sys.stderr)
    return code
