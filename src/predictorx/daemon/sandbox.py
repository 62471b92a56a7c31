"""The opt-in OS sandbox for agent runs, with bubblewrap (R-SEC-6).

Asked for per agent (`agent create|update --sandbox`) or for every run of a daemon
(`daemon start --sandbox`, `up --sandbox`). The agent then starts as `bwrap <mounts> -- <argv>`
and sees a filesystem made of:

- the system, read-only: /usr, /bin, /lib*, /sbin, /etc, /opt (and resolv.conf's target);
- its own install, read-only: the directories on its PATH, the resolved executable (and the
  `node_modules` tree it lives in), absolute paths named on its command line, this Python
  environment (so `predictorx issue comment` works);
- read-only too: the repo caches of the repositories the task allows (its checkouts borrow their
  objects; no other repository's cache is there, and no cache is ever writable);
- writable: the task's workdir (its checkouts are repositories of their own there) and env root
  scratch (`output/`, `home/`, `agents-room/`, `checkouts/`), the person's folder and its git dirs
  for `in_place`, the agents-room store's own folder (never $HOME or /tmp: such a store refuses the run);
- the CLI's config dir in $HOME: a copy made for the run, its hook and settings files read-only,
  its sessions kept per agent by the daemon (cliconfig.py): nothing reaches the person's own;
- an empty $HOME, an empty private /tmp, a /proc of its own pid namespace (so no
  `/proc/$PPID/environ` of the daemon to read) and a minimal /dev.

Everything else — the state dir (database, tokens), ~/.ssh, ~/.config, ~/.gnupg, other users'
homes, other tasks' env roots — does not exist inside. A secret path that lies under something
mounted (the state dir inside a person's folder, say) is covered with an empty tmpfs. The
network is the host's, unless the agent's network policy is an allowlist: then its own
namespace reaching only the allowed hosts through the daemon's proxy (netpolicy.py).

What it does not cover is in docs/security-sandbox.md.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable

from .. import config
from . import privatescan, seccomp
from .cliconfig import IN_MEMORY, READ_ONLY
from .gitdata import nearest_dot_git, repository_dirs
from .netpolicy import NetworkJail

#: Overrides the bubblewrap executable (a path or a name on PATH).
BWRAP_ENV = "PREDICTORX_BWRAP"
PROBE_TIMEOUT_S = 10.0
#: No capability in the host's user namespace, whoever starts it (issue 29 finding 2): a user
#: namespace of its own (as root too), in which it can make no other; every capability dropped;
#: bwrap sets no_new_privs before it loads the seccomp filter.
CONFINEMENT = ("--unshare-user", "--disable-userns", "--cap-drop", "ALL")
#: The fd bwrap reads the seccomp filter from when a /bin/sh opens it (`SandboxPlan.__call__`;
#: `launch` passes the daemon's own fd instead).
SECCOMP_FD = 9
#: …and the first file copied into its memory (cliconfig.IN_MEMORY), the next one below it.
COPY_FD = 8
FILTER_NAME = "seccomp.bpf"

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
#: Searched for what the machine keeps from its other users (`kept_from_others`; again when inotify
#: says something there changed: privatescan.py).
PRIVATE_SCAN_DIRS = ("/etc",)
#: Read-only in $HOME for every agent: git's identity and settings.
SHARED_HOME_FILES = (".gitconfig",)
#: Never visible, even when under something mounted.
SECRET_HOME_PATHS = (".ssh", ".config", ".gnupg", ".aws", ".netrc", ".git-credentials", ".docker", ".kube",
                     ".local/share/predictorx", ".cache/predictorx")


def bwrap_executable() -> str | None:
    name = os.environ.get(BWRAP_ENV) or "bwrap"
    return shutil.which(name)


#: bwrap executables (path, inode, mtime) that made a sandbox here, and when (`bwrap_problem`)
_PROBED_OK: dict[tuple[str, int, int], float] = {}
#: how long a probe that worked is believed: a run whose sandbox fails to start still fails
PROBE_TRUSTED_S = 300.0


def bwrap_problem() -> str | None:
    """Why no sandbox can be made on this machine, in words; None when bubblewrap works. A probe
    that worked is believed for PROBE_TRUSTED_S for the same executable (a bwrap process of ~9 ms
    per task start before, issue 30); a failure is probed again every time."""
    exe = bwrap_executable()
    if exe is None:
        return "bubblewrap (`bwrap`) is not installed on this machine"
    try:
        st = os.stat(exe)
        key: tuple[str, int, int] | None = (exe, st.st_ino, st.st_mtime_ns)
    except OSError:
        key = None
    if key is not None and time.monotonic() - _PROBED_OK.get(key, -PROBE_TRUSTED_S) < PROBE_TRUSTED_S:
        return None
    problem = _probe(exe)
    if problem is None and key is not None:
        _PROBED_OK[key] = time.monotonic()
    return problem


def _probe(exe: str) -> str | None:
    """Make one sandbox with `exe`, the seccomp filter on: why it failed, or None."""
    compiled = seccomp.native_program()
    if compiled is None:
        return f"the sandbox's seccomp filter has no system call table for this machine ({platform.machine()})"
    read_end, write_end = os.pipe()
    try:
        try:
            os.write(write_end, compiled)  # a few hundred bytes: fits the pipe's buffer
        finally:
            os.close(write_end)
        probe = subprocess.run([exe, *CONFINEMENT, "--seccomp", str(read_end), "--ro-bind", "/", "/",
                                "--unshare-pid", "--proc", "/proc", "--dev", "/dev", "--die-with-parent", "true"],
                               capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                               stdin=subprocess.DEVNULL, pass_fds=(read_end,))
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap ({exe}) could not be run: {e}"
    finally:
        os.close(read_end)
    if probe.returncode != 0:
        first = (probe.stderr.strip().splitlines() or ["no message"])[0]
        return f"bubblewrap ({exe}) cannot make a sandbox here ({first})"
    return None


@dataclass
class SandboxPlan:
    """What one run may see; `wrap` turns an agent's argv into the bwrap command line."""

    bwrap: str
    provider: str
    writable: list[Path] = field(default_factory=list)
    readable: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)
    home: Path = field(default_factory=Path.home)
    chdir: Path | None = None
    #: The run's own network namespace and its way out (daemon/netpolicy.py); None: the host's network.
    network: NetworkJail | None = None
    #: The compiled seccomp filter (`write_filter`); bwrap reads it from fd SECCOMP_FD.
    seccomp: Path | None = None
    #: Put in place last, on top of everything: (source outside, path inside, how: READ_ONLY,
    #: WRITABLE or IN_MEMORY) — the run's own copy of its CLI's config (cliconfig.py).
    overlays: list[tuple[Path, Path, str]] = field(default_factory=list)
    #: Its bwrap gets `--die-with-parent` (arguments): the agent needs no setpriv to die with the
    #: daemon (agents/spec.py dies_with_parent).
    dies_with_parent: ClassVar[bool] = True

    def __call__(self, argv: list[str], env: dict[str, str]) -> list[str]:
        copies = self._numbered_copies()
        command = self._command(argv, env, SECCOMP_FD, [(fd, target) for fd, _, target in copies])
        opened = ([(SECCOMP_FD, self.seccomp)] if self.seccomp is not None else []) + \
            [(fd, source) for fd, source, _ in copies]
        if not opened:
            return command
        # bwrap takes the filter and the copies as open fds: a shell opens them and execs bwrap
        # (same pid); the files are its first arguments, shifted away before the command.
        names = " ".join(f'{fd}< "$f{i}"' for i, (fd, _) in enumerate(opened))
        keep = "; ".join(f'f{i}=${i}' for i in range(len(opened)))
        script = f'{keep}; shift {len(opened) - 1}; exec "$@" {names}'
        return ["/bin/sh", "-c", script, *(str(path) for _, path in opened), *command]

    def launch(self, argv: list[str], env: dict[str, str]) -> tuple[list[str], tuple[int, ...]]:
        """(the bwrap command line, the fds its process is given): the seccomp filter and the files
        copied into its memory opened here, for the process start to pass (`pass_fds`) and then
        close — no /bin/sh started to open them (~0.5 ms of CPU per run, issue 30). The same
        sandbox as `__call__`'s. A copy whose source is gone by now is left out."""
        opened: list[int] = []
        try:
            seccomp_fd = None
            if self.seccomp is not None:
                seccomp_fd = os.open(self.seccomp, os.O_RDONLY | os.O_CLOEXEC)
                opened.append(seccomp_fd)
            files: list[tuple[int, Path]] = []
            for source, target in self._in_memory():
                try:
                    fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
                except OSError:
                    continue
                opened.append(fd)
                files.append((fd, target))
            return self._command(argv, env, seccomp_fd, files), tuple(opened)
        except BaseException:
            for fd in opened:
                os.close(fd)
            raise

    def _in_memory(self) -> list[tuple[Path, Path]]:
        return [(source, target) for source, target, how in self.overlays if how == IN_MEMORY]

    def _numbered_copies(self) -> list[tuple[int, Path, Path]]:
        """(fd, source, path inside) of the copies when a shell opens them: COPY_FD, COPY_FD - 1, …"""
        return [(COPY_FD - i, source, target) for i, (source, target) in enumerate(self._in_memory())]

    def _command(self, argv: list[str], env: dict[str, str], seccomp_fd: int | None,
                 files: list[tuple[int, Path]]) -> list[str]:
        inner, net_args = (self.network.wrap(argv), self.network.bwrap_args()) if self.network else (argv, [])
        return [self.bwrap, *self.arguments(argv, env, seccomp_fd, files), *net_args, "--", *inner]

    def arguments(self, argv: list[str], env: dict[str, str], seccomp_fd: int | None = SECCOMP_FD,
                  files: list[tuple[int, Path]] | None = None) -> list[str]:
        """bwrap's options; `seccomp_fd`: where bwrap reads the filter (when the plan has one);
        `files`: (fd, path inside) of the overlays copied into its memory (default: fd COPY_FD,
        COPY_FD - 1, … in order)."""
        filtered = self.seccomp is not None and seccomp_fd is not None
        args = [*CONFINEMENT, *(["--seccomp", str(seccomp_fd)] if filtered else []),
                "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", "/var/tmp", "--dir", "/run"]
        mounted = _Roots()
        for d in SYSTEM_DIRS:
            p = Path(d)
            if p.is_symlink():
                args += ["--symlink", os.readlink(p), d]
            elif p.is_dir():
                args += ["--ro-bind", d, d]
                mounted.add(p)
        for private in _PRIVATE():
            args += ["--tmpfs", private] if os.path.isdir(private) else ["--ro-bind", "/dev/null", private]
        real = _Realpaths()
        resolv = real("/etc/resolv.conf")
        if not _under(resolv, [Path("/etc")]) and resolv.exists():
            args += ["--ro-bind", str(resolv), str(resolv)]
        args += ["--dir", str(self.home)]
        hidden = [real(h) for h in self.hidden]
        secrets = _Roots(hidden)
        for path in _dedupe(self.readable + self._install_paths(argv, env, real) + self._home_paths(SHARED_HOME_FILES),
                            real):
            if path.exists() and not secrets.covers(path) and not mounted.covers(path):
                args += ["--ro-bind", str(path), str(path)]
                mounted.add(path)
        writable = _dedupe(self.writable, real)
        outside = [w for w in writable if not secrets.covers(w)]
        for path in outside:
            mounted.add(path)  # (from here on: what a secret may be under)
            if path.exists():
                args += ["--bind", str(path), str(path)]
        # A secret under something mounted (the state dir inside a person's folder) is covered;
        # a writable path inside a secret (a CLI's ~/.config/<cli>) is mounted again on top.
        for secret in hidden:
            if secret.exists() and mounted.covers(secret):
                args += ["--tmpfs", str(secret)] if secret.is_dir() else ["--ro-bind", "/dev/null", str(secret)]
        for path in writable:
            if path not in outside and path.exists():
                args += ["--bind", str(path), str(path)]
        for source, target, how in self.overlays:
            if how != IN_MEMORY:
                args += ["--ro-bind" if how == READ_ONLY else "--bind", str(source), str(target)]
        if files is None:
            files = [(fd, target) for fd, _, target in self._numbered_copies()]
        for fd, target in files:
            args += ["--file", str(fd), str(target)]
        if self.chdir is not None:
            args += ["--chdir", str(self.chdir)]
        return args

    def _home_paths(self, names: tuple[str, ...]) -> list[Path]:
        return [self.home / n for n in names if (self.home / n).exists()]

    def _install_paths(self, argv: list[str], env: dict[str, str], real: _Realpaths | None = None) -> list[Path]:
        """The agent CLI's own install: PATH entries, its executable's real home, named files."""
        real = real or _Realpaths()
        found: list[Path] = []
        for entry in env.get("PATH", "").split(os.pathsep):
            if entry and os.path.isabs(entry) and Path(entry).is_dir():
                found.append(real(entry))
        if argv:
            exe = argv[0] if os.path.isabs(argv[0]) else shutil.which(argv[0], path=env.get("PATH"))
            if exe and os.path.exists(exe):
                for p in (Path(os.path.abspath(exe)), real(exe)):
                    found.append(_package_root(p))
                    found += python_env(p)
        # A file named on the command line (`python3 /opt/agent.py`) is visible, itself only.
        found += [Path(w) for w in argv[1:] if os.path.isabs(w) and os.path.exists(w)]
        return found


