"""A throwaway PostgreSQL cluster for fault tests: Debian's initdb/pg_ctl, a temp dir, a free port.

Never the shared cluster at 127.0.0.1:5432 (other tests and people use it): this one exists to be
restarted. As root, the cluster runs as the `postgres` user (PostgreSQL refuses root).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .harness import free_port


def pg_bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return Path(found[-1]).parent
    exe = shutil.which("pg_ctl")
    return Path(exe).parent if exe else None


class ThrowawayPostgres:
    def __init__(self) -> None:
        bindir = pg_bindir()
        if bindir is None:
            raise FileNotFoundError("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
        self.bindir = bindir
        # Its own dir under the system temp dir: pytest's tmp dirs are 0700, closed to `postgres`.
        self.root = root = Path(tempfile.mkdtemp(prefix="pxpg-"))
        self.data = root / "data"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(root, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
        conf = self.data / "postgresql.conf"
        with conf.open("a") as fh:
            fh.write(f"port = {self.port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{root}'\n"
                     "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 60\n")
        self.start()

    def _run(self, tool: str, *args: str, timeout: float = 60) -> None:
        cmd = [str(self.bindir / tool), *args]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.root)
        if p.returncode != 0:
            raise RuntimeError(f"{tool} failed: {p.stderr.strip()[-800:]}")

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "pg.log"), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def restart(self) -> None:
        """Every connection is cut; the server is back when this returns."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "restart",
                  "-l", str(self.root / "pg.log"))

    def destroy(self) -> None:
        try:
            self.stop("immediate")
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(self.root, ignore_errors=True)
