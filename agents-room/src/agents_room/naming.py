"""Room names, repository detection and glob overlap."""

from __future__ import annotations

import functools
import os

from .errors import AgentsRoomError

# pathlib (with urllib.parse and ipaddress), re and fnmatch are imported where they are used:
# the Room every hook opens imports this module, and the hooks' usual path needs none of them
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

SHARED = "shared:"
REPO = "repo:"
_PREFIXES = (SHARED, REPO)
_BAD = r"[\s,]"


class InvalidName(AgentsRoomError, ValueError):
    pass


def normalize_room(name: str) -> str:
    """``storefront`` and ``shared:storefront`` are one room; ``repo:x`` stays a repo room."""
    name = (name or "").strip()
    if not name:
        raise InvalidName("empty room name")
    if name.startswith("#"):
        name = name[1:]
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            body = name[len(prefix) :].strip()
            break
    else:
        prefix, body = SHARED, name
    import re

    if not body or re.search(_BAD, body):
        raise InvalidName(f"invalid room name {name!r}: needs a non-empty name without spaces or commas")
    return prefix + body


def legacy_key(name: str) -> str:
    """The name a room would have after normalisation (used to find split rooms)."""
    try:
        return normalize_room(name)
    except InvalidName:
        return name


def find_git_dir(cwd: Path) -> tuple[Path, Path] | None:
    """(work tree top level, common git dir) for ``cwd``, without running git."""
    try:
        cur = cwd.resolve()
    except OSError:
        return None
    for d in [cur, *cur.parents]:
        dotgit = d / ".git"
        if dotgit.is_dir():
            return d, dotgit
        if dotgit.is_file():
            try:
                text = dotgit.read_text().strip()
            except OSError:
                return None
            if text.startswith("gitdir:"):
                from pathlib import Path

                gitdir = Path(text[7:].strip())
                if not gitdir.is_absolute():
                    gitdir = (d / gitdir).resolve()
                common = gitdir
                cd = gitdir / "commondir"
                if cd.is_file():
                    common = (gitdir / cd.read_text().strip()).resolve()
                return d, common
    return None


def _remote_name(common: Path) -> str | None:
    import configparser
    import re

    cfg = configparser.RawConfigParser(strict=False)
    try:
        cfg.read(common / "config")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    sections = [s for s in cfg.sections() if s.startswith("remote ")]
    sections.sort(key=lambda s: (s != 'remote "origin"', s))
    for s in sections:
        url = cfg.get(s, "url", fallback="").strip().rstrip("/")
        if url.endswith("/.git"):  # a remote that is another checkout's .git folder
            url = url[: -len("/.git")]
        if url:
            base = re.split(r"[/:]", url)[-1]
            if base.endswith(".git"):
                base = base[:-4]
            if base:
                return base
    return None


def _main_checkout_name(common: Path, top: Path) -> str:
    """The repository's own name when it has no remote: its main checkout's folder.

    A linked worktree (``git worktree add ../workdir``, as the platform daemon makes) shares the
    main checkout's git dir, so it is named as the person's own session in the main checkout
    would be, not after its own folder (issue 9). A bare repository is named after itself.
    """
    if common.name == ".git":
        return common.parent.name
    if (top / ".git") == common:
        return top.name
    name = common.name
    return name[: -len(".git")] if name.endswith(".git") and len(name) > 4 else name


@functools.lru_cache(maxsize=64)
def repo_of(cwd: str) -> tuple[str | None, str | None]:
    """(``repo:<name>`` or None, repo root or None). Name from the origin remote, else the top level."""
    import re
    from pathlib import Path

    found = find_git_dir(Path(cwd))
    if not found:
        return None, None
    top, common = found
    name = _remote_name(common) or _main_checkout_name(common, top)
    name = re.sub(r"[\s,]+", "-", name)
    return REPO + name, str(top)


def rel_path(path: str, repo_root: str | None) -> str:
    """A path as stored in leases and reads: relative to the repo root when inside it."""
    p = path.strip()
    if p.endswith("/") and len(p) > 1:
        return rel_path(p.rstrip("/"), repo_root).rstrip("/") + "/**"
    if repo_root and os.path.isabs(p):
        try:
            rel = os.path.relpath(os.path.normpath(p), repo_root)
        except ValueError:
            return os.path.normpath(p)
        if not rel.startswith(".."):
            return rel.replace(os.sep, "/")
        return os.path.normpath(p)
    if p.startswith("./"):
        p = p[2:]
    return p