def kept_from_others(roots: Iterable[str]) -> list[str]:
    """Files in `roots` other users of the machine may not read, and folders they may not enter:
    hidden in the sandbox. Its user namespace maps its root to the daemon's user, so under a root
    daemon an agent, without a capability, still passed as the owner of root's files in the
    system dirs: `/etc/shadow`, `/etc/ssl/private`, the SSH host keys, a database's `pg_hba.conf`.
    The sandbox sees of them what any user of the machine sees. (For PRIVATE_SCAN_DIRS, a run
    takes `_PRIVATE()`: the same scan, kept until inotify says something there changed.)"""
    return privatescan.scan(roots)


#: kept_from_others(PRIVATE_SCAN_DIRS), scanned again only when something there changed
_PRIVATE = privatescan.PrivateScan(PRIVATE_SCAN_DIRS)


def _package_root(path: Path) -> Path:
    """A script inside node_modules needs the whole tree; anything else its own directory."""
    parts = path.parts
    if "node_modules" in parts:
        return Path(*parts[: parts.index("node_modules") + 1])
    return path.parent if path.is_file() else path


def python_env(exe: Path) -> list[Path]:
    """A console script in a Python venv (pipx, `uv tool`, a venv of its own: gptme, Mistral Vibe)
    runs on the venv's site-packages and its base interpreter, neither in the script's folder: the
    venv's root and the base's prefix (`home` in its pyvenv.cfg). Nothing for any other file."""
    root = exe.parent.parent
    try:
        cfg = (root / "pyvenv.cfg").read_text(errors="replace")
    except OSError:
        return []
    paths = [root]
    for line in cfg.splitlines():
        key, _, value = line.partition("=")
        home = Path(value.strip())
        if key.strip() == "home" and home.is_absolute():
            paths.append(home.parent if home.name == "bin" else home)
    return paths


