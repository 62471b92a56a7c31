"""The run cgroup (issue 30): the agent joins it before it runs anything, its emptying is awaited
on an event, and it is removed — also one a killed daemon left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from predictorx.agents import runcgroup
from predictorx.agents.descendants import new_tag

pytestmark = pytest.mark.skipif(not runcgroup.available(), reason="no cgroup v2 this process may write")


def _cgroup_of(pid: int) -> str:
    return next(line for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines() if line.startswith("0::"))


def test_everything_the_agent_starts_is_in_its_cgroup_and_ends_with_it() -> None:
    group = runcgroup.RunCgroup.make(new_tag())
    assert group is not None
    try:
        # The agent leaves a grandchild in a session of its own that ignores SIGTERM, and exits.
        agent = subprocess.Popen([*group.launcher(), "sh", "-c",
                                  "setsid sh -c 'trap \"\" TERM; exec sleep 600' </dev/null >/dev/null 2>&1 & echo $!"],
                                 stdout=subprocess.PIPE, text=True)
        out, _ = agent.communicate(timeout=30)
        escapee = int(out.strip())
        assert _cgroup_of(escapee) == group.name
        assert group.pids() == [escapee] and group.populated()
        assert group.wait_empty(0.2) is False  # it is still there
        started = time.monotonic()
        group.signal(signal.SIGKILL)  # cgroup.kill
        assert group.wait_empty(10) is True
        assert time.monotonic() - started < 5
    finally:
        group.remove()
    assert not group.path.exists()


def test_an_empty_cgroup_a_killed_daemon_left_is_removed_at_the_next_run() -> None:
    left, busy = runcgroup.RunCgroup.make(new_tag()), runcgroup.RunCgroup.make(new_tag())
    assert left is not None and busy is not None
    holder = subprocess.Popen([*busy.launcher(), "sleep", "600"])
    try:
        deadline = time.monotonic() + 10
        while not busy.populated():  # until the launcher has joined
            assert time.monotonic() < deadline and holder.poll() is None
            time.sleep(0.01)
        # `left` made to look abandoned, not the threshold lowered: every empty run cgroup in the
        # shared hierarchy would then be fair game, and another test's daemon lost the cgroup it
        # had just made for a run, before the run's launcher joined it (a fresh-clone CI run).
        long_ago = time.time() - 10 * runcgroup.ABANDONED_AFTER_S
        for old in (left, busy):  # both old: only the empty one goes
            os.utime(old.path, (long_ago, long_ago))
        fresh = runcgroup.RunCgroup.make(new_tag())
        assert fresh is not None
        fresh.remove()
        assert not left.path.exists()  # empty: removed
        assert busy.path.exists()  # a run in progress: kept
    finally:
        holder.kill()
        holder.wait(10)
        busy.wait_empty(10)
        busy.remove()
        left.remove()


def _escapee_in(group: runcgroup.RunCgroup) -> int:
    """A `setsid` grandchild that ignores SIGTERM, left in `group` by an agent that exited."""
    agent = subprocess.Popen([*group.launcher(), "sh", "-c",
                              "setsid sh -c 'trap \"\" TERM; exec sleep 600' </dev/null >/dev/null 2>&1 & echo $!"],
                             stdout=subprocess.PIPE, text=True)
    out, _ = agent.communicate(timeout=30)
    return int(out.strip())


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_killed_daemons_run_cgroups_are_emptied_and_removed_at_its_next_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """kill -9 of a daemon leaves its runs' cgroups, with any escapee still in them; the same
    daemon's next start kills those and removes the cgroups, and leaves another daemon's alone."""
    monkeypatch.setattr(runcgroup, "_owner", "")
    runcgroup.set_owner("0123abcd-0000-4000-8000-000000000001")
    mine, empty = runcgroup.RunCgroup.make(new_tag()), runcgroup.RunCgroup.make(new_tag())
    runcgroup.set_owner("feedbeef-0000-4000-8000-000000000002")
    theirs = runcgroup.RunCgroup.make(new_tag())
    assert mine is not None and empty is not None and theirs is not None
    assert mine.path.name.startswith(runcgroup.PREFIX + "0123abcd00004000-")
    escapee, other = _escapee_in(mine), _escapee_in(theirs)
    try:
        runcgroup.set_owner("0123abcd-0000-4000-8000-000000000001")  # the same daemon, started again
        said = runcgroup.recover()
        assert not mine.path.exists() and not empty.path.exists()
        assert not _alive(escapee)
        assert any(str(escapee) in s for s in said), said
        assert theirs.path.exists() and _alive(other)  # another daemon's run: untouched
    finally:
        theirs.signal(signal.SIGKILL)
        theirs.wait_empty(10)
        theirs.remove()
        for group in (mine, empty):
            group.signal(signal.SIGKILL)
            group.wait_empty(10)
            group.remove()
