"""Red team of the sandbox (issue 29): what the machine keeps from its users, under a root daemon.

The sandbox's user namespace maps its root to the daemon's user. With every capability dropped an
agent of a root daemon still passed the permission check as the *owner* of root's files in the
system dirs mounted read-only: it read `/etc/shadow`, `/etc/ssl/private/*`, the SSH host keys,
PostgreSQL's `pg_hba.conf`. Now what other users of the machine may not read in `/etc` is hidden
(an empty file, an empty folder) inside.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from predictorx.daemon import sandbox

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux-only")


def test_what_others_may_not_read_is_found(tmp_path: Path) -> None:
    (tmp_path / "public.conf").write_text("ok\n")
    (tmp_path / "shadow").write_text("root:$6$hash\n")
    (tmp_path / "shadow").chmod(0o640)
    (tmp_path / "private").mkdir(mode=0o710)
    (tmp_path / "private" / "key.pem").write_text("KEY\n")
    (tmp_path / "open").mkdir()
    (tmp_path / "open" / "host_key").write_text("KEY\n")
    (tmp_path / "open" / "host_key").chmod(0o600)
    (tmp_path / "link").symlink_to(tmp_path / "shadow")
    (tmp_path / "private").chmod(0o710)
    found = set(sandbox.kept_from_others([str(tmp_path)]))
    assert found == {str(tmp_path / "shadow"), str(tmp_path / "private"), str(tmp_path / "open" / "host_key")}


@pytest.mark.skipif(os.geteuid() != 0, reason="the owner's bypass is a root daemon's")
def test_a_root_daemons_agent_reads_nothing_root_keeps_from_others(tmp_path: Path) -> None:
    private = [str(p) for p in (Path("/etc/shadow"), Path("/etc/gshadow"), *Path("/etc/ssh").glob("ssh_host_*_key"))
               if p.is_file() and not p.is_symlink() and not p.stat().st_mode & stat.S_IROTH]
    if not private:
        pytest.skip("this machine's /etc holds none of the files other users may not read looked for")
    work = tmp_path / "work"
    work.mkdir()
    plan = sandbox.SandboxPlan(bwrap=sandbox.bwrap_executable(), provider="command", writable=[work],
                               home=tmp_path / "home", chdir=work, seccomp=sandbox.write_filter(tmp_path))
    # Only whether a byte could be read is printed, never what.
    script = "".join(f"if [ -s '{p}' ] && head -c1 '{p}' >/dev/null 2>&1; then echo 'READ {p}'; fi\n"
                     for p in private) + "echo done\n"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    out = subprocess.run(plan(["sh", "-c", script], env), env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip().endswith("done"), out.stderr
    assert "READ" not in out.stdout, out.stdout
