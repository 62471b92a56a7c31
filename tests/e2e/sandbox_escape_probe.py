"""What a hostile agent tries from inside the sandbox (issue 29 finding 2), run by test_sandbox_confinement.

`python3 sandbox_escape_probe.py <dir inside> <file handle hex> <dir handle hex>` prints one line per
attempt: the effective capabilities; reading a file of a hidden dir by its handle
(open_by_handle_at through the mount of `<dir inside>`, the shocker escape); creating a file in a
directory outside every writable mount by its handle; a new user and mount namespace; a mount;
a set-user-ID or set-group-ID file in `<dir inside>`, by chmod and by open.
Each handle is `struct file_handle` in hex, made outside by `handle_of`."""

from __future__ import annotations

import ctypes
import os
import struct
import sys

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000


def handle_of(path: str) -> str:
    """name_to_handle_at(path) as hex (done outside the sandbox, by the test)."""
    buf = ctypes.create_string_buffer(8 + 128)
    struct.pack_into("I", buf, 0, 128)
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(AT_FDCWD, path.encode(), buf, ctypes.byref(mount_id), 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    return buf.raw[:8 + struct.unpack_from("I", buf, 0)[0]].hex()


def _by_handle(mount_dir: str, handle: str, flags: int) -> int:
    mount_fd = os.open(mount_dir, os.O_RDONLY | os.O_DIRECTORY)
    raw = bytes.fromhex(handle)
    fd = libc.open_by_handle_at(mount_fd, ctypes.create_string_buffer(raw, len(raw)), flags)
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


def _errno_of(result: int) -> str:
    return "allowed" if result == 0 else f"refused {os.strerror(ctypes.get_errno())}"


def main(inside: str, file_handle: str, dir_handle: str) -> None:
    status = open("/proc/self/status").read()
    print("CapEff", [line.split()[1] for line in status.splitlines() if line.startswith("CapEff")][0])
    try:
        print("read-by-handle LEAKED", os.read(_by_handle(inside, file_handle, os.O_RDONLY), 200).decode())
    except OSError as e:
        print("read-by-handle refused", e.strerror)
    try:
        folder = _by_handle(inside, dir_handle, os.O_RDONLY | os.O_DIRECTORY)
        os.close(os.open("planted-by-agent", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=folder))
        print("create-by-handle CREATED")
    except OSError as e:
        print("create-by-handle refused", e.strerror)
    print("unshare-user", _errno_of(libc.unshare(CLONE_NEWUSER)))
    print("unshare-mount", _errno_of(libc.unshare(CLONE_NEWNS)))
    print("mount", _errno_of(libc.mount(b"none", inside.encode(), b"tmpfs", 0, None)))
    _set_id(inside)


def _set_id(inside: str) -> None:
    """A set-id program left in the workdir runs as the daemon's user for whoever runs it there."""
    plain = os.path.join(inside, "plain-by-agent")
    os.close(os.open(plain, os.O_CREAT | os.O_WRONLY, 0o755))
    os.chmod(plain, 0o700)
    print("plain-mode allowed")
    for name, bits in (("setuid", 0o4755), ("setgid", 0o2755)):
        try:
            os.chmod(plain, bits)
            print(f"{name}-chmod ALLOWED")
        except OSError as e:
            print(f"{name}-chmod refused", e.strerror)
        try:
            os.close(os.open(os.path.join(inside, f"{name}-by-agent"), os.O_CREAT | os.O_WRONLY, bits))
            print(f"{name}-create ALLOWED")
        except OSError as e:
            print(f"{name}-create refused", e.strerror)
    print("set-id bits on disk", oct(os.stat(plain).st_mode & 0o6000))
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    print("io_uring", _errno_of(0 if libc.syscall(425, 4, params) >= 0 else -1))  # io_uring_setup: both ABIs


if __name__ == "__main__":
    main(*sys.argv[1:4])
