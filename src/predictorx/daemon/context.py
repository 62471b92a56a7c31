"""What the agent sees about its project (R-CTX-1 … R-CTX-5, R-LD-6).

Three things, in the order the daemon uses them:

1. `write_resources_json` writes `.predictorx/project/resources.json` into the working directory,
   never over a file of the person's (ours carry ``"generated_by": "predictorx"``).
2. `render_context_block` turns a `TaskContext` into the markdown of ``## Project Context`` and
   ``## Repositories``; every resource is put in words by its type's `describe`.
3. `insert_block` / `remove_block` put that markdown between markers at the end of the
   provider's instruction file (CLAUDE.md, AGENTS.md, GEMINI.md) and take it out again so that the
   file is byte-for-byte what it was — also if the person or the agent edited the rest meanwhile.

`prepare_context` does all three best effort: any failure is logged, whatever was already written
is undone, and the task runs without project context (R-CTX-5).
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Mapping

from predictorx import resources as resource_types

from .repocache import normalize_url

log = logging.getLogger(__name__)

RESOURCES_JSON = Path(".predictorx") / "project" / "resources.json"
GENERATED_BY = "predictorx"
CHECKOUT_HINT = "`predictorx repo checkout <url> [--ref R]`"
MAX_DESCRIPTION = 2000

_INSTRUCTION_FILES = {"claude": "CLAUDE.md", "gemini": "GEMINI.md", "qwen": "QWEN.md"}


def instruction_file_for(provider: str) -> str:
    """CLAUDE.md for Claude Code, GEMINI.md for Gemini CLI, QWEN.md for Qwen Code, AGENTS.md for
    Codex and the rest."""
    return _INSTRUCTION_FILES.get(provider.lower(), "AGENTS.md")


# -- the data -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Resource:
    id: str
    resource_type: str
    resource_ref: Mapping[str, Any]
    label: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "resource_type": self.resource_type,
                "resource_ref": dict(self.resource_ref), "label": self.label}


@dataclass(frozen=True)
class WorkspaceRepo:
    url: str
    description: str | None = None


@dataclass(frozen=True)
class Repository:
    """One entry of ``## Repositories``: from a project resource or, failing those, the workspace."""

    url: str
    source: str  # "project" | "workspace"
    label: str | None = None
    ref: str | None = None
    description: str | None = None


@dataclass(frozen=True)
class TaskContext:
    """What a claim tells the daemon about the task's project (only this daemon's rows, R-RES-8)."""

    project_id: str | None = None
    project_title: str | None = None
    project_description: str | None = None
    resources: tuple[Resource, ...] = ()
    workspace_repos: tuple[WorkspaceRepo, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, daemon_id: str | None = None) -> TaskContext:
        """Build from a claim/API payload; workspace repos may be URLs or {url, description}.

        With `daemon_id`, rows that belong to another machine are dropped even if the server sent
        them (R-RES-8): no other machine's path ever reaches the agent.
        """
        resources = tuple(
            Resource(id=str(r["id"]), resource_type=r["resource_type"],
                     resource_ref=dict(r.get("resource_ref") or {}), label=r.get("label"))
            for r in data.get("resources") or ()
        )
        if daemon_id is not None:
            resources = tuple(r for r in resources if _visible_to(r, daemon_id))
        repos = tuple(
            WorkspaceRepo(url=r) if isinstance(r, str) else WorkspaceRepo(url=r["url"], description=r.get("description"))
            for r in data.get("workspace_repos") or ()
        )
        return cls(project_id=data.get("project_id"), project_title=data.get("project_title"),
                   project_description=data.get("project_description"), resources=resources,
                   workspace_repos=repos)

    @property
    def has_project(self) -> bool:
        return bool(self.project_id or self.project_title)

    def project_repositories(self) -> list[Repository]:
        """Repositories the project's resources provide (deduplicated, in resource order)."""
        seen: set[str] = set()
        out = []
        for res in self.resources:
            url = _repository_url(res)
            if not url or _key(url) in seen:
                continue
            seen.add(_key(url))
            out.append(Repository(url=url, source="project", label=res.label, ref=res.resource_ref.get("ref")))
        return out

    def repositories(self) -> list[Repository]:
        """R-CTX-3: the project's repositories if it has any, otherwise the workspace's."""
        project = self.project_repositories()
        if project:
            return project
        seen: set[str] = set()
        out = []
        for repo in self.workspace_repos:
            if _key(repo.url) not in seen:
                seen.add(_key(repo.url))
                out.append(Repository(url=repo.url, source="workspace", description=repo.description))
        return out