def _under(path: Path, roots: list[Path]) -> bool:
    """`path` is one of `roots` or inside one. On the paths' text (they are absolute and normalised
    by Path): `r in path.parents` built a tuple of Paths per root, ~0.5 ms per path on a plan's few
    dozen roots, most of the daemon's own CPU per run (issue 30)."""
    return _Roots(roots).covers(path)


class _Roots:
    """Paths, and whether another is one of them or inside one (`_under`), on their text: the
    prefixes kept as they are added, tested in one `str.startswith` (a plan asks ~40 times)."""

    def __init__(self, paths: Iterable[Path] = ()) -> None:
        self.exact: set[str] = set()
        self.prefixes: tuple[str, ...] = ()
        for path in paths:
            self.add(path)

    def add(self, path: Path) -> None:
        r = str(path)
        self.exact.add(r)
        self.prefixes += (r if r.endswith("/") else r + "/",)

    def covers(self, path: Path) -> bool:
        text = str(path)
        return text in self.exact or text.startswith(self.prefixes)


class _Realpaths:
    """`os.path.realpath` for one plan's command line: a path it names several times (a PATH entry,
    then the same folder among the mounts) is resolved once, and a resolved path is its own."""

    def __init__(self) -> None:
        self.seen: dict[str, Path] = {}

    def __call__(self, path: str | Path) -> Path:
        text = os.fspath(path)
        found = self.seen.get(text)
        if found is None:
            found = self.seen[text] = Path(os.path.realpath(text))
            self.seen.setdefault(str(found), found)
        return found


