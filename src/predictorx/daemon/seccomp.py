"""The sandbox's seccomp filter: system calls a coding agent never needs, refused (issue 29 finding 2).

bubblewrap loads a compiled classic-BPF program (`bwrap --seccomp FD`) after it set
`no_new_privs` and just before it execs the agent. This module builds that program itself: the
filter is a few dozen instructions, and the Python bindings of libseccomp are either the system
interpreter's only (Debian's python3-seccomp) or unmaintained on PyPI, so a small builder with
its own tests is the smaller dependency.

The program, for the machine it runs on (x86_64 or aarch64):
- a system call of any other architecture (the i386 ABI through `int 0x80`, say) or of the x32
  ABI kills the process: the tables below would not describe it;
- the calls in `REFUSED` return EPERM: handles to files by inode (`open_by_handle_at`, the
  classic container escape through a bind mount), mounts, ptrace and other processes' memory,
  bpf, perf, keyrings, new namespaces, kernel modules and kexec, userfaultfd, quotas, swap, reboot,
  process accounting, chroot, the kernel log;
- `clone` and `unshare` with a namespace flag return EPERM (threads and forks go on);
- `clone3` returns ENOSYS: its flags live in memory a filter cannot read, and glibc then falls
  back to `clone`, which is checked; `openat2` likewise (its mode is in memory): callers fall back
  to `openat`;
- a set-user-ID or set-group-ID bit is refused (EPERM) wherever a mode is given: chmod, fchmod,
  fchmodat(2), mknod(at), and open, openat and creat when they create a file. Files an agent makes
  belong to the daemon's user outside (root, under a root daemon): a set-id program left in the
  workdir would run as that user for whoever runs it there. io_uring is refused with the rest
  (its requests, an open with a mode among them, are read from memory no filter sees; callers
  such as libuv fall back to plain system calls);
- everything else is allowed.
"""

from __future__ import annotations

import errno
import platform
import struct

#: seccomp_data: nr (u32) at 0, arch (u32) at 4, instruction pointer (u64) at 8, args[6] (u64) at 16.
_NR, _ARCH, _ARG0_LOW = 0, 4, 16  # both architectures here are little-endian: an arg's low word first

# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x00 | 0x00 | 0x20
_JEQ_K = 0x05 | 0x10 | 0x00
_JSET_K = 0x05 | 0x40 | 0x00
_RET_K = 0x06 | 0x00
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
X32_SYSCALL_BIT = 0x40000000

#: CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET and NEWTIME (linux/sched.h).
NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x80

#: Refused with EPERM. Names are the kernel's; a name missing from an architecture's table does
#: not exist there (iopl on aarch64).
REFUSED = (
    "open_by_handle_at", "name_to_handle_at",
    "mount", "umount2", "pivot_root", "move_mount", "open_tree", "open_tree_attr", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "chroot",
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "bpf", "perf_event_open", "userfaultfd",
    "add_key", "request_key", "keyctl",
    "setns",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "quotactl", "quotactl_fd", "swapon", "swapoff", "reboot", "acct", "syslog", "lookup_dcookie", "vhangup",
    "iopl", "ioperm",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
)
#: Allowed unless their flags (first argument) ask for a namespace.
FLAG_CHECKED = ("clone", "unshare")
#: Answered ENOSYS, so the C library falls back to a call the filter can check.
NOT_IMPLEMENTED = ("clone3", "openat2")
#: The set-user-ID and set-group-ID bits (S_ISUID | S_ISGID): refused in any mode a call gives.
SET_ID_BITS = 0o6000
#: Calls that give a mode, and which argument holds it.
MODE_CHECKED = {"chmod": 1, "fchmod": 1, "fchmodat": 2, "fchmodat2": 2, "mknod": 1, "mknodat": 2, "creat": 1}
#: Calls whose mode counts only when their flags (first index) create a file: (flags, mode).
CREATE_CHECKED = {"open": (1, 2), "openat": (2, 3)}
#: The flags under which open and openat read their mode: O_CREAT and __O_TMPFILE (the same on
#: x86_64 and aarch64); without them the mode argument is whatever the register held.
CREATE_FLAGS = 0o100 | 0o20000000