def _key(url: str) -> str:
    try:
        return normalize_url(url)
    except ValueError:
        return url


def _handler(resource_type: str) -> resource_types.ResourceType | None:
    try:
        return resource_types.get(resource_type)
    except resource_types.ResourceError:
        return None  # a type this daemon does not know yet (the server may be newer)


def _visible_to(res: Resource, daemon_id: str) -> bool:
    handler = _handler(res.resource_type)
    try:
        return handler.visible_to_daemon(dict(res.resource_ref), daemon_id) if handler else True
    except (KeyError, TypeError, ValueError):
        return False


def _repository_url(res: Resource) -> str | None:
    handler = _handler(res.resource_type)
    try:
        return handler.repository_url(dict(res.resource_ref)) if handler else None
    except (KeyError, TypeError, ValueError):
        return None


# -- resources.json -------------------------------------------------------------------------------

@dataclass
class ContextFiles:
    """What `write_resources_json` created, so that exactly that can be removed afterwards."""

    files: list[Path] = field(default_factory=list)
    dirs: list[Path] = field(default_factory=list)  # outermost first
    skipped: str | None = None  # why nothing was written

    def remove(self) -> None:
        """Remove our files (if still ours) and the directories we made (only if empty)."""
        for path in self.files:
            if _is_ours(path):
                path.unlink(missing_ok=True)
        for directory in reversed(self.dirs):
            try:
                directory.rmdir()
            except OSError:
                pass  # not empty (someone put something there) or already gone: leave it
        self.files, self.dirs = [], []


def _is_ours(path: Path) -> bool:
    try:
        if path.is_symlink():
            return False
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("generated_by") == GENERATED_BY


def resources_document(ctx: TaskContext, task_id: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "project_id": ctx.project_id,
        "project_title": ctx.project_title,
        "project_description": ctx.project_description,
        "resources": [r.to_json() for r in ctx.resources],
        "generated_by": GENERATED_BY,
    }
    if task_id is not None:
        doc["task_id"] = task_id
    return doc


def write_resources_json(workdir: Path, ctx: TaskContext, *, task_id: str | None = None) -> ContextFiles:
    """Write `.predictorx/project/resources.json` under `workdir` (R-CTX-1).

    A file of the person's at that path (one without our marker) is left alone: the result's
    `skipped` says why and nothing is written. A stale file of ours (a crashed run) is replaced.
    Symlinks on the way are not followed, so nothing is ever written outside `workdir`.
    """
    workdir = Path(workdir)
    result = ContextFiles()
    target = workdir / RESOURCES_JSON
    for part in (workdir / RESOURCES_JSON.parts[0], workdir / Path(*RESOURCES_JSON.parts[:2]), target):
        if part.is_symlink():
            result.skipped = f"{part} is a symlink; not writing through it"
        elif part != target and part.exists() and not part.is_dir():
            result.skipped = f"{part} exists and is not a directory"
        if result.skipped:
            log.info("not writing %s: %s", RESOURCES_JSON, result.skipped)
            return result
    if target.exists() and not _is_ours(target):
        result.skipped = f"{target} belongs to the user (no \"generated_by\": \"{GENERATED_BY}\"); left as is"
        log.info("not writing %s: %s", RESOURCES_JSON, result.skipped)
        return result

    try:
        for directory in (workdir / RESOURCES_JSON.parts[0], target.parent):
            if not directory.exists():
                directory.mkdir()
                result.dirs.append(directory)
        _write_atomic(target, (json.dumps(resources_document(ctx, task_id), indent=2, ensure_ascii=False) + "\n").encode())
        result.files.append(target)
    except BaseException:
        result.remove()
        raise
    return result


