"""The agent's work on the task page (issue 13 §1): a unified diff as files, hunks and rows for a
unified or side-by-side view, each line highlighted by Pygments, and the git commands that merge
or discard the branch where it lives.

The diff comes from the task's review (daemon/review.py sends it with the task's end); nothing
here runs git. Highlighting is per line (a diff shows pieces of files) and skipped for huge files.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.util import ClassNotFound

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$")
_FORMATTER = HtmlFormatter(nowrap=True)
#: Files with more diff lines than this are shown without highlighting (it costs per line).
HIGHLIGHT_MAX_LINES = 3000


@dataclass
class Row:
    kind: str                 # ctx | add | del | note
    old: int | None
    new: int | None
    html: Markup


@dataclass
class Hunk:
    header: str
    rows: list[Row] = field(default_factory=list)

    def pairs(self) -> list[tuple[Row | None, Row | None]]:
        """Side by side: context on both sides, a run of deletions beside the additions after it."""
        out: list[tuple[Row | None, Row | None]] = []
        dels: list[Row] = []
        adds: list[Row] = []

        def flush() -> None:
            for i in range(max(len(dels), len(adds))):
                out.append((dels[i] if i < len(dels) else None, adds[i] if i < len(adds) else None))
            dels.clear()
            adds.clear()
        for row in self.rows:
            if row.kind == "del":
                if adds:
                    flush()
                dels.append(row)
            elif row.kind == "add":
                adds.append(row)
            elif row.kind == "note":
                continue  # "\ No newline at end of file" sits between a change's halves: keep them side by side
            else:
                flush()
                out.append((row, row) if row.kind == "ctx" else (row, None))
        flush()
        return out


@dataclass
class FileDiff:
    path: str
    old_path: str | None = None
    status: str = "modified"  # added | deleted | renamed | modified
    binary: bool = False
    added: int = 0
    removed: int = 0
    hunks: list[Hunk] = field(default_factory=list)
    anchor: str = ""


def _lexer(path: str, lines: int):
    if lines > HIGHLIGHT_MAX_LINES:
        return None
    try:
        return get_lexer_for_filename(path, stripnl=False, stripall=False, ensurenl=False)
    except ClassNotFound:
        return None


def _line_html(lexer, text: str) -> Markup:
    if lexer is None or isinstance(lexer, TextLexer) or not text:
        return Markup(escape(text))
    return Markup(highlight(text, lexer, _FORMATTER).rstrip("\n"))


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(text: str) -> str:
    """A path git quoted C-style ("\\303\\251", "\\t"): back to its UTF-8 bytes, then text."""
    out = bytearray()
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in "01234567" and i + 3 < len(text) + 1 and all(c in "01234567" for c in text[i + 1:i + 4]):
                out.append(int(text[i + 1:i + 4], 8) & 0xFF)
                i += 4
                continue
            out.append(_ESCAPES.get(nxt, ord(nxt) if ord(nxt) < 128 else 63))
            i += 2
            continue
        out += ch.encode("utf-8")
        i += 1
    return out.decode("utf-8", "replace")


def _path_of(line: str, prefix: str) -> str | None:
    rest = line[len(prefix):].strip()
    if rest == "/dev/null":
        return None
    if rest.startswith('"') and rest.endswith('"'):
        rest = _unquote(rest[1:-1])
    return rest[2:] if rest[:2] in ("a/", "b/") else rest


def parse(patch: str) -> list[FileDiff]:
    """A `git diff` patch as files → hunks → rows."""
    files: list[FileDiff] = []
    raw_lines: list[list[str]] = []
    for line in patch.split("\n"):
        if line.startswith("diff --git "):
            raw_lines.append([line])
        elif raw_lines:
            raw_lines[-1].append(line)
    for n, chunk in enumerate(raw_lines):
        f = FileDiff(path="", anchor=f"file-{n + 1}")
        head = chunk[0][len("diff --git "):]
        m = re.match(r'^(?:"?a/(.+?)"?) (?:"?b/(.+?)"?)$', head)
        if m:
            f.old_path, f.path = m.group(1), m.group(2)
        body_at = len(chunk)
        for i, line in enumerate(chunk[1:], start=1):
            if line.startswith("@@"):
                body_at = i
                break
            if line.startswith("new file mode"):
                f.status = "added"
            elif line.startswith("deleted file mode"):
                f.status = "deleted"
            elif line.startswith("rename from "):
                f.status, f.old_path = "renamed", line[len("rename from "):]
            elif line.startswith("rename to "):
                f.path = line[len("rename to "):]
            elif line.startswith("Binary files ") or line.startswith("GIT binary patch"):
                f.binary = True
            elif line.startswith("--- "):
                old = _path_of(line, "--- ")
                if old:
                    f.old_path = old
            elif line.startswith("+++ "):
                new = _path_of(line, "+++ ")
                if new:
                    f.path = new
                elif f.old_path:
                    f.path = f.old_path
        if f.status != "renamed" and f.old_path == f.path:
            f.old_path = None
        lexer = _lexer(f.path, len(chunk) - body_at)
        hunk: Hunk | None = None
        old_no = new_no = 0
        for line in chunk[body_at:]:
            hm = _HUNK.match(line)
            if hm:
                hunk = Hunk(header=line)
                f.hunks.append(hunk)
                old_no, new_no = int(hm.group(1)), int(hm.group(2))
                continue
            if hunk is None or line == "":
                continue
            sign, text = line[0], line[1:]
            if sign == "+":
                hunk.rows.append(Row("add", None, new_no, _line_html(lexer, text)))
                new_no += 1
                f.added += 1
            elif sign == "-":
                hunk.rows.append(Row("del", old_no, None, _line_html(lexer, text)))
                old_no += 1
                f.removed += 1
            elif sign == " ":
                hunk.rows.append(Row("ctx", old_no, new_no, _line_html(lexer, text)))
                old_no += 1
                new_no += 1
            elif sign == "\\":
                hunk.rows.append(Row("note", None, None, Markup(escape(line))))
        files.append(f)
    return files


def commands(review: dict[str, Any]) -> list[dict[str, str]]:
    """The exact git commands for the branch where it lives, to run on the daemon's machine."""
    branch = review.get("branch")
    repo = review.get("repo_path")
    if not branch or not repo:
        return []
    q, b = shlex.quote(repo), shlex.quote(branch)
    base, head = review.get("base") or "", review.get("head") or ""
    if review.get("mode") == "worktree":
        if base and head and base != head:
            # The baseline commit holds the person's own uncommitted changes: apply only the agent's.
            merge = f"git -C {q} diff --binary {base[:12]} {b} | git -C {q} apply --3way"
            merge_what = "Apply the agent's changes to your working copy (your uncommitted changes were its starting point)"
        else:
            merge = f"git -C {q} merge --no-ff {b}"
            merge_what = "Merge the branch into what you have checked out"
        return [{"what": "See the commits", "cmd": f"git -C {q} log --oneline {base[:12]}..{b}" if base else f"git -C {q} log {b}"},
                {"what": merge_what, "cmd": merge},
                {"what": "Discard the work (deletes the branch)", "cmd": f"git -C {q} branch -D {b}"}]
    if review.get("mode") == "in_place":  # the commits are on the person's branch already (docs/forge-push.md)
        return [{"what": "See the commits", "cmd": f"git -C {q} log --oneline {base[:12]}..{b}" if base else f"git -C {q} log {b}"},
                {"what": "Drop the name (your branch keeps the commits)", "cmd": f"git -C {q} branch -D {b}"}]
    return [{"what": "Fetch the branch into your own clone of the repository",
             "cmd": f"git fetch {q} {b}:{b}"},
            {"what": "Or push it from the daemon's cache to the repository's remote",
             "cmd": f"git -C {q} push origin {b}"}]
