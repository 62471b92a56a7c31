"""A `TaskContext` in words: the markdown of ``## Project Context`` and ``## Repositories`` (R-CTX-2,
R-CTX-3); every resource is put in words by its type's `describe`."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from .types import RESOURCES_JSON, Resource, TaskContext, handler_of, repo_key

log = logging.getLogger("predictorx.daemon.context")
CHECKOUT_HINT = "`predictorx repo checkout <url> [--ref R]`"
MAX_DESCRIPTION = 2000


def describe_resource(res: Resource) -> str:
    """One line in words for `res`, by its type's handler; a generic sentence for unknown types."""
    handler = handler_of(res.resource_type)
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
        done = {repo_key(url): Path(path).as_posix() for url, path in (checkouts or {}).items()}
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
            if repo_key(repo.url) in done:
                line += f" — already checked out at `{done[repo_key(repo.url)]}`"
            lines.append(line)
        lines += ["", f"To check a repository out into your working directory: {CHECKOUT_HINT}."]
        sections.append("\n".join(lines))
    return "\n\n".join(sections)
