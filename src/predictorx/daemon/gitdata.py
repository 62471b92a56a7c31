"""Reading files of a git dir an agent wrote as plain data: regular files only, never through a
symlink, never blocking on a FIFO, never more than asked for. `delivery` and `gitview` read the
agent's refs and objects this way instead of letting the daemon's git treat that git dir as a
repository (whose config, hooks and indirections would then be the agent's)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

SHA = re.compile(r"^[0-9a-f]{40}$")


def open_regular(path: Path) -> int | None:
    """An fd for `path` if it is a regular file (never through a symlink, never blocking on a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def real_dirs(base: Path, parts: list[str]) -> bool:
    """Every `base/parts[0]/…` prefix is a real directory (no symlink, no `..`)."""
    here = base
    for part in parts:
        if part in ("", ".", ".."):
            return False
        here = here / part
        try:
            if not stat.S_ISDIR(os.lstat(here).st_mode):
                return False
        except OSError:
            return False
    return True


def read_small(git_dir: Path, rel: str, limit: int = 4096) -> str | None:
    """A file under `git_dir` as text, if every component is a real directory and it is a regular file."""
    parts = rel.split("/")
    if not parts[-1] or parts[-1] in (".", "..") or not real_dirs(git_dir, parts[:-1]):
        return None
    fd = open_regular(git_dir.joinpath(*parts))
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read(limit).decode("utf-8", "replace")


def ref_value(git_dir: Path, ref: str) -> str | None:
    """A branch's commit id from its loose file or `packed-refs`; symbolic refs are not followed."""
    if not ref.startswith("refs/heads/"):
        return None
    loose = read_small(git_dir, ref)
    if loose is not None:
        return loose.strip() if SHA.match(loose.strip()) else None
    packed = read_small(git_dir, "packed-refs", limit=64 * 2**20) or ""
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name == ref and SHA.match(sha):
            return sha
    return None


def repository_dirs(dot_git: Path) -> tuple[Path, Path] | None:
    """(git dir, common dir) of the repository whose `.git` entry is `dot_git`, where nothing in it
    leads elsewhere; None otherwise.

    An agent writes its `.git`; inside the sandbox a name pointing out of it reaches nothing, but
    the daemon, outside, would follow it to another repository of its user (another workspace's
    repo cache): `.git/commondir`, a `gitdir:` file, `.git` or its `objects`/`refs` as symlinks.
    Taken are a real `.git` folder without `commondir`, or a linked worktree's `gitdir:` file
    naming `<common>/worktrees/<name>` whose own `gitdir` file names this `.git` back (no run can
    write that unless it had the repository already); objects and refs real folders either way."""
    try:
        mode = os.lstat(dot_git).st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        if os.path.lexists(dot_git / "commondir"):
            return None
        git_dir = common = dot_git
    elif stat.S_ISREG(mode):
        linked = _linked_git_dir(dot_git)
        if linked is None:
            return None
        git_dir, common = linked, linked.parent.parent
    else:
        return None
    if not (real_dirs(common, ["objects"]) and real_dirs(common, ["refs"])):
        return None
    return git_dir, common


def _linked_git_dir(gitfile: Path) -> Path | None:
    text = _small_text(gitfile)
    if text is None or not text.startswith("gitdir:"):
        return None
    named = Path(os.path.realpath(gitfile.parent / text[len("gitdir:"):].strip()))
    if named.parent.name != "worktrees" or not named.is_dir():
        return None
    back, common = _small_text(named / "gitdir"), _small_text(named / "commondir")
    if back is None or os.path.realpath(named / back.strip()) != os.path.realpath(gitfile):
        return None
    if common is None or os.path.realpath(named / common.strip()) != str(named.parent.parent):
        return None
    return named


def _small_text(path: Path) -> str | None:
    fd = open_regular(path)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read(4096).decode("utf-8", "replace")


def nearest_dot_git(folder: Path) -> Path | None:
    """The nearest `.git` entry at or above `folder` (resolved), as git finds it; None when there is
    none or it is a symlink (a link an agent made to a repository it cannot see)."""
    here = Path(os.path.realpath(folder))
    for d in (here, *here.parents):
        candidate = d / ".git"
        if os.path.lexists(candidate):
            return None if os.path.islink(candidate) else candidate
    return None


_REF_BAD = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|@\{")  # what check-ref-format refuses


class RefNotWritten(RuntimeError):
    """A ref could not be created or deleted as data (taken, locked, moved, or not a plain ref)."""


def _dir_fd(base: Path, parts: list[str], *, create: bool) -> int:
    """An fd for `base/parts…`, every component a real directory (made when `create`), never a symlink."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        for part in parts:
            if part in ("", ".", ".."):
                raise RefNotWritten(f"not a plain ref component: {part!r}")
            if create:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except OSError as e:
        os.close(fd)
        raise RefNotWritten(f"{'/'.join(parts)}: {e}") from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _packed_names(common: Path) -> dict[str, str]:
    names: dict[str, str] = {}
    for line in (read_small(common, "packed-refs", limit=64 * 2**20) or "").splitlines():
        sha, _, name = line.partition(" ")
        if SHA.match(sha) and name.startswith("refs/"):
            names[name] = sha
    return names


def _plain_ref(common: Path, ref: str) -> list[str]:
    parts = ref.split("/")
    if not ref.startswith("refs/heads/") or _REF_BAD.search(ref) or ".." in ref or len(parts) < 3 \
            or any(not p or p.startswith(".") or p.endswith(".lock") for p in parts):
        raise RefNotWritten(f"not a plain branch ref: {ref!r}")
    if os.path.lexists(common / "reftable"):
        raise RefNotWritten("the repository keeps its refs in a reftable")
    return parts


def create_ref(common: Path, ref: str, sha: str) -> None:
    """Create the loose ref `ref` at `sha` in the git dir `common` as data (git's own lock protocol:
    `<ref>.lock` made exclusively, renamed into place) — only when no ref of that name, or one it
    would clash with, exists. Raises RefNotWritten otherwise. No git runs, so nothing of the
    repository's config, hooks or object store is read."""
    parts = _plain_ref(common, ref)
    if not SHA.match(sha):
        raise RefNotWritten(f"not a commit id: {sha!r}")
    packed = _packed_names(common)
    prefixes = {"/".join(parts[:i]) for i in range(3, len(parts))}
    if ref in packed or prefixes & packed.keys() or any(n.startswith(ref + "/") for n in packed):
        raise RefNotWritten(f"{ref} exists or clashes with an existing ref")
    fd = _dir_fd(common, parts[:-1], create=True)
    name, lock = parts[-1], parts[-1] + ".lock"
    try:
        try:
            lfd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=fd)
        except OSError as e:
            raise RefNotWritten(f"{ref} is locked: {e}") from None
        try:
            os.write(lfd, (sha + "\n").encode())
            os.fsync(lfd)
        finally:
            os.close(lfd)
        try:
            os.lstat(name, dir_fd=fd)
            taken = True
        except FileNotFoundError:
            taken = False
        if taken:
            os.unlink(lock, dir_fd=fd)
            raise RefNotWritten(f"{ref} exists")
        os.rename(lock, name, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)


def delete_ref(common: Path, ref: str, expected: str) -> None:
    """Delete the branch `ref` from the git dir `common` as data, only while it points at
    `expected` (its loose file and its `packed-refs` line, under git's locks). RefNotWritten otherwise."""
    parts = _plain_ref(common, ref)
    top = _dir_fd(common, [], create=False)
    try:
        try:
            plock = os.open("packed-refs.lock", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                            0o666, dir_fd=top)
        except OSError as e:
            raise RefNotWritten(f"packed-refs is locked: {e}") from None
        try:
            _delete_locked(common, ref, parts, expected, top, plock)
        finally:
            os.close(plock)
            try:
                os.unlink("packed-refs.lock", dir_fd=top)
            except FileNotFoundError:
                pass
    finally:
        os.close(top)


def _delete_locked(common: Path, ref: str, parts: list[str], expected: str, top: int, plock: int) -> None:
    loose = read_small(common, ref)
    packed_text = read_small(common, "packed-refs", limit=64 * 2**20) or ""
    packed = _packed_names(common)
    now = loose.strip() if loose is not None else packed.get(ref)
    if now != expected:
        raise RefNotWritten(f"{ref} is not at {expected[:12]} (now {(now or 'gone')[:12]})")
    if ref in packed:
        lines, skip = [], False
        for line in packed_text.splitlines(keepends=True):
            if skip and line.startswith("^"):
                continue
            skip = line.rstrip("\n").partition(" ")[2] == ref and not line.startswith("^")
            if not skip:
                lines.append(line)
        os.write(plock, "".join(lines).encode())
        os.fsync(plock)
        os.rename("packed-refs.lock", "packed-refs", src_dir_fd=top, dst_dir_fd=top)
    if loose is not None:
        fd = _dir_fd(common, parts[:-1], create=False)
        try:
            os.unlink(parts[-1], dir_fd=fd)
        finally:
            os.close(fd)
    try:
        fd = _dir_fd(common, ["logs", *parts[:-1]], create=False)
    except RefNotWritten:
        return
    try:
        if stat.S_ISREG(os.lstat(parts[-1], dir_fd=fd).st_mode):
            os.unlink(parts[-1], dir_fd=fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def config_values(text: str, section: str, subsection: str | None, key: str) -> list[str]:
    """Every value of `section.subsection.key` in git config `text`, parsed as text (git's syntax:
    comments, quoting, escapes, continued lines, both header forms); `include.path` and the like
    are not followed. No git runs: a config an agent wrote is never read as configuration."""
    found: list[str] = []
    cur: tuple[str, str | None] | None = None
    want = (section.lower(), subsection)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c in "#;":
            i = _line_end(text, i)
        elif c == "[":
            cur, i = _header(text, i + 1)
        elif c.isalpha():
            j = i
            while j < n and (text[j].isalnum() or text[j] == "-"):
                j += 1
            name = text[i:j].lower()
            while j < n and text[j] in " \t":
                j += 1
            if j < n and text[j] == "=":
                value, i = _value(text, j + 1)
            else:
                value, i = "", j  # no `=`: a boolean true; git prints its raw value as ""
            if cur == want and name == key.lower():
                found.append(value)
        else:
            i = _line_end(text, i)  # not git's syntax: git would refuse the file; skip the line
    return found


def _line_end(text: str, i: int) -> int:
    j = text.find("\n", i)
    return len(text) if j < 0 else j + 1


def _header(text: str, i: int) -> tuple[tuple[str, str | None] | None, int]:
    n = len(text)
    j = i
    while j < n and (text[j].isalnum() or text[j] in "-."):
        j += 1
    name = text[i:j]
    if j < n and text[j] == "]":
        sec, _, sub = name.partition(".")
        return (sec.lower(), sub.lower() if "." in name else None), j + 1
    if j < n and text[j] in " \t":
        while j < n and text[j] in " \t":
            j += 1
        if j < n and text[j] == '"':
            j += 1
            chars: list[str] = []
            while j < n and text[j] not in '"\n':
                if text[j] == "\\" and j + 1 < n and text[j + 1] != "\n":
                    j += 1
                chars.append(text[j])
                j += 1
            if text[j:j + 2] == '"]':
                return (name.lower(), "".join(chars)), j + 2
    return None, _line_end(text, j)


_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}


def _value(text: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    quoted = False
    pending = ""  # whitespace kept only if more value follows
    n = len(text)
    while i < n and text[i] in " \t":
        i += 1
    while i < n:
        c = text[i]
        if c == "\n":
            break
        if c == "\\" and i + 1 < n:
            nxt = text[i + 1]
            if nxt == "\n" or (nxt == "\r" and text[i + 2:i + 3] == "\n"):
                i += 2 if nxt == "\n" else 3
                continue
            out.append(pending + _ESCAPES.get(nxt, nxt))
            pending = ""
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif not quoted and c in "#;":
            i = _line_end(text, i) - 1
            break
        elif not quoted and c in " \t\r":
            pending += c
        else:
            out.append(pending + c)
            pending = ""
        i += 1
    return "".join(out), i + 1
