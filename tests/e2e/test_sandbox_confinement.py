"""Issue 29 finding 2: a sandboxed agent holds no capability on the host, whoever runs the daemon.

As root, bwrap used to leave the agent every capability but module loading: `open_by_handle_at`
through its workdir's mount read the hidden state dir's config.json, and through a directory
handle it created files anywhere on the filesystem. Now the sandbox has its own user namespace
(no further one), drops every capability, and loads a seccomp filter (daemon/seccomp.py). The
attack (sandbox_escape_probe.py) is run through a real daemon, and through a sandbox plan as root and as
an unprivileged user.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from predictorx.daemon import sandbox, seccomp

from .harness import wait_until
from . import sandbox_escape_probe as escape_probe

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux-only")
PROBE = Path(escape_probe.__file__)
PYTHON = shutil.which("python3", path="/usr/bin:/bin")
HEADERS = {"x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
           "aarch64": Path("/usr/include/asm-generic/unistd.h")}


def _assert_confined(output: str) -> None:
    assert "CapEff 0000000000000000" in output, output
    assert "read-by-handle refused" in output and "LEAKED" not in output, output
    assert "create-by-handle refused" in output and "CREATED" not in output, output
    for attempt in ("unshare-user", "unshare-mount", "mount", "setuid-chmod", "setgid-chmod", "setuid-create",
                    "setgid-create", "io_uring"):
        assert f"{attempt} refused" in output, output
    assert "ALLOWED" not in output and "plain-mode allowed" in output and "set-id bits on disk 0o0" in output, output


@pytest.mark.parametrize("arch", sorted(seccomp.SYSCALLS))
def test_the_filter_tables_match_the_kernel_headers(arch: str) -> None:
    header = HEADERS[arch]
    if not header.exists():
        pytest.skip(f"{header} is not installed")
    numbers = {m[1]: int(m[2]) for m in re.finditer(r"#define __NR(?:3264)?_(\w+)\s+(\d+)", header.read_text())}
    for name, number in seccomp.SYSCALLS[arch].items():
        if name in numbers:  # newer calls (open_tree_attr) may postdate the installed headers
            assert numbers[name] == number, (arch, name)
    program = seccomp.program(arch)
    assert len(program) % 8 == 0 and len(program) // 8 < 4096


def test_a_sandboxed_agent_run_by_a_root_daemon_cannot_escape_by_handle(server, start_daemon, tmp_path):
    daemon = start_daemon()
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = daemon.home / "config.json"
    before = secret.read_bytes()
    argv = [PYTHON, str(PROBE), ".", escape_probe.handle_of(str(secret)), escape_probe.handle_of(str(outside))]
    server.api("POST", "/api/agents", {"name": "escaper", "provider": "command", "command": argv, "sandbox": True})
    issue = server.api("POST", "/api/issues", {"title": "Escape", "assignee": "escaper"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"])
    assert task["status"] == "completed", task
    _assert_confined(json.dumps(server.api("GET", f"/api/tasks/{task['id']}/messages")))
    assert secret.read_bytes() == before and list(outside.iterdir()) == []


@pytest.mark.parametrize("who", ["root", "unprivileged"])
def test_the_sandbox_plan_confines_root_and_an_ordinary_user_alike(who: str) -> None:
    if who == "root" and os.getuid() != 0:
        pytest.skip("needs root")
    drop: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="px-confine-"))
    try:
        work, state, outside = base / "work", base / "state", base / "outside"
        for d in (work, state, outside):
            d.mkdir()
        (state / "config.json").write_text('{"token": "pxu_owner"}')
        shutil.copy(PROBE, base / "probe.py")
        if who == "unprivileged":
            if os.getuid() != 0:
                pass  # already an ordinary user
            else:
                os.chmod(base, 0o755)
                shutil.chown(work, "nobody")
                drop = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                        "--inh-caps=-all", "--bounding-set=-all", "--"]
        plan = sandbox.SandboxPlan(bwrap=sandbox.bwrap_executable(), provider="command", writable=[work],
                                   readable=[base / "probe.py"], hidden=[state], home=base / "home", chdir=work,
                                   seccomp=sandbox.write_filter(base))
        argv = [PYTHON, str(base / "probe.py"), str(work), escape_probe.handle_of(str(state / "config.json")),
                escape_probe.handle_of(str(outside))]
        env = {"PATH": "/usr/bin:/bin", "HOME": str(base / "home")}
        out = subprocess.run([*drop, *plan(argv, env)], env=env, capture_output=True, text=True, timeout=60,
                             cwd=work)
        assert out.returncode == 0, out.stderr
        _assert_confined(out.stdout)
        assert list(outside.iterdir()) == []
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_threads_forks_and_git_still_work_inside(tmp_path: Path) -> None:
    """The filter refuses namespaces, not processes: git (fork/exec, threads) works in the workdir,
    and what the agent creates belongs to the daemon's user outside."""
    work = tmp_path / "work"
    work.mkdir()
    plan = sandbox.SandboxPlan(bwrap=sandbox.bwrap_executable(), provider="command", writable=[work],
                               home=tmp_path / "home", chdir=work, seccomp=sandbox.write_filter(tmp_path))
    script = ("git init -q . && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x && "
              "python3 -c 'import threading,os; t=threading.Thread(target=print); t.start(); t.join(); "
              "pid=os.fork(); os._exit(0) if pid==0 else os.waitpid(pid,0)' && echo made > made.txt && echo ok")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    out = subprocess.run(plan(["sh", "-c", script], env), env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr
    assert (work / "made.txt").stat().st_uid == os.getuid()


I386_GETPID = '#include <stdio.h>\nint main(void) { long r; __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L)); ' \
              'printf("%ld\\n", r); return 0; }\n'


@pytest.mark.skipif(seccomp.machine() != "x86_64", reason="the i386 and x32 ABIs are x86_64's")
def test_a_system_call_of_another_abi_kills_the_process(tmp_path: Path) -> None:
    """The filter's table is x86_64's: a call through the i386 ABI (`int 0x80`) or with the x32 bit
    would mean another call; the process is killed (SIGSYS) instead of the table being bypassed."""
    calls = {"x32": [PYTHON, "-c", "import ctypes; ctypes.CDLL(None).syscall(0x40000000 | 39); print('ran')"]}
    if shutil.which("gcc"):
        (tmp_path / "i386.c").write_text(I386_GETPID)
        subprocess.run(["gcc", "-o", str(tmp_path / "i386"), str(tmp_path / "i386.c")], check=True, timeout=120)
        assert subprocess.run([tmp_path / "i386"], capture_output=True, timeout=30).returncode == 0  # outside: runs
        calls["i386"] = [str(tmp_path / "i386")]
    plan = sandbox.SandboxPlan(bwrap=sandbox.bwrap_executable(), provider="command", readable=[tmp_path],
                               home=tmp_path / "home", seccomp=sandbox.write_filter(tmp_path))
    for abi, argv in calls.items():
        out = subprocess.run(plan(argv, {}), capture_output=True, text=True, timeout=60)
        assert out.returncode == 128 + 31 and "ran" not in out.stdout, (abi, out)  # SIGSYS
