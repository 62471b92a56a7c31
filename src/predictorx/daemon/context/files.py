"""Reading and writing a file in the person's folder — which the agent can write too — without
ever being led outside it: every directory on the way is reached from / with O_NOFOLLOW (callers
pass real paths), the file itself must be a regular file (never a symlink, never a FIFO: no read
blocks), reads are capped, and the new bytes go to a fresh temporary file (O_CREAT|O_EXCL, a
random name) that then replaces the file whole, with the person's permissions on it."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

#: The largest instruction file or resources.json the daemon reads (a bigger one is left alone).
MAX_BYTES = 4 << 20


class NotRegularFile(OSError):
    """The path is no longer a regular file reached through real directories: it is left as it is."""


def _open_dir(directory: Path) -> int:
    """An fd of `directory`, reached from / through real directories only (no symlink at any step)."""
    parts = Path(os.path.abspath(directory)).parts
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[1:]:
            try:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                              dir_fd=fd)
            except FileNotFoundError:
                raise
            except OSError as exc:  # ELOOP / ENOTDIR: a symlink or a file where a directory was
                raise NotRegularFile(f"{directory} is no longer a real directory ({part}: {exc.strerror})") from exc
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_fd(fd: int, path: Path, limit: int | None) -> bytes:
    limit = MAX_BYTES if limit is None else limit
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(f"{path} is not a regular file; left as it is")
    if st.st_size > limit:
        raise NotRegularFile(f"{path} is larger than {limit} bytes; left as it is")
    chunks, size = [], 0
    while chunk := os.read(fd, min(1 << 16, limit + 1 - size)):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise NotRegularFile(f"{path} is larger than {limit} bytes; left as it is")
    return b"".join(chunks)


def _open_file(name: str, path: Path, dir_fd: int | None) -> int:
    try:
        return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as exc:  # ELOOP: a symlink
        raise NotRegularFile(f"{path} is not a regular file ({exc.strerror}); left as it is") from exc


def read_regular(path: Path, limit: int | None = None) -> bytes:
    """The bytes of `path` (a real path: no symlink in it), if it is a regular file of at most
    `limit` bytes (MAX_BYTES); FileNotFoundError if it is missing, NotRegularFile otherwise. Never blocks."""
    dfd = _open_dir(path.parent)
    try:
        fd = _open_file(path.name, path, dfd)
    finally:
        os.close(dfd)
    try:
        return _read_fd(fd, path, limit)
    finally:
        os.close(fd)


def read_regular_file(path: Path, limit: int | None = None) -> bytes:
    """Like `read_regular`, but only the file itself is checked (not the directories on the way)."""
    fd = _open_file(str(path), path, None)
    try:
        return _read_fd(fd, path, limit)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` (a real path: no symlink in it) by `data`, whole or not at all, keeping its
    permissions. Refused (NotRegularFile, nothing written) if a directory on the way is now a
    symlink or `path` exists and is not a regular file."""
    dfd = _open_dir(path.parent)
    try:
        _write_in(dfd, path, data)
    finally:
        os.close(dfd)


def _write_in(dfd: int, path: Path, data: bytes) -> None:
    try:
        st: os.stat_result | None = os.stat(path.name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(f"{path} is not a regular file; left as it is")
    tmp = f".{path.name}.predictorx-{secrets.token_hex(8)}.tmp"
    # O_EXCL: a fresh file, never an existing one and never through a symlink.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dfd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if st is not None:
                # the person's permissions on their file, never a set-id bit (a sandboxed agent may set
                # one on a file it made; the daemon writing it anew must not keep it)
                os.fchmod(fd, stat.S_IMODE(st.st_mode) & 0o777)
        finally:
            os.close(fd)
        os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        raise


def unlink_regular(path: Path) -> None:
    """Delete `path` (a real path) if it is a regular file reached through real directories."""
    try:
        dfd = _open_dir(path.parent)
    except FileNotFoundError:
        return
    try:
        try:
            st = os.stat(path.name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(f"{path} is not a regular file; left as it is")
        os.unlink(path.name, dir_fd=dfd)
    finally:
        os.close(dfd)