def _dedupe(paths: list[Path], real: _Realpaths | None = None) -> list[Path]:
    real = real or _Realpaths()
    return list(dict.fromkeys(real(p) for p in paths))


def write_filter(folder: Path) -> Path:
    """The seccomp filter for this machine, written into `folder` (a run's env root) for bwrap."""
    compiled = seccomp.native_program()
    if compiled is None:
        raise OSError(f"no seccomp filter for this machine ({platform.machine()})")
    path = folder / FILTER_NAME
    path.write_bytes(compiled)
    return path


def python_paths() -> list[Path]:
    """This interpreter and the predictorx code (also an editable checkout), for `predictorx` inside."""
    import predictorx

    paths = [Path(sys.prefix), Path(sys.base_prefix), Path(predictorx.__file__).resolve().parents[1]]
    # agents-room's code (its hooks and MCP server run inside): located, not imported — Predictor X
    # uses agents-room only as a program (issue 10 item 7)
    import importlib.util

    spec = importlib.util.find_spec("agents_room")
    if spec is not None and spec.origin:
        paths.append(Path(spec.origin).resolve().parents[1])
    return paths


def secret_paths(home: Path) -> list[Path]:
    """The daemon's own state and the person's credentials: never inside a sandbox."""
    paths = [config.state_dir(), config.lock_dir()] + [home / n for n in SECRET_HOME_PATHS]
    for name in ("PREDICTORX_HOME",):
        if os.environ.get(name):
            paths.append(Path(os.environ[name]).expanduser())
    return paths


