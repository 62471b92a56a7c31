"""The sandbox's scan of what the machine keeps from its other users (daemon/privatescan.py, issue
30): read once, kept while nothing there changes, read again as soon as something does — a file
made private, a folder closed to others, a private file created deep inside, one opened again —
so no run sees what the scan would have hidden."""

from __future__ import annotations

import os
import sys
import time

import pytest

from predictorx.daemon import privatescan, sandbox

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


def _tree(tmp_path):
    root = tmp_path / "etc"
    (root / "ssl" / "certs").mkdir(parents=True)
    (root / "hosts").write_text("127.0.0.1 localhost\n")
    (root / "ssl" / "certs" / "ca.pem").write_text("cert\n")
    (root / "shadow").write_text("root:x\n")
    os.chmod(root / "shadow", 0o600)
    for p in (root, root / "ssl", root / "ssl" / "certs"):
        os.chmod(p, 0o755)
    os.chmod(root / "hosts", 0o644)
    os.chmod(root / "ssl" / "certs" / "ca.pem", 0o644)
    return root


def _eventually(scan, want: set[str]) -> set[str]:
    """The scan's answer once it shows `want` (inotify's events arrive right after the syscall;
    a loaded machine gets a few tries)."""
    deadline = time.monotonic() + 10
    while True:
        got = set(scan())
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.01)


def test_unchanged_folders_are_read_once(tmp_path):
    root = _tree(tmp_path)
    scan = privatescan.PrivateScan([str(root)])
    try:
        first = scan()
        for _ in range(20):
            assert scan() == first
        assert set(first) == {str(root / "shadow")}
        assert scan.scans == 1  # the old code read every entry of the folders for each run
    finally:
        scan.close()


def test_every_change_that_hides_or_shows_something_is_seen(tmp_path):
    root = _tree(tmp_path)
    scan = privatescan.PrivateScan([str(root)])
    try:
        assert set(scan()) == {str(root / "shadow")}
        os.chmod(root / "hosts", 0o600)  # a file made private
        assert _eventually(scan, {str(root / "shadow"), str(root / "hosts")}) == {str(root / "shadow"), str(root / "hosts")}
        os.chmod(root / "ssl", 0o750)  # a folder closed to others (its own watch and its parent's)
        want = {str(root / "shadow"), str(root / "hosts"), str(root / "ssl")}
        assert _eventually(scan, want) == want
        os.chmod(root / "ssl", 0o755)
        key = root / "ssl" / "certs" / "key.pem"  # created private, two folders down
        fd = os.open(key, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
        os.chmod(key, 0o600)
        want = {str(root / "shadow"), str(root / "hosts"), str(key)}
        assert _eventually(scan, want) == want
        os.chmod(root / "hosts", 0o644)  # opened again
        want = {str(root / "shadow"), str(key)}
        assert _eventually(scan, want) == want
        (root / "new").mkdir(mode=0o755)  # a folder created later is watched once scanned
        os.chmod(root / "new", 0o755)
        assert _eventually(scan, want) == want
        (root / "new" / "secret").write_text("s")
        os.chmod(root / "new" / "secret", 0o600)
        want = want | {str(root / "new" / "secret")}
        assert _eventually(scan, want) == want
        os.rename(root / "shadow", root / "shadow-")  # renamed
        want = (want - {str(root / "shadow")}) | {str(root / "shadow-")}
        assert _eventually(scan, want) == want
    finally:
        scan.close()


def test_without_inotify_every_call_scans(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    monkeypatch.setattr(privatescan, "inotify_libc", lambda: None)
    scan = privatescan.PrivateScan([str(root)])
    scan()
    os.chmod(root / "hosts", 0o600)
    assert set(scan()) == {str(root / "shadow"), str(root / "hosts")} and scan.scans == 2


def test_a_watch_that_cannot_be_added_means_scanning_every_time(tmp_path, monkeypatch):
    root = _tree(tmp_path)

    def refuse(self, folder):
        raise OSError(28, "inotify watch limit")

    monkeypatch.setattr(privatescan.Inotify, "watch", refuse)
    scan = privatescan.PrivateScan([str(root)])
    scan()
    scan()
    assert scan.scans == 2


def test_a_folder_the_daemon_may_not_read_keeps_the_scan(tmp_path, monkeypatch):
    """A daemon that is not root cannot watch (or list) a folder without its read bit: the scan
    is kept all the same, and that folder's mode is still watched through its parent."""
    root = _tree(tmp_path)
    libc = privatescan.inotify_libc()

    class NoReadOnCerts:  # the C library, except that "certs" answers EACCES as for a non-root daemon
        def inotify_init1(self, flags):
            return libc.inotify_init1(flags)

        def inotify_add_watch(self, fd, path, mask):
            return -1 if path.endswith(b"certs") else libc.inotify_add_watch(fd, path, mask)

    monkeypatch.setattr(privatescan, "inotify_libc", NoReadOnCerts)
    monkeypatch.setattr(privatescan.ctypes, "get_errno", lambda: 13)  # (read only after a failure)
    scan = privatescan.PrivateScan([str(root)])
    try:
        scan()
        scan()
        assert scan.scans == 1
        os.chmod(root / "ssl" / "certs", 0o700)  # its own mode: seen by its parent's watch
        want = {str(root / "shadow"), str(root / "ssl" / "certs")}
        assert _eventually(scan, want) == want
    finally:
        scan.close()


def test_the_sandbox_takes_the_kept_scan(monkeypatch):
    """A run's bwrap arguments hide what the scan found, from the kept scan (no scan per run)."""
    calls = []
    monkeypatch.setattr(sandbox, "_PRIVATE", lambda: calls.append(1) or ["/etc/shadow-test-only"])
    plan = sandbox.SandboxPlan(bwrap="bwrap", provider="claude", home=sandbox.Path("/nonexistent-home"))
    args = plan.arguments(["/bin/true"], {"PATH": ""})
    i = args.index("/etc/shadow-test-only")
    assert args[i - 2:i + 1] == ["--ro-bind", "/dev/null", "/etc/shadow-test-only"] and calls == [1]
