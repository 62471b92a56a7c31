"""Finding 2 (issue 8), agent side: no secret and no path to one within an agent's reach (R-SEC-6).

The attack of the report, by a `command` agent: read /proc/$PPID/environ (the daemon's, with
PREDICTORX_HOME → config.json → the owner's token), then walk up the process tree reading each
ancestor's environ, cmdline and cwd, and look through its own environment, argv and workdir.
The daemon is non-dumpable, so same-user processes cannot read its /proc entries.

Tests usually run as root, whose CAP_SYS_PTRACE reads any /proc entry whatever the dumpable flag,
while a daemon runs as a person's ordinary user. So when the test runs as root, the daemon (and
so its agents) runs under `setpriv` without capabilities: an ordinary user's powers, uid 0.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .harness import UNCONFINED, wait_until

#: An ordinary user's powers for a root test run (see above); nothing to drop otherwise.
WITHOUT_CAPABILITIES = ("setpriv", "--bounding-set=-all", "--inh-caps=-all", "--") if os.getuid() == 0 else ()

ATTACK = r'''
import json, os, sys
found = {"env": dict(os.environ), "argv": sys.argv, "files": {}, "proc": {}}
for root, dirs, files in os.walk("."):
    dirs[:] = [d for d in dirs if d != ".git"]
    for name in files:
        try:
            found["files"][os.path.join(root, name)] = open(os.path.join(root, name), errors="replace").read()
        except OSError as e:
            found["files"][os.path.join(root, name)] = str(e)
pid = os.getppid()
while pid > 1:
    entry = {}
    for what in ("environ", "cmdline"):
        try:
            entry[what] = open(f"/proc/{pid}/{what}", "rb").read().decode(errors="replace")
        except OSError as e:
            entry[what] = f"denied: {e}"
    for what in ("cwd", "exe", "root"):
        try:
            entry[what] = os.readlink(f"/proc/{pid}/{what}")
        except OSError as e:
            entry[what] = f"denied: {e}"
    try:
        entry["mem"] = "readable" if open(f"/proc/{pid}/mem", "rb") else ""
    except OSError as e:
        entry["mem"] = f"denied: {e}"
    found["proc"][pid] = entry
    try:
        pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        break
open(sys.argv[1], "w").write(json.dumps(found))
print(json.dumps({"type": "text", "text": json.dumps(found)}))
'''


def test_finding_02_proc_environ_attack_finds_no_token_and_no_state_dir(server, start_daemon, tmp_path):
    script = tmp_path / "attack.py"
    script.write_text(ATTACK)
    loot = tmp_path / "loot.json"
    argv = [sys.executable, str(script), str(loot)]
    daemon = start_daemon(wrapper=WITHOUT_CAPABILITIES)
    secrets = {
        "the daemon's token": json.loads((daemon.home / "config.json").read_text())["token"],
        "the owner's token": server.token,
        "the daemon's state dir": str(daemon.home),
        "the server's state dir": str(server.home),
    }
    server.api("POST", "/api/agents", {**UNCONFINED, "name": "snoop", "provider": "command", "command": argv})
    issue = server.api("POST", "/api/issues", {"title": "Look around", "assignee": "snoop"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"])
    assert task["status"] == "completed", task

    found = json.loads(loot.read_text())
    assert str(daemon.proc.pid) in found["proc"], "the walk up the tree passed the daemon"
    at_daemon = found["proc"][str(daemon.proc.pid)]
    assert at_daemon["environ"].startswith("denied"), "the daemon's /proc environ is readable"
    assert at_daemon["cwd"].startswith("denied") and at_daemon["mem"].startswith("denied")
    everything = json.dumps(found)
    for what, secret in secrets.items():
        assert secret not in everything, f"the agent found {what}"
    messages = server.api("GET", f"/api/tasks/{task['id']}/messages")
    for what, secret in secrets.items():
        assert secret not in json.dumps(messages), f"{what} reached the task's messages"
    assert not [k for k in found["env"] if k in ("PREDICTORX_DATABASE_URL",)]
    assert Path(found["env"]["PREDICTORX_HOME"]).resolve() != daemon.home.resolve()
