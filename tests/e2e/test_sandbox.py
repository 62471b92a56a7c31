"""The opt-in bubblewrap sandbox for agent runs (R-SEC-6, issue 8 finding 2).

A sandboxed agent (one agent with `sandbox`, or every agent of a `daemon start --sandbox`)
cannot read the state dir (the owner's token in config.json), ~/.ssh or ~/.config, yet writes its
workdir, commits in worktree mode, reaches the network and runs `predictorx`. Where bubblewrap is
missing and the sandbox was asked for, nothing runs unconfined: the daemon refuses to start, a
task fails saying why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .harness import git, make_repo, wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux-only")


def _fake_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY of the daemon's owner\n")
    (home / ".config" / "gh").mkdir(parents=True)
    (home / ".config" / "gh" / "hosts.yml").write_text("oauth_token: gho_owner\n")
    return home


def _probe(tmp_path: Path, targets: dict[str, Path], then: str = "") -> list[str]:
    """A command agent that tries to read each target and records what it got in probe.txt."""
    lines = ["out=probe.txt", ": > $out"]
    for name, path in targets.items():
        lines.append(f"if cat '{path}' >/dev/null 2>&1 || ls '{path}' >/dev/null 2>&1; "
                     f"then echo '{name} readable' >> $out; else echo '{name} hidden' >> $out; fi")
    lines.append("cat $out")
    lines.append(then)
    script = tmp_path / "probe.sh"
    script.write_text("\n".join(lines) + "\n")
    return ["sh", str(script)]


def test_a_sandboxed_agent_reads_no_secret_yet_writes_its_workdir_and_commits(server, start_daemon, tmp_path):
    home = _fake_home(tmp_path)
    daemon = start_daemon(HOME=str(home))
    folder = make_repo(tmp_path / "mine", {"README.md": "# mine\n"})
    targets = {"state dir": daemon.home, "owner config": daemon.home / "config.json",
               "server state": server.home / "config.json", "ssh key": home / ".ssh" / "id_ed25519",
               "config dir": home / ".config" / "gh" / "hosts.yml"}
    argv = _probe(tmp_path, targets, then="echo work > work.txt && git add work.txt probe.txt && "
                                          "git commit -q -m 'sandboxed work' && echo committed")
    server.api("POST", "/api/agents", {"name": "boxed", "provider": "command", "command": argv, "sandbox": True})
    assert server.api("GET", "/api/agents/boxed")["sandbox"] is True
    assert server.api("PATCH", "/api/agents/boxed", {"sandbox": False})["sandbox"] is False
    server.cli("agent", "update", "boxed", "--sandbox")
    assert server.api("GET", "/api/agents/boxed")["sandbox"] is True
    project = server.api("POST", "/api/projects", {"title": "Mine", "resources": [{
        "resource_type": "local_directory", "label": "my checkout",
        "resource_ref": {"local_path": str(folder), "daemon_id": daemon.id, "execution_mode": "worktree"}}]})
    issue = server.api("POST", "/api/issues", {"title": "Try", "project_id": project["id"], "assignee": "boxed"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"])
    assert task["status"] == "completed", task
    probe = git(folder, "show", f"{task['branch_name']}:probe.txt")
    for name in targets:
        assert f"{name} hidden" in probe, probe
    assert git(folder, "show", f"{task['branch_name']}:work.txt") == "work\n"
    assert "sandboxed work" in git(folder, "log", "--format=%s", task["branch_name"])
    assert not (folder / "work.txt").exists()  # the person's folder itself is untouched (worktree mode)


def test_daemon_sandbox_confines_every_agent_and_keeps_network_and_cli(server, start_daemon, tmp_path):
    home = _fake_home(tmp_path)
    daemon = start_daemon(HOME=str(home), args=("--sandbox",))
    argv = _probe(tmp_path, {"owner config": daemon.home / "config.json", "ssh key": home / ".ssh" / "id_ed25519"},
                  then='predictorx issue comment "$PREDICTORX_ISSUE" "from inside the sandbox" && '
                       'tr "\\0" " " < /proc/1/cmdline')
    server.api("POST", "/api/agents", {"name": "plain", "provider": "command", "command": argv})
    issue = server.api("POST", "/api/issues", {"title": "Try", "assignee": "plain"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"])
    assert task["status"] == "completed", task
    text = json.dumps(server.api("GET", f"/api/tasks/{task['id']}/messages"))
    assert "owner config hidden" in text and "ssh key hidden" in text
    assert "bwrap" in text  # pid 1 of its world is the sandbox, not the daemon
    comments = server.api("GET", f"/api/issues/{issue['number']}/comments")
    assert any(c["body"] == "from inside the sandbox" for c in comments)


def test_the_sandbox_asked_for_where_bubblewrap_is_missing_is_refused(server, start_daemon, tmp_path):
    missing = str(tmp_path / "no-bwrap-here")
    # The daemon asked to sandbox everything does not start.
    env = {**server.env, "PREDICTORX_HOME": str(server.home), "PREDICTORX_BWRAP": missing}
    p = subprocess.run([sys.executable, "-m", "predictorx", "daemon", "start", "--foreground", "--sandbox"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "bubblewrap" in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    p = subprocess.run([sys.executable, "-m", "predictorx", "up", "--sandbox", "--no-demo", "--port", "1"],
                       env={**env, "PREDICTORX_HOME": str(tmp_path / "up-home")}, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    # An agent that asks for it on a daemon without bubblewrap fails, and says why; it never runs.
    daemon = start_daemon(PREDICTORX_BWRAP=missing)
    ran = tmp_path / "ran"
    server.api("POST", "/api/agents", {"name": "boxed", "provider": "command", "sandbox": True,
                                       "command": ["sh", "-c", f"touch {ran}"]})
    issue = server.api("POST", "/api/issues", {"title": "Try", "assignee": "boxed"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"])
    assert task["status"] == "failed" and "bubblewrap" in task["failure_reason"], task
    assert "asks for the sandbox" in task["failure_reason"] and "install" in task["failure_reason"]
    assert not ran.exists()
    assert daemon.proc.poll() is None


def test_a_secret_inside_a_writable_folder_is_covered_and_a_cli_config_dir_is_the_runs_copy(tmp_path):
    """The state dir inside a person's in-place folder stays invisible; ~/.config/opencode inside
    the hidden ~/.config is there, writable, as the run's own copy: the person's stays as it was
    (real bwrap, no daemon)."""
    from predictorx.daemon import cliconfig, sandbox

    folder, home = tmp_path / "folder", tmp_path / "home"
    (folder / "state").mkdir(parents=True)
    (folder / "state" / "config.json").write_text('{"token": "pxu_secret"}')
    (home / ".config" / "opencode").mkdir(parents=True)
    (home / ".config" / "opencode" / "opencode.json").write_text("{}")
    (home / ".config" / "other-app").mkdir(parents=True)
    (home / ".config" / "other-app" / "token").write_text("other secret")
    overlays = cliconfig.prepare("opencode", home, {}, tmp_path / "run-copy", tmp_path / "sessions")
    plan = sandbox.SandboxPlan(bwrap=sandbox.bwrap_executable(), provider="opencode", writable=[folder],
                               hidden=[folder / "state", home / ".config"], home=home, chdir=folder,
                               seccomp=sandbox.write_filter(tmp_path), overlays=overlays)
    script = ("ls state/config.json 2>/dev/null && echo STATE-VISIBLE; "
              "cat ~/.config/other-app/token 2>/dev/null; "
              "echo '{\"x\": 1}' > ~/.config/opencode/opencode.json 2>/dev/null && echo CONFIG-WRITTEN; "
              "cat ~/.config/opencode/opencode.json; echo; "
              "echo ok > ~/.config/opencode/x && cat ~/.config/opencode/x && echo > mine.txt && echo done")
    env = {**os.environ, "HOME": str(home)}
    out = subprocess.run(plan(["sh", "-c", script], env), env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["{}", "ok", "done"], out.stdout
    assert not (home / ".config" / "opencode" / "x").exists() and (folder / "mine.txt").exists()
    assert (home / ".config" / "opencode" / "opencode.json").read_text() == "{}"
    assert (folder / "state" / "config.json").exists()  # covered inside, untouched outside


@pytest.mark.parametrize("start", ["launch", "call"])
def test_claude_json_is_a_copy_in_the_sandboxs_memory_that_claude_code_can_replace(tmp_path, start):
    """Claude Code saves ~/.claude.json by writing a temporary file and renaming it over the old
    one, ~8 times a run. Bound read-only (a mount point: the rename fails with EBUSY, the write
    with EROFS), it tried each save three ways (~16 ms of CPU a run, issue 30). Now the sandbox
    starts with a copy of the person's file in its own memory: readable, replaceable by a rename,
    gone with the run; the person's file is never written (real bwrap, no daemon; both ways a
    plan starts its bwrap: with the daemon's own fds, and through a shell that opens them)."""
    from predictorx.daemon import cliconfig, sandbox

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (home / ".claude.json").write_text('{"numStartups": 3}')
    overlays = cliconfig.prepare("claude", home, {}, tmp_path / "run-copy", tmp_path / "sessions")
    plan = sandbox.SandboxPlan(bwrap=sandbox.bwrap_executable(), provider="claude", writable=[work], home=home,
                               chdir=work, seccomp=sandbox.write_filter(tmp_path), overlays=overlays)
    script = ("cat ~/.claude.json; echo; printf '{\"numStartups\": 4}' > ~/.claude.json.tmp.1 && "
              "mv ~/.claude.json.tmp.1 ~/.claude.json && cat ~/.claude.json")
    env = {**os.environ, "HOME": str(home)}
    argv, fds = plan.launch(["sh", "-c", script], env) if start == "launch" else (plan(["sh", "-c", script], env), ())
    try:
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, pass_fds=fds)
    finally:
        for fd in fds:
            os.close(fd)
    assert out.returncode == 0, out.stderr
    assert out.stdout == '{"numStartups": 3}\n{"numStartups": 4}', out.stdout
    assert (home / ".claude.json").read_text() == '{"numStartups": 3}'
    assert [p.name for p in home.iterdir()] == [".claude.json"]  # (the save left nothing behind)
