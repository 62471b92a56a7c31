"""daemon/quarantine.py: the delivery's quarantine made ahead while the agent works is taken only
when it is exactly what the daemon writes (for the same target's objects); anything else found
there — another target's alternate, an extra file such as a hook or a config of someone else's, a
symlink — is removed and a fresh one made. And git reads the one made as a repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

from predictorx.daemon import quarantine
from predictorx.testing import wait_until


def _target(tmp_path: Path) -> Path:
    repo = tmp_path / "person"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    return repo / ".git"


def test_a_quarantine_made_ahead_is_taken_and_is_a_repository(tmp_path: Path) -> None:
    target, scratch = _target(tmp_path), tmp_path / "env" / ".delivery"
    quarantine.prepare(scratch, target)
    spare = scratch / quarantine.SPARE
    wait_until(spare.exists, 30, 0.01, "the spare quarantine")
    objects = quarantine.objects_guess(target)
    assert objects == str(target / "objects")
    q = scratch / "quarantine.git"
    assert quarantine.take(q, objects) and not spare.exists()
    out = subprocess.run(["git", "--git-dir", str(q), "rev-parse", "--is-bare-repository"], capture_output=True,
                         text=True, check=True, timeout=60).stdout.strip()
    assert out == "true"
    assert (q / "objects" / "info" / "alternates").read_text() == objects + "\n"


def _spare(scratch: Path, objects: str) -> Path:
    spare = scratch / quarantine.SPARE
    quarantine.make(spare, objects)
    return spare


def test_a_spare_for_another_target_is_not_taken(tmp_path: Path) -> None:
    scratch = tmp_path / ".delivery"
    _spare(scratch, "/elsewhere/objects")
    assert not quarantine.take(scratch / "quarantine.git", "/mine/objects")
    assert not (scratch / quarantine.SPARE).exists() and not (scratch / "quarantine.git").exists()


def test_a_spare_with_anything_added_or_changed_is_not_taken(tmp_path: Path) -> None:
    objects = "/mine/objects"
    changes = [
        lambda s: (s / "hooks").mkdir(),
        lambda s: (s / "hooks" / "post-checkout").write_text("#!/bin/sh\n") if (s / "hooks").mkdir() is None else None,
        lambda s: (s / "config").write_text("[core]\n\tfsmonitor = /tmp/evil\n"),
        lambda s: (s / "objects" / "info" / "alternates").write_text("/tmp/evil/objects\n"),
        lambda s: (s / "refs" / "heads" / "main").write_text("0" * 40 + "\n"),
        lambda s: ((s / "HEAD").unlink(), (s / "HEAD").symlink_to("/etc/passwd")),
    ]
    for i, change in enumerate(changes):
        scratch = tmp_path / f"s{i}"
        change(_spare(scratch, objects))
        assert not quarantine.take(scratch / "quarantine.git", objects), i
        assert not (scratch / quarantine.SPARE).exists(), i


def test_no_spare_is_made_for_a_target_whose_objects_are_elsewhere(tmp_path: Path) -> None:
    linked = tmp_path / "linked.git"
    linked.mkdir()
    (linked / "commondir").write_text("../main.git\n")
    assert quarantine.objects_guess(linked) is None
    quarantine.prepare(tmp_path / ".delivery", linked)
    assert not (tmp_path / ".delivery").exists()