SYSCALLS = {
    "x86_64": {
        "open_by_handle_at": 304, "name_to_handle_at": 303, "mount": 165, "umount2": 166, "pivot_root": 155,
        "move_mount": 429, "open_tree": 428, "open_tree_attr": 467, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "fspick": 433, "mount_setattr": 442, "chroot": 161, "ptrace": 101,
        "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438, "kcmp": 312, "bpf": 321,
        "perf_event_open": 298, "userfaultfd": 323, "add_key": 248, "request_key": 249, "keyctl": 250,
        "setns": 308, "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
        "delete_module": 176, "quotactl": 179, "quotactl_fd": 443, "swapon": 167, "swapoff": 168,
        "reboot": 169, "acct": 163, "syslog": 103, "lookup_dcookie": 212, "vhangup": 153, "iopl": 172,
        "ioperm": 173, "clone": 56, "unshare": 272, "clone3": 435, "openat2": 437,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "mknod": 133, "mknodat": 259, "creat": 85,
        "open": 2, "openat": 257,
    },
    "aarch64": {
        "open_by_handle_at": 265, "name_to_handle_at": 264, "mount": 40, "umount2": 39, "pivot_root": 41,
        "move_mount": 429, "open_tree": 428, "open_tree_attr": 467, "fsopen": 430, "fsconfig": 431,
        "fsmount": 432, "fspick": 433, "mount_setattr": 442, "chroot": 51, "ptrace": 117,
        "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438, "kcmp": 272, "bpf": 280,
        "perf_event_open": 241, "userfaultfd": 282, "add_key": 217, "request_key": 218, "keyctl": 219,
        "setns": 268, "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273,
        "delete_module": 106, "quotactl": 60, "quotactl_fd": 443, "swapon": 224, "swapoff": 225,
        "reboot": 142, "acct": 89, "syslog": 116, "lookup_dcookie": 18, "vhangup": 58,
        "clone": 220, "unshare": 97, "clone3": 435, "openat2": 437,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "mknodat": 33, "openat": 56,
    },
}
AUDIT_ARCH = {"x86_64": AUDIT_ARCH_X86_64, "aarch64": AUDIT_ARCH_AARCH64}
_MACHINE_NAMES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def machine() -> str | None:
    """This machine's architecture as named here, or None when the filter has no table for it."""
    return _MACHINE_NAMES.get(platform.machine().lower())


def _arg(index: int) -> int:
    """Where argument `index`'s low word is in seccomp_data."""
    return _ARG0_LOW + 8 * index


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def program(arch: str) -> bytes:
    """The filter for `arch` ("x86_64" or "aarch64") as bwrap reads it: struct sock_filter[]."""
    table = SYSCALLS[arch]
    eperm, enosys = RET_ERRNO | errno.EPERM, RET_ERRNO | errno.ENOSYS
    out = [_insn(_LD_W_ABS, _ARCH), _insn(_JEQ_K, AUDIT_ARCH[arch], jt=1), _insn(_RET_K, RET_KILL_PROCESS),
           _insn(_LD_W_ABS, _NR)]
    if arch == "x86_64":  # x32 numbers carry this bit; their ABI is not what the table describes
        out += [_insn(_JSET_K, X32_SYSCALL_BIT, jf=1), _insn(_RET_K, RET_KILL_PROCESS)]
    for name in REFUSED:
        if name in table:
            out += [_insn(_JEQ_K, table[name], jf=1), _insn(_RET_K, eperm)]
    for name in NOT_IMPLEMENTED:
        out += [_insn(_JEQ_K, table[name], jf=1), _insn(_RET_K, enosys)]
    for name in FLAG_CHECKED:
        # nr matches: load the flags' low word; any namespace bit → EPERM, else allow.
        out += [_insn(_JEQ_K, table[name], jf=4), _insn(_LD_W_ABS, _ARG0_LOW),
                _insn(_JSET_K, NAMESPACE_FLAGS, jf=1), _insn(_RET_K, eperm), _insn(_RET_K, RET_ALLOW)]
    for name, mode in MODE_CHECKED.items():
        if name in table:  # nr matches: a set-id bit in the mode → EPERM, else allow
            out += [_insn(_JEQ_K, table[name], jf=4), _insn(_LD_W_ABS, _arg(mode)),
                    _insn(_JSET_K, SET_ID_BITS, jf=1), _insn(_RET_K, eperm), _insn(_RET_K, RET_ALLOW)]
    for name, (flags, mode) in CREATE_CHECKED.items():
        if name in table:  # nr matches: not creating → allow; creating with a set-id bit → EPERM
            out += [_insn(_JEQ_K, table[name], jf=6), _insn(_LD_W_ABS, _arg(flags)),
                    _insn(_JSET_K, CREATE_FLAGS, jf=3), _insn(_LD_W_ABS, _arg(mode)),
                    _insn(_JSET_K, SET_ID_BITS, jf=1), _insn(_RET_K, eperm), _insn(_RET_K, RET_ALLOW)]
    out.append(_insn(_RET_K, RET_ALLOW))
    return b"".join(out)


def native_program() -> bytes | None:
    """The filter for this machine, or None on an architecture without a table (no sandbox then)."""
    arch = machine()
    return program(arch) if arch else None
