"""`local_directory`: a folder on one daemon's machine (R-RES-3, R-RES-4, R-RES-9).

The payload's path is only checked for shape here; the path rules of R-LD-1 live beside this type
(`local_directory_paths`) and are applied by the daemon, because only the owning machine can see
the folder: when a row is saved (`daemon_check`, answered on that machine) and before every task
(`check_folder`). On its daemon the agent runs in the person's folder as it is (`in_place`) or in
a git worktree made from it (`worktree`, capability `local-worktree-v1`): its `placement`. One
row per machine per project (the 409's sentence); the web's "Add local folder" picker makes rows
of this type (`folder_ref`).
"""

from __future__ import annotations

import html
import ntpath
import posixpath
from typing import Any

from . import validation as v
from .local_directory_paths import PathRuleError, check_local_directory
from .placement import IN_PLACE, WORKTREE, Placement
from .registry import Field, ResourceError, ResourceType, register

EXECUTION_MODES = (IN_PLACE, WORKTREE)
WORKTREE_CAPABILITY = "local-worktree-v1"


@register
class LocalDirectory(ResourceType):
    name = "local_directory"
    title = "Local folder"
    fields = {"local_path", "daemon_id", "execution_mode"}
    form_fields = (Field("local_path", "absolute path"),
                   Field("daemon_id", "the machine's daemon id"),
                   Field("execution_mode", "in_place or worktree", choices=EXECUTION_MODES, label="Mode"))
    daemon_capabilities = frozenset({WORKTREE_CAPABILITY})
    daemon_ops = frozenset({"check_path"})
    folder_picker = True

    def normalize(self, ref: dict[str, Any]) -> dict[str, Any]:
        v.allowed_keys(ref, self.fields, self.name)
        path = v.string(ref, "local_path", required=True)
        if not (posixpath.isabs(path) or (ntpath.isabs(path) and ntpath.splitdrive(path)[0])):
            raise ResourceError(f"local_path must be an absolute path, got {path!r}")
        daemon_id = v.uuid_str(v.string(ref, "daemon_id", required=True), "daemon_id")
        mode = v.string(ref, "execution_mode") or "in_place"
        if mode not in EXECUTION_MODES:
            raise ResourceError(f"execution_mode must be one of {', '.join(EXECUTION_MODES)}, got {mode!r}")
        if posixpath.isabs(path):
            path = posixpath.normpath(path)
            if path.startswith("//"):
                path = "/" + path.lstrip("/")
        return {"local_path": path, "daemon_id": daemon_id, "execution_mode": mode}

    def unique_key(self, ref: dict[str, Any]) -> str | None:
        return f"local_directory:{ref['daemon_id']}"

    def conflict_message(self, ref: dict[str, Any]) -> str:
        return (f"this project already has a local_directory for daemon {ref['daemon_id']}; "
                "a project can have one local folder per machine — update or remove the existing one")

    def owner_daemon_id(self, ref: dict[str, Any]) -> str | None:
        return ref["daemon_id"]

    def daemon_check(self, ref: dict[str, Any]) -> dict[str, Any] | None:
        return {"op": "check_path", "path": ref["local_path"]}  # R-LD-1, by the machine that has it

    def answer_daemon_check(self, request: dict[str, Any]) -> str | None:
        try:
            self.check_folder(str(request.get("path", "")))
        except PathRuleError as e:
            return str(e)
        return None

    def required_capabilities(self, ref: dict[str, Any]) -> set[str]:
        return {WORKTREE_CAPABILITY} if ref.get("execution_mode") == WORKTREE else set()

    def placement(self, ref: dict[str, Any], label: str | None, daemon_id: str | None) -> Placement | None:
        if ref.get("daemon_id") != daemon_id or not ref.get("local_path"):
            return None  # another machine's folder: not where this daemon's agent runs
        return Placement(ref.get("execution_mode") or IN_PLACE, local_path=ref["local_path"], label=label)

    def check_folder(self, path: str) -> Any:
        return check_local_directory(path)

    def folder_ref(self, path: str, daemon_id: str, mode: str | None) -> dict[str, Any]:
        return {"local_path": path, "daemon_id": daemon_id, "execution_mode": mode or IN_PLACE}

    def describe(self, ref: dict[str, Any], label: str | None) -> str:
        name = f"Local folder “{label}”" if label else "A local folder"
        if ref.get("execution_mode") == "worktree":
            how = ("you work in your own git worktree made from exactly what the person sees there; "
                   "your changes are delivered on your task's branch, never merged for you")
        else:
            how = ("you work directly in the person's folder, one task at a time; "
                   "do not switch branches, stash or reset their work")
        return f"{name} at {ref['local_path']} on this machine — {how}"

    def render_html(self, ref: dict[str, Any], label: str | None) -> str:
        name = html.escape(label or "Local folder")
        return (f'{name} · <span class="res-path">{html.escape(ref["local_path"])}</span> '
                f'<span class="res-mode">{html.escape(ref["execution_mode"])}</span>')
