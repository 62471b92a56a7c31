"""Issue 29 finding 11: the harness's git questions after a run (HEAD, the commits since the start,
the default branch) about a folder the agent could write — a person's folder in place, a run's
checkout — read nothing there as configuration: `include.path`, `log.showSignature` with
`gpg.program`, `core.fsmonitor`, `config.worktree` made the daemon's `git log` run the agent's
program, outside the sandbox."""

from __future__ import annotations

import subprocess
from pathlib import Path

from predictorx.daemon import workflowhooks as harness


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          timeout=30).stdout.strip()


def test_the_handoff_facts_run_nothing_the_agent_configured(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {marker}\nexit 1\n")
    evil.chmod(0o755)
    folder = tmp_path / "folder"
    folder.mkdir()
    _git(folder, "init", "-q", "-b", "main")
    _git(folder, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-q", "--allow-empty", "-m", "start")
    start = _git(folder, "rev-parse", "HEAD")
    # The agent's run: a signed-looking commit, and config that makes a reader run its program.
    _git(folder, "-c", "user.name=a", "-c", "user.email=a@x", "commit", "-q", "--allow-empty", "-m", "agent work")
    included = tmp_path / "inc.gitconfig"
    included.write_text(f"[gpg]\n\tprogram = {evil}\n[log]\n\tshowSignature = true\n"
                        f"[core]\n\tfsmonitor = {evil}\n")
    _git(folder, "config", "include.path", str(included))
    _git(folder, "config", "gpg.ssh.program", str(evil))
    _git(folder, "config", "core.repositoryformatversion", "1")
    _git(folder, "config", "extensions.worktreeConfig", "true")
    (folder / ".git" / "config.worktree").write_text(f"[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {evil}\n")
    # A commit carrying a signature header, so a reader that verifies calls the program.
    body = _git(folder, "cat-file", "commit", "HEAD")
    head, _, message = body.partition("\n\n")
    sig = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----"
    signed = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=folder,
                            input=f"{head}\n{sig}\n\n{message}\n", capture_output=True, text=True, check=True,
                            timeout=30).stdout.strip()
    _git(folder, "update-ref", "refs/heads/main", signed)
    facts = harness._git_facts(harness.EndState(start_head=start), folder)
    assert facts["commits"] and facts["commits"][0].endswith("agent work")
    assert facts.get("branch") == "main"
    assert not marker.exists(), marker.read_text()


def test_the_handoff_facts_follow_no_alternates_the_agent_wrote(tmp_path: Path) -> None:
    """Alternates pointing at a repository the agent cannot read (another workspace's cache) and a
    branch set to a commit there: the daemon's facts say nothing of that repository."""
    secret = tmp_path / "secret"
    secret.mkdir()
    _git(secret, "init", "-q", "-b", "main")
    _git(secret, "-c", "user.name=s", "-c", "user.email=s@x", "commit", "-q", "--allow-empty", "-m", "PRIVATE PLAN")
    hidden = _git(secret, "rev-parse", "HEAD")
    folder = tmp_path / "folder"
    folder.mkdir()
    _git(folder, "init", "-q", "-b", "main")
    _git(folder, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-q", "--allow-empty", "-m", "start")
    start = _git(folder, "rev-parse", "HEAD")
    (folder / ".git" / "objects" / "info").mkdir(parents=True, exist_ok=True)
    (folder / ".git" / "objects" / "info" / "alternates").write_text(f"{secret / '.git' / 'objects'}\n")
    (folder / ".git" / "refs" / "heads" / "main").write_text(hidden + "\n")
    facts = harness._git_facts(harness.EndState(start_head=start), folder)
    assert "PRIVATE PLAN" not in str(facts)
