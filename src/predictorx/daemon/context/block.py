"""The marker block at the end of the provider's instruction file (CLAUDE.md, AGENTS.md, GEMINI.md):
put in between markers and taken out again so that the file is byte for byte what it was — also
if the person or the agent edited the rest meanwhile (R-CTX-2, R-LD-6)."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from .files import NotRegularFile, read_regular, unlink_regular, write_atomic
from .types import BlockHandle

log = logging.getLogger("predictorx.daemon.context")

_INSTRUCTION_FILES = {"claude": "CLAUDE.md", "gemini": "GEMINI.md", "qwen": "QWEN.md"}


def instruction_file_for(provider: str) -> str:
    """CLAUDE.md for Claude Code, GEMINI.md for Gemini CLI, QWEN.md for Qwen Code, AGENTS.md for
    Codex and the rest."""
    return _INSTRUCTION_FILES.get(provider.lower(), "AGENTS.md")


BEGIN = b"<!-- predictorx:begin"
END = b"<!-- predictorx:end -->"
_TASK_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def insert_block(path: Path, block: str, *, task_id: str | None = None) -> BlockHandle:
    """Append `block` between predictorx markers to `path` (created if missing).

    The block uses the file's line endings (CRLF files stay CRLF). A block left by a crashed run
    is removed first, never duplicated. Symlinks are followed (CLAUDE.md → AGENTS.md is common);
    callers that must stay inside a folder check the target first (`prepare_context` does).
    """
    handle, data = plan_block(path, block, task_id=task_id)
    write_atomic(handle.path, data)
    return handle


def plan_block(path: Path, block: str, *, task_id: str | None = None) -> tuple[BlockHandle, bytes]:
    """What `insert_block` would write, without writing: the handle and the file's new bytes
    (so the handle can be kept on disk before the person's file changes)."""
    target = Path(os.path.realpath(path))
    try:
        data = read_regular(target)  # a FIFO, a directory or a huge file: no block (never a hang)
        created = False
    except FileNotFoundError:
        data, created = b"", True
    data, had_stale = _strip_blocks(data)
    if had_stale and not data:
        created = True  # only a crashed run's block was there: the file was ours
    nl = b"\r\n" if _uses_crlf(data) else b"\n"

    tag = f" task={_TASK_SAFE.sub('-', task_id)}" if task_id else ""
    begin = BEGIN + f"{tag} (added by Predictor X for this task; removed when it ends) -->".encode() + nl
    body = block.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    # Marker text inside the content (a pasted description) must not be taken for our markers.
    body = body.replace("predictorx:begin", "predictorx begin").replace("predictorx:end", "predictorx end")
    body_bytes = body.encode("utf-8").replace(b"\n", nl) + nl if body else b""
    separator = nl if data else b""
    inserted = separator + begin + body_bytes + END + nl
    return (BlockHandle(path=target, begin=begin, inserted=inserted, separator=separator, created=created),
            data + inserted)


def remove_block(handle: BlockHandle) -> bool:
    """Take our block out again; the rest of the file is left byte for byte as it is now.

    Returns False (and changes nothing) if the block is gone or its end marker was deleted — then
    its extent is unknown and guessing could cut the person's text. A file we created is deleted
    when nothing else is left in it. The file must still be a regular file reached through real
    directories (the agent may have put a symlink, a FIFO or a huge file there): otherwise it is
    left as it is and the refusal logged.
    """
    try:
        data = read_regular(handle.path)
    except FileNotFoundError:
        return False
    except NotRegularFile as exc:
        log.warning("did not remove the predictorx block: %s", exc)
        return False
    at = data.rfind(handle.inserted)
    if at >= 0:
        rest = data[:at] + data[at + len(handle.inserted):]
    else:  # someone edited inside our block: cut from our begin marker to the next end marker
        start = _line_start_find(data, handle.begin)
        if start < 0:
            return False
        stop = _end_of_end_marker(data, start)
        if stop < 0:
            log.warning("%s: the end marker of the predictorx block was removed; leaving the block", handle.path)
            return False
        if handle.separator and data[:start].endswith(handle.separator):
            start -= len(handle.separator)
        rest = data[:start] + data[stop:]
    try:
        if handle.created and not rest:
            unlink_regular(handle.path)
        else:
            write_atomic(handle.path, rest)
    except NotRegularFile as exc:
        log.warning("did not remove the predictorx block: %s", exc)
        return False
    return True


def _uses_crlf(data: bytes) -> bool:
    first = data.find(b"\n")
    return first > 0 and data[first - 1:first] == b"\r"


def _line_start_find(data: bytes, needle: bytes, start: int = 0) -> int:
    while (at := data.find(needle, start)) >= 0:
        if at == 0 or data[at - 1:at] == b"\n":
            return at
        start = at + 1
    return -1


def _end_of_end_marker(data: bytes, start: int) -> int:
    at = _line_start_find(data, END, start)
    if at < 0:
        return -1
    stop = at + len(END)
    if data[stop:stop + 2] == b"\r\n":
        return stop + 2
    if data[stop:stop + 1] == b"\n":
        return stop + 1
    return stop


_OUR_BEGIN_LINE = re.compile(rb"<!-- predictorx:begin( task=[A-Za-z0-9._-]+)? \(added by Predictor X[^\n]*-->\r?(\n|$)")


def _strip_blocks(data: bytes) -> tuple[bytes, bool]:
    """Remove blocks left by crashed runs, with the one newline `insert_block` put before each.

    Only a complete block (our begin line … end marker) counts: a begin line without its end is
    left alone, like `remove_block` does, because its extent is unknown.
    """
    found = False
    pos = 0
    while (start := _line_start_find(data, BEGIN, pos)) >= 0:
        line = _OUR_BEGIN_LINE.match(data, start)
        if line is None or (stop := _end_of_end_marker(data, start)) < 0:
            pos = start + 1
            continue
        found = True
        sep = b"\r\n" if line.group(0).rstrip(b"\n").endswith(b"\r") else b"\n"
        if start > 0 and data[:start].endswith(sep):
            start -= len(sep)
        data = data[:start] + data[stop:]
        pos = start
    return data, found