def git_dirs(cwd: Path) -> list[Path]:
    """The git dirs a person's folder at `cwd` writes to when it commits (for `in_place` only: a
    linked worktree's are elsewhere), mounted writable.

    The folder's `.git` is the agent's to write, so git's own answer (`rev-parse --git-dir`) is
    not trusted: an earlier run wrote `.git/commondir`, a `gitdir:` file or a symlink naming
    another repository (the daemon's repo cache, another of the person's), and the next run got
    that mounted writable. Taken are only the folder's own `.git` folder, or a linked worktree's
    git dir whose repository lists it as this folder's (its `gitdir` file, which no run of this
    folder can write unless it had that repository already) and that repository's common dir."""
    dot_git = nearest_dot_git(cwd)  # (it resolves `cwd` itself)
    found = repository_dirs(dot_git) if dot_git is not None else None
    return list(dict.fromkeys(found)) if found else []


def repo_cache_paths(cache: Any, urls: Iterable[str]) -> list[Path]:
    """The repo caches of `urls` that exist (`RepoCache`): mounted read-only, so a run's checkouts
    can borrow their objects and nothing else of the cache — another repository's, another
    workspace's — is there at all."""
    paths = []
    for url in urls:
        try:
            path = cache.cache_path(url)
        except ValueError:
            continue
        if path.is_dir() and not path.is_symlink():
            paths.append(path)
    return paths


