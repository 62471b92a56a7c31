"""Path rules for `local_directory` (R-LD-1, R-LD-2): which folders an agent may be pointed at.

Pure functions beside the `local_directory` type, so the daemon and the server (the web folder
picker) share them without either importing the other. `check_local_directory(path)` is what the
daemon calls, when a resource is saved and before every
task. It resolves symlinks first and judges the *real* path, so a link into /etc or macOS's
/private/tmp is refused like the place it points to. It only looks; it never creates or changes
anything, so a refused folder is left untouched.

The location rules are pure string logic (`posix_location_violation`,
`windows_location_violation`) so every rule — the Windows ones included — is testable anywhere.

Decisions where the spec says "…":
- /tmp and /var/tmp themselves are refused, folders inside them are allowed (people and tests
  keep throwaway projects there). The same for the platform's temporary directory (macOS's
  per-user /var/folders/…/T).
- /var is a system tree except inside /var/tmp, /var/folders (macOS temp) and /var/www (web
  projects traditionally live there); /opt is a root, but folders inside it are allowed except the
  package-manager trees /opt/homebrew and /opt/local. /srv, /mnt, /media and /Volumes are refused
  themselves (mount and service roots), their sub-folders allowed.
- "Another user's home" is /home/<name>, /Users/<name> (not /Users/Shared) and /root, whichever
  is not your own. Root's home is /root, so for root every /home/<name> is someone else's.
- Inside your own home everything is allowed (except the home itself), even if the home lives
  under a system tree (FreeBSD's /usr/home, a CI user's /var/lib/jenkins).
- Ancestors of your home are refused like the listed profile roots (seed 001: "each home
  directory's parent paths").
- A path that names or passes through /proc, /sys or /dev — as written, or at any symlink on the
  way — is refused even when it resolves somewhere allowed: `/proc/<pid>/cwd` is another
  process's working directory (another task's, the daemon's), not a folder anyone chose.
- A repository named by a `file://` URL (or a plain path) is judged by the same location rules
  (`check_repository_path`); it is only read, so it need not be writable.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import re
import stat
import sys
import tempfile
from pathlib import Path

# Rule identifiers, carried by PathRuleError.rule so callers can tell errors apart.
ABSOLUTE = "absolute"
EXISTS = "exists"
DIRECTORY = "directory"
ACCESS = "access"
ROOT = "system-or-profile-root"
SYSTEM_TREE = "system-tree"
HOME = "home"
OTHER_HOME = "other-users-home"


class PathRuleError(ValueError):
    """The folder breaks a path rule; the message names the rule, `rule` identifies it."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule


# --- POSIX (Linux, macOS) ---------------------------------------------------------------------

# Refused themselves; what is inside may be fine (or is judged by the other rules).
_POSIX_ROOTS = (
    "/", "/Users", "/Users/Shared", "/home", "/root", "/etc", "/tmp", "/var", "/usr", "/opt",
    "/private", "/var/tmp", "/var/folders", "/var/www", "/srv", "/mnt", "/media", "/Volumes",
)
# Refused together with everything inside them.
_POSIX_TREES = (
    "/etc", "/usr", "/proc", "/sys", "/dev", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
    "/libx32", "/libexec", "/run", "/snap", "/nix", "/lost+found", "/System", "/Library",
    "/Applications", "/cores", "/opt/homebrew", "/opt/local", "/var",
)
# Inside /var, these sub-trees hold user data and are allowed (strictly inside them).
_VAR_ALLOWED = ("/var/tmp", "/var/folders", "/var/www")
# macOS keeps /etc, /var and /tmp under /private; judge them by the names people know.
_PRIVATE = re.compile(r"^/private(/(?:etc|var|tmp))(/.*)?$")


def _canonical(path: str) -> str:
    """Normalised, with macOS's /private/{etc,var,tmp} under the names people know."""
    path = posixpath.normpath(path)
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    m = _PRIVATE.match(path)
    return m.group(1) + (m.group(2) or "") if m else path


def _within(path: str, top: str) -> bool:
    """path is top or inside it — component-wise, so /etc2 is not inside /etc."""
    return path == top or top == "/" or path.startswith(top + "/")


def _is_in(path: str, top: str) -> str:
    return "is" if path == top else "is inside"


def _strictly_within(path: str, top: str) -> bool:
    return path != top and _within(path, top)