def abs_path(path: str, repo_root: str | None, cwd: str | None) -> str:
    """A path the session gave (tool argument, hook payload): a relative one is relative to the
    session's cwd, which may be a sub-folder of the repo root."""
    if os.path.isabs(path):
        return path
    base = cwd or repo_root or os.getcwd()
    return os.path.join(base, path)


def stored_abs_path(path: str, repo_root: str | None, cwd: str | None) -> str:
    """A path as stored (relative to the repo root when inside it) back to an absolute one."""
    if os.path.isabs(path):
        return path
    base = repo_root or cwd or os.getcwd()
    return os.path.join(base, path)


def input_rel_path(path: str, repo_root: str | None, cwd: str | None) -> str:
    """A path or glob the session gave, in stored form: resolved against the session's cwd, then
    made relative to the repo root. Without a repo root a relative one stays as given."""
    p = path.strip()
    if repo_root and cwd and p and not os.path.isabs(p):
        trailing = p.endswith("/")
        p = os.path.normpath(os.path.join(cwd, p)) + ("/" if trailing else "")
    return rel_path(p, repo_root)


# --- glob overlap -----------------------------------------------------------------
# Two globs overlap when some path matches both. Checked symmetrically: segments
# with '**' (any number of segments) and within a segment '*', '?', '[...]'.


def _tokens(seg: str) -> tuple:
    out = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            if not out or out[-1] != "*":
                out.append("*")
            i += 1
        elif c == "?":
            out.append("?")
            i += 1
        elif c == "[":
            j = seg.find("]", i + 2)
            if j == -1:
                out.append(("lit", c))
                i += 1
            else:
                out.append(("cls", seg[i : j + 1]))
                i = j + 1
        else:
            out.append(("lit", c))
            i += 1
    return tuple(out)


_ALPHABET = [chr(c) for c in range(32, 127)]


def _char_compat(a, b) -> bool:
    import fnmatch

    if a == "?" or b == "?":
        return True
    if a[0] == "lit" and b[0] == "lit":
        return a[1] == b[1]
    if a[0] == "lit":
        return fnmatch.fnmatchcase(a[1], b[1])
    if b[0] == "lit":
        return fnmatch.fnmatchcase(b[1], a[1])
    return any(fnmatch.fnmatchcase(ch, a[1]) and fnmatch.fnmatchcase(ch, b[1]) for ch in _ALPHABET)


def _overlap(p: tuple, q: tuple, star, compat) -> bool:
    @functools.lru_cache(maxsize=None)
    def go(i: int, j: int) -> bool:
        if i == len(p) and j == len(q):
            return True
        if i < len(p) and p[i] == star:
            if go(i + 1, j) or (j < len(q) and go(i, j + 1)):
                return True
            return False
        if j < len(q) and q[j] == star:
            return go(i, j + 1) or (i < len(p) and go(i + 1, j))
        if i < len(p) and j < len(q) and compat(p[i], q[j]):
            return go(i + 1, j + 1)
        return False

    return go(0, 0)


def _segments(glob: str) -> tuple:
    segs = [s for s in glob.strip("/").split("/") if s not in ("", ".")]
    out = []
    for s in segs:
        if s == "**":
            if not out or out[-1] != "**":
                out.append("**")
        else:
            out.append(_tokens(s))
    return tuple(out)


def _seg_compat(a, b) -> bool:
    return _overlap(a, b, "*", _char_compat)


def globs_overlap(a: str, b: str) -> bool:
    """True when some path matches both globs (symmetric)."""
    return _overlap(_segments(a), _segments(b), "**", _seg_compat)


def glob_matches(glob: str, path: str) -> bool:
    """True when the concrete ``path`` matches ``glob``."""
    return globs_overlap(glob, _escape(path))


def _escape(path: str) -> str:
    import re

    return re.sub(r"([*?\[])", r"[\1]", path)
