"""`local_directory`: a folder on one daemon's machine (R-RES-3, R-RES-4, R-RES-9).

The payload's path is only checked for shape here; the path rules of R-LD-1 live beside this type
(`local_directory_paths`) and are applied by the daemon, because only the owning machine can see
the folder.
"""

from __future__ import annotations

import html
import ntpath
import posixpath
from typing import Any

from . import validation as v
from .registry import ResourceError, ResourceType, register

EXECUTION_MODES = ("in_place", "worktree")
WORKTREE_CAPABILITY = "local-worktree-v1"


@register
class LocalDirectory(ResourceType):
    name = "local_directory"
    title = "Local folder"
    fields = {"local_path", "daemon_id", "execution_mode"}

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

    def owner_daemon_id(self, ref: dict[str, Any]) -> str | None:
        return ref["daemon_id"]

    def daemon_check(self, ref: dict[str, Any]) -> dict[str, Any] | None:
        return {"op": "check_path", "path": ref["local_path"]}  # R-LD-1, by the machine that has it

    def required_capabilities(self, ref: dict[str, Any]) -> set[str]:
        return {WORKTREE_CAPABILITY} if ref.get("execution_mode") == "worktree" else set()

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