def posix_location_violation(
    real: str, home: str | None, *, casefold: bool = False, temp_dir: str | None = None
) -> tuple[str, str] | None:
    """Judge a real (symlink-free, absolute) POSIX path by location alone.

    Returns (rule, reason) — the reason completes "<path> …" — or None when allowed. `casefold`
    is for case-insensitive file systems (macOS), where /USERS is /Users.
    """
    fold = (lambda s: s.casefold()) if casefold else (lambda s: s)
    p = fold(_canonical(real))
    h = fold(_canonical(home)) if home else None

    if h and p == h:
        return HOME, "is your home directory itself; use a project folder inside it"
    for root in _POSIX_ROOTS:
        if p == fold(root) and root not in _POSIX_TREES:  # /etc itself: the tree rule says more
            return ROOT, f"is a system or profile root ({root}); use a project folder inside your home"
    if h and _within(h, p):
        return ROOT, f"contains your home directory ({home}); use a project folder inside your home"
    if temp_dir and p == fold(_canonical(temp_dir)):
        return ROOT, "is the system's temporary directory itself; use a folder inside it"
    home_is_own_tree = h is not None and h != "/" and h not in {fold(r) for r in _POSIX_ROOTS if r != "/root"}
    if home_is_own_tree and _strictly_within(p, h):
        return None

    for tree in _POSIX_TREES:
        t = fold(tree)
        if not _within(p, t):
            continue
        if tree == "/var":
            if any(_strictly_within(p, fold(a)) for a in _VAR_ALLOWED):
                continue
            return SYSTEM_TREE, (f"{_is_in(p, t)} a system directory (/var and everything under it, "
                                 "except folders inside /var/tmp, /var/folders and /var/www)")
        return SYSTEM_TREE, f"{_is_in(p, t)} a system directory ({tree} and everything under it)"

    for homes in ("/home", "/Users"):
        hs = fold(homes)
        if _strictly_within(p, hs):
            owner = p[len(hs) + 1:].split("/", 1)[0]
            if homes == "/Users" and owner == fold("Shared"):
                continue
            return OTHER_HOME, f"is inside another user's home directory ({homes}/{owner})"
    if _strictly_within(p, fold("/root")):
        return OTHER_HOME, "is inside another user's home directory (/root, root's home)"
    return None


# --- Windows (pure string logic, so it is tested on every platform) ----------------------------

_WIN_TREES = ("windows", "program files", "program files (x86)", "programdata")
_WIN_ROOT_NAMES = {"users": "Users", "windows": "Windows", "program files": "Program Files",
                   "program files (x86)": "Program Files (x86)", "programdata": "ProgramData"}
# Profiles in C:\Users that are not a person's: Public is shared (like /Users/Shared), the others
# are templates and links Windows manages.
_WIN_PROFILE_SYSTEM = {"default", "default user", "all users"}


def _win_split(path: str) -> tuple[str, list[str]] | None:
    """(drive or \\\\server\\share, components) of an absolute Windows path, else None."""
    p = path.replace("/", "\\")
    if p.startswith("\\\\?\\UNC\\"):
        p = "\\\\" + p[len("\\\\?\\UNC\\"):]
    elif p.startswith("\\\\?\\"):
        p = p[len("\\\\?\\"):]
    p = ntpath.normpath(p)
    drive, rest = ntpath.splitdrive(p)
    if not drive or not rest.startswith("\\"):
        if drive.startswith("\\\\") and not rest:
            return drive, []
        return None
    return drive, [c for c in rest.split("\\") if c]


def windows_location_violation(path: str, home: str | None = None) -> tuple[str, str] | None:
    """Judge a Windows path by location alone (case-insensitive); same contract as the POSIX one."""
    split = _win_split(path)
    if split is None:
        return ABSOLUTE, "is not an absolute Windows path (it needs a drive letter, e.g. C:\\code\\project)"
    drive, parts = split
    low = [c.casefold() for c in parts]
    drive_key = drive.casefold()
    if not parts:
        if drive.startswith("\\\\"):
            return ROOT, f"is the root of the network share {drive}"
        return ROOT, f"is the root of drive {drive.upper()}\\"
    hsplit = _win_split(home) if home else None
    hlow = [c.casefold() for c in hsplit[1]] if hsplit and hsplit[0].casefold() == drive_key else None
    if hlow is not None and low == hlow:
        return HOME, "is your home directory itself; use a project folder inside it"
    top = low[0]
    if len(low) == 1 and top in _WIN_ROOT_NAMES:
        return ROOT, f"is a system or profile root ({drive.upper()}\\{_WIN_ROOT_NAMES[top]})"
    if hlow is not None:
        if hlow[: len(low)] == low:
            return ROOT, f"contains your home directory ({home}); use a project folder inside your home"
        if hlow and low[: len(hlow)] == hlow:
            return None
    if top in _WIN_TREES:
        return SYSTEM_TREE, (f"is inside a system directory ({drive.upper()}\\{_WIN_ROOT_NAMES[top]} "
                             "and everything under it)")
    if top == "users":
        owner = low[1]
        if owner == "public":
            if len(low) == 2:
                return ROOT, f"is a system or profile root ({drive.upper()}\\Users\\Public)"
            return None
        if owner in _WIN_PROFILE_SYSTEM:
            return SYSTEM_TREE, f"is inside a system profile ({drive.upper()}\\Users\\{parts[1]})"
        return OTHER_HOME, f"is inside another user's home directory ({drive.upper()}\\Users\\{parts[1]})"
    return None