#: Folders a store's folder is never, nor contains: the host's shared temporary folders.
SHARED_TMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


class StoreRefused(ValueError):
    """agents-room's store is in a folder that is not its own: one sentence, naming the setting."""


def agents_room_paths(home: Path, workspaces_root: Path | None = None) -> list[Path]:
    """agents-room's store folder, writable, so sandboxed agents still meet in their rooms.

    SQLite in WAL mode makes and deletes `-wal` and `-shm` files beside the store, and agents-room
    rings its doorbells in `bells/` there: the folder is mounted, not the files (a file mounted
    alone and then deleted and made again outside would leave the run writing a log nobody else
    reads). So it must be agents-room's own: the default ~/.agents-room, or a folder holding
    nothing but the store (`room.db*`, `bells/`). A folder that is $HOME, a shared /tmp, or holds
    anything else — or is, contains or lies in the workspaces root, the state dir or a secret
    path — raises StoreRefused instead (AGENTS_ROOM_DB=~/room.db made all of $HOME writable)."""
    db = os.environ.get("AGENTS_ROOM_DB")
    store = Path(db).expanduser() if db else home / ".agents-room" / "room.db"
    folder = Path(os.path.realpath(store.parent))
    if not folder.is_dir():
        return []
    setting = f"AGENTS_ROOM_DB={db}" if db else f"the default agents-room store {store}"
    advice = ("; point AGENTS_ROOM_DB at a file in a folder of its own (e.g. ~/.agents-room/room.db, or a new "
              "empty folder) and restart the daemon, or run without rooms (PREDICTORX_ROOMS=0)")
    own = Path(os.path.realpath(home / ".agents-room"))
    reserved = [("your home folder", home), *((f"the shared {d}", Path(d)) for d in SHARED_TMP_DIRS)]
    for name, path in reserved:
        real = Path(os.path.realpath(path))
        if folder == real or folder in real.parents:
            raise StoreRefused(f"{setting} puts the store in {folder}, which is or contains {name} ({path}): "
                               f"a sandboxed run would get all of it writable{advice}")
    kept = [("the workspaces root", workspaces_root)] if workspaces_root is not None else []
    kept += [("a secret path", p) for p in secret_paths(home)]
    for name, path in kept:
        real = Path(os.path.realpath(path))
        if folder == real or folder in real.parents or real in folder.parents:
            raise StoreRefused(f"{setting} puts the store in {folder}, which is, contains or lies in {name} "
                               f"({path}), never writable in a sandboxed run{advice}")
    if folder != own:
        others = sorted(n for n in os.listdir(folder) if not _store_entry(folder, n, store.name))
        if others:
            shown = ", ".join(others[:3]) + (", …" if len(others) > 3 else "")
            raise StoreRefused(f"{setting} puts the store in {folder}, which holds more than the store ({shown}): "
                               f"a sandboxed run would get all of it writable{advice}")
    return [folder]


def _store_entry(folder: Path, name: str, db_name: str) -> bool:
    """`name` in the store's folder is the store's: a file `room.db…` (-wal, -shm, -journal, a store
    moved aside as `agents-room doctor` says) or the doorbells folder."""
    path = folder / name
    if path.is_symlink():
        return False
    if name == "bells":
        return path.is_dir()
    return name.startswith(db_name) and path.is_file()


def _lstat_mode(path: str) -> int | None:
    """The mode of `path` itself (a link is not followed); None when it is gone or unreadable."""
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None
