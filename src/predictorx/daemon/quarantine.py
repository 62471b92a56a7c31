"""The delivery's quarantine: a bare repository of the daemon's own into which a run's objects are
copied and checked before anything of them reaches the person's repository (delivery.py).

It is written as files — what `git init --bare --template=` writes, without a process — and its
only alternate is the target's object dir. On a disk where each folder or file made costs a
journal write (~0.35 ms here: 7 folders and 3 files, ~3.5 ms), that sat on the path from the
agent's end to the push; so one is made ahead while the agent works (`prepare`, a thread of its
own) and the delivery takes it (`take`) when it is exactly what the daemon would write now, else
makes its own as before. The scratch folder is the daemon's, outside anything a run can write;
`take` checks the spare's every entry all the same, so nothing but those files is ever used."""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from pathlib import Path

SPARE = "quarantine.spare"
HEAD = "ref: refs/heads/main\n"
CONFIG = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n"
#: Every entry of a quarantine as made here: folders (ending in /) and files.
_ENTRIES = {"HEAD", "config", "objects/", "objects/info/", "objects/info/alternates", "objects/pack/", "refs/",
            "refs/heads/", "refs/tags/"}


def objects_guess(target: Path) -> str | None:
    """The target's object dir where a plain repository keeps it (no `commondir`), else None
    (`git rev-parse --git-path objects` says then)."""
    if target.is_absolute() and not (target / "commondir").exists() and (target / "objects").is_dir():
        return str(target / "objects")
    return None


def make(quarantine: Path, objects: str) -> None:
    for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags"):
        (quarantine / sub).mkdir(parents=True)
    (quarantine / "HEAD").write_text(HEAD)
    (quarantine / "config").write_text(CONFIG)
    (quarantine / "objects" / "info" / "alternates").write_text(objects + "\n")


def prepare(scratch: Path, target: Path) -> None:
    """Make the next delivery's quarantine for `scratch` ahead, in a thread (renamed into place
    whole: a delivery never sees half of one). Best effort: the delivery makes its own otherwise."""
    objects = objects_guess(target)
    if objects is None:
        return

    def run() -> None:
        tmp = scratch / f"{SPARE}.{uuid.uuid4().hex}"
        try:
            scratch.mkdir(parents=True, exist_ok=True)
            make(tmp, objects)
            os.rename(tmp, scratch / SPARE)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)

    threading.Thread(target=run, name="px-quarantine", daemon=True).start()


def take(quarantine: Path, objects: str) -> bool:
    """Move the spare made ahead to `quarantine` (which must not exist) if it is exactly what
    `make(quarantine, objects)` would write; a spare that is not is removed. False: none taken."""
    spare = quarantine.parent / SPARE
    try:
        if _exactly(spare, objects):
            os.rename(spare, quarantine)
            return True
    except OSError:
        pass
    shutil.rmtree(spare, ignore_errors=True)
    return False


def _exactly(spare: Path, objects: str) -> bool:
    found: set[str] = set()
    for folder, dirs, files in os.walk(spare, followlinks=False):
        rel = os.path.relpath(folder, spare)
        prefix = "" if rel == "." else rel + "/"
        found.update(prefix + d + "/" for d in dirs)
        found.update(prefix + f for f in files)
        if any(os.path.islink(os.path.join(folder, name)) for name in (*dirs, *files)):
            return False
    expected = {"HEAD": HEAD, "config": CONFIG, "objects/info/alternates": objects + "\n"}
    return found == _ENTRIES and all((spare / name).read_text() == text for name, text in expected.items())