# --- The check the daemon calls ---------------------------------------------------------------

# Views of the running system: what a path through them resolves to is some process's business.
_PSEUDO_TREES = ("/proc", "/sys", "/dev")
_MAX_LINK_HOPS = 40


def _link_hops(path: str) -> list[str]:
    """Every place the path's symlinks point to on the way (lexically joined), in order."""
    hops: list[str] = []
    pending = [c for c in posixpath.normpath(path).split("/") if c]
    current = "/"
    while pending:
        candidate = posixpath.join(current, pending.pop(0))
        try:
            target = os.readlink(candidate)
        except OSError:  # not a link, missing, or not ours to read: the real-path rules decide
            current = candidate
            continue
        hop = posixpath.normpath(posixpath.join(current, target))
        hops.append(hop)
        if len(hops) > _MAX_LINK_HOPS:
            break
        pending = [c for c in hop.split("/") if c] + pending
        current = "/"
    return hops


def _pseudo_violation(path: str) -> str | None:
    for place in (path, *_link_hops(path)):
        p = _canonical(place)
        for tree in _PSEUDO_TREES:
            if _within(p, tree):
                shown = path if place == path else f"{path} (through {place})"
                return (f"{shown} goes through {tree}, a view of the running system (another process's "
                        "folder), never a project folder; give the folder's own path")
    return None


def _judged(path: str, home: Path | None, what: str) -> tuple[str, str]:
    """(real path, how to show it) if the location rules allow `path`, else PathRuleError."""
    if not isinstance(path, str) or not path.strip():
        raise PathRuleError(ABSOLUTE, f"the {what} path is empty; give an absolute path")
    if "\x00" in path:
        raise PathRuleError(ABSOLUTE, f"the {what} path contains a NUL character")
    windows = os.name == "nt"
    if not os.path.isabs(path) or (windows and not ntpath.splitdrive(path)[0]):
        example = "C:\\code\\project" if windows else "/home/me/code/project"
        raise PathRuleError(ABSOLUTE, f"{path} is not an absolute path; give the full path, e.g. {example}")
    if not windows:
        problem = _pseudo_violation(path)
        if problem:
            raise PathRuleError(SYSTEM_TREE, problem)

    real = os.path.realpath(path)
    home_real = os.path.realpath(str(home if home is not None else Path.home()))
    shown = path if os.path.normpath(path) == real else f"{path} (really {real})"

    if windows:
        verdict = windows_location_violation(real, home_real)
    else:
        verdict = posix_location_violation(
            real, home_real, casefold=sys.platform == "darwin",
            temp_dir=os.path.realpath(tempfile.gettempdir()),
        )
    if verdict:
        rule, reason = verdict
        raise PathRuleError(rule, f"{shown} {reason}")
    return real, shown


def check_repository_path(path: str, *, home: Path | None = None) -> Path:
    """The real path of a local repository a `file://` URL names, if the location rules allow it
    (the same rules as a local directory), else PathRuleError. Only where it is, not whether it is
    there: git says that, and a cache of a repository that went away is still used."""
    real, _shown = _judged(path, home, "repository")
    return Path(real)


def check_local_directory(path: str, *, home: Path | None = None) -> Path:
    """Return the real path of `path` if an agent may work there, else raise PathRuleError.

    Order: absolute → not through /proc, /sys, /dev → resolve symlinks → location rules on the
    real path → exists → is a directory → readable and writable. `home` defaults to the daemon
    user's home.
    """
    real, shown = _judged(path, home, "local directory")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        if os.path.islink(path):
            raise PathRuleError(EXISTS, f"{path} is a symlink to {os.readlink(path)}, which does not exist") from None
        raise PathRuleError(EXISTS, f"{shown} does not exist") from None
    except PermissionError:
        raise PathRuleError(ACCESS, f"{shown} cannot be reached by the daemon (permission denied)") from None
    except OSError as e:  # a symlink loop, a name too long, …
        raise PathRuleError(EXISTS, f"{shown} cannot be resolved ({e.strerror})") from None

    if not stat.S_ISDIR(st.st_mode):
        if stat.S_ISREG(st.st_mode):
            what = "a symlink to a file" if os.path.islink(path) else "a file"
        elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            what = "a device"
        else:
            what = "a special file (pipe or socket)"
        raise PathRuleError(DIRECTORY, f"{shown} is {what}, not a directory")

    if not os.access(real, os.R_OK | os.W_OK | os.X_OK):
        raise PathRuleError(ACCESS, f"{shown} is not readable and writable by the daemon's user")
    if hasattr(os, "statvfs") and os.statvfs(real).f_flag & os.ST_RDONLY:
        raise PathRuleError(ACCESS, f"{shown} is on a read-only file system; the daemon cannot write there")
    return Path(real)