def planned_resources_json(workdir: Path) -> ContextFiles:
    """What `write_resources_json` would make in `workdir`: the file and the missing directories."""
    dirs = [d for d in (workdir / RESOURCES_JSON.parts[0], workdir / Path(*RESOURCES_JSON.parts[:2]))
            if not d.exists()]
    return ContextFiles(files=[workdir / RESOURCES_JSON], dirs=dirs)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.predictorx-{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        if path.exists():
            shutil.copymode(path, tmp)  # keep the person's permissions on their file
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# -- rendering ------------------------------------------------------------------------------------

def describe_resource(res: Resource) -> str:
    """One line in words for `res`, by its type's handler; a generic sentence for unknown types."""
    handler = _handler(res.resource_type)
    text = None
    if handler is not None:
        try:
            text = handler.describe(dict(res.resource_ref), res.label)
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("resource %s (%s) could not be described: %s", res.id, res.resource_type, exc)
    if text is None:
        details = ", ".join(f"{k} {v}" for k, v in res.resource_ref.items()
                            if isinstance(v, (str, int, float)) and v != "")
        head = res.label or res.resource_type.replace("_", " ")
        text = f"{head} (a {res.resource_type} resource)" + (f" — {details}" if details else "")
    return " ".join(text.split())  # one line, whatever the payload held


def render_context_block(ctx: TaskContext, *, checkouts: Mapping[str, str | Path] | None = None,
                         resources_json_written: bool = True) -> str:
    """Markdown for the instruction file: ``## Project Context`` and ``## Repositories``.

    The same text serves every provider. `checkouts` maps repository URLs to where they are
    already checked out (relative to the working directory) so the agent is told. Returns "" when
    there is nothing to say (no project, no repositories).
    """
    sections: list[str] = []
    if ctx.has_project:
        lines = ["## Project Context", ""]
        title = ctx.project_title or ctx.project_id
        lines += [f"This issue belongs to the project **{title}**.", ""]
        description = (ctx.project_description or "").strip()
        if description:
            if len(description) > MAX_DESCRIPTION:
                description = description[:MAX_DESCRIPTION].rstrip() + " … (full text in resources.json)"
            # Quoted, so headings in a description cannot break this block's structure.
            lines += [("> " + line).rstrip() for line in description.splitlines()] + [""]
        if ctx.resources:
            where = f" (also written to `{RESOURCES_JSON.as_posix()}`)" if resources_json_written else ""
            lines += [f"Project resources{where}:", ""]
            lines += [f"- {describe_resource(r)}" for r in ctx.resources]
            lines += ["", "Resources are pointers — open them only when they are relevant to the task."]
        else:
            lines += ["The project has no resources."]
        sections.append("\n".join(lines))

    repos = ctx.repositories()
    if repos:
        done = {_key(url): Path(path).as_posix() for url, path in (checkouts or {}).items()}
        lines = ["## Repositories", ""]
        if repos[0].source == "workspace" and ctx.has_project:
            lines += ["The project names no repository; these are the workspace's:", ""]
        for repo in repos:
            line = f"- {repo.url}"
            if repo.label:
                line += f" ({repo.label})"
            if repo.ref:
                line += f" — ref `{repo.ref}`"
            if repo.description:
                line += f" — {' '.join(repo.description.split())}"
            if _key(repo.url) in done:
                line += f" — already checked out at `{done[_key(repo.url)]}`"
            lines.append(line)
        lines += ["", f"To check a repository out into your working directory: {CHECKOUT_HINT}."]
        sections.append("\n".join(lines))
    return "\n\n".join(sections)


# -- the marker block in the instruction file -----------------------------------------------------

BEGIN = b"<!-- predictorx:begin"
END = b"<!-- predictorx:end -->"
_TASK_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class BlockHandle:
    """Everything `remove_block` needs to take out exactly what `insert_block` put in."""

    path: Path        # the file written (a symlink's target)
    begin: bytes      # our begin marker line, newline included
    inserted: bytes   # separator + block, byte for byte as written
    separator: bytes  # the newline put between the person's content and the block ("" if none)
    created: bool     # the file did not exist (or held only a stale block of ours)


def insert_block(path: Path, block: str, *, task_id: str | None = None) -> BlockHandle:
    """Append `block` between predictorx markers to `path` (created if missing).

    The block uses the file's line endings (CRLF files stay CRLF). A block left by a crashed run
    is removed first, never duplicated. Symlinks are followed (CLAUDE.md → AGENTS.md is common);
    callers that must stay inside a folder check the target first (`prepare_context` does).
    """
    handle, data = plan_block(path, block, task_id=task_id)
    _write_atomic(handle.path, data)
    return handle


def plan_block(path: Path, block: str, *, task_id: str | None = None) -> tuple[BlockHandle, bytes]:
    """What `insert_block` would write, without writing: the handle and the file's new bytes
    (so the handle can be kept on disk before the person's file changes)."""
    target = Path(os.path.realpath(path))
    try:
        data = target.read_bytes()
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
    when nothing else is left in it.
    """
    try:
        data = handle.path.read_bytes()
    except FileNotFoundError:
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
    if handle.created and not rest:
        handle.path.unlink(missing_ok=True)
    else:
        _write_atomic(handle.path, rest)
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
        stop = _end_of_end_marker(data, start) if line else -1
        if stop < 0:
            pos = start + 1
            continue
        found = True
        sep = b"\r\n" if line.group(0).rstrip(b"\n").endswith(b"\r") else b"\n"
        if start > 0 and data[:start].endswith(sep):
            start -= len(sep)
        data = data[:start] + data[stop:]
        pos = start
    return data, found


# -- best effort, all together --------------------------------------------------------------------

@dataclass
class PreparedContext:
    """The outcome of `prepare_context`; `cleanup()` undoes it (idempotent, never raises)."""

    block: str = ""                      # the markdown the agent was given ("" if none)
    handle: BlockHandle | None = None
    files: ContextFiles | None = None
    error: str | None = None             # why the task runs without project context
    record: Path | None = None           # where the undo record is kept (contextrecord.py)

    def cleanup(self) -> None:
        if self.handle is not None:
            try:
                remove_block(self.handle)
            except OSError as exc:
                log.warning("could not remove the project block from %s: %s", self.handle.path, exc)
            self.handle = None
        if self.files is not None:
            try:
                self.files.remove()
            except OSError as exc:
                log.warning("could not remove %s: %s", RESOURCES_JSON, exc)
            self.files = None
        if self.record is not None:
            self.record.unlink(missing_ok=True)
            self.record = None


ContextSource = TaskContext | Callable[[], "TaskContext | Awaitable[TaskContext]"]


async def prepare_context(workdir: Path, provider: str, task_id: str, load: ContextSource, *,
                          checkouts: Mapping[str, str | Path] | None = None,
                          record: Path | None = None) -> PreparedContext:
    """Load the project context and give it to the agent, best effort (R-CTX-5).

    `load` is a TaskContext or a (sync or async) callable fetching it. On any failure — fetch,
    render or write — the failure is logged, anything written is removed, and an empty
    `PreparedContext` with `error` set is returned: the task runs without the section and file.

    With `record`, what is about to be written is kept there first (contextrecord.py), so that a
    daemon killed mid-task still has its next start take it out of the person's folder.
    """
    from . import contextrecord

    prepared = PreparedContext(record=record)
    try:
        ctx = load() if callable(load) else load
        if inspect.isawaitable(ctx):
            ctx = await ctx
        workdir = Path(workdir)
        if record is not None and ctx.has_project:
            contextrecord.save(record, task_id, workdir, resources=planned_resources_json(workdir))
        files = write_resources_json(workdir, ctx, task_id=task_id) if ctx.has_project else None
        prepared.files = files
        block = render_context_block(ctx, checkouts=checkouts,
                                     resources_json_written=bool(files and files.files))
        if block:
            path = workdir / instruction_file_for(provider)
            real, root = Path(os.path.realpath(path)), Path(os.path.realpath(workdir))
            if root != real and root not in real.parents:
                raise OSError(f"{path.name} is a symlink to {real}, outside the working directory")
            handle, data = plan_block(path, block, task_id=task_id)
            if record is not None:  # kept before the person's file changes (finding 13)
                contextrecord.save(record, task_id, workdir, resources=files if files and files.files else None,
                                   block=handle)
            _write_atomic(handle.path, data)
            prepared.handle = handle
            prepared.block = block
        return prepared
    except Exception as exc:  # best effort by requirement: the task must still run
        log.warning("task %s runs without project context: %s", task_id, exc, exc_info=True)
        prepared.cleanup()
        return PreparedContext(error=f"{type(exc).__name__}: {exc}")


def task_repo_urls(ctx: TaskContext) -> list[str]:
    """The project's repository URLs, to add to the task's own allowed list (R-CTX-4)."""
    return [r.url for r in ctx.project_repositories()]


def allowed_repo_urls(ctx: TaskContext, extra: Iterable[str] = ()) -> list[str]:
    """Workspace repositories plus the task's project repositories (kept apart by the caller)."""
    urls = [r.url for r in ctx.workspace_repos] + task_repo_urls(ctx) + list(extra)
    return list(dict.fromkeys(urls))
