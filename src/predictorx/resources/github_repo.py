"""`github_repo`: a git repository by URL (R-RES-2). Any forge git can reach, not only GitHub."""

from __future__ import annotations

import html
from typing import Any

from . import validation as v
from .registry import Field, ResourceType, WebForm, register


@register
class GitHubRepo(ResourceType):
    name = "github_repo"
    title = "Git repository"
    fields = {"url", "ref", "default_branch_hint"}
    form_fields = (Field("url", "any git URL", label="URL", required=True, mono=True,
                         placeholder="https://github.com/org/repo or git@host:org/repo.git"),
                   Field("ref", "branch/tag/commit", label="Ref", placeholder="main, v1.2, a1b2c3"),
                   Field("default_branch_hint", "the repository's default branch, a hint", placeholder="main"))
    web_form = WebForm("repo", "+ Git repository", "Add repository")

    def normalize(self, ref: dict[str, Any]) -> dict[str, Any]:
        v.allowed_keys(ref, self.fields, self.name)
        out: dict[str, Any] = {"url": v.git_url(v.string(ref, "url", required=True))}
        if (r := v.string(ref, "ref", max_len=255)) is not None:
            out["ref"] = v.git_ref(r)
        if (hint := v.string(ref, "default_branch_hint", max_len=255)) is not None:
            out["default_branch_hint"] = v.git_ref(hint, "default_branch_hint")
        return out

    def repository_url(self, ref: dict[str, Any]) -> str | None:
        return ref["url"]  # so the agent runs in a checkout of it (the default `placement`)

    def describe(self, ref: dict[str, Any], label: str | None) -> str:
        kind = "GitHub repository" if "github.com" in ref["url"] else "Git repository"
        text = f"{kind} {ref['url']}"
        if label:
            text = f"{label}: {text}"
        notes = []
        if ref.get("ref"):
            notes.append(f"checked out at `{ref['ref']}` by default")
        if ref.get("default_branch_hint"):
            notes.append(f"its default branch is probably `{ref['default_branch_hint']}` (a hint, not a switch)")
        return text + (" — " + "; ".join(notes) if notes else "")

    def render_html(self, ref: dict[str, Any], label: str | None) -> str:
        url = html.escape(ref["url"])
        extra = f" <code>{html.escape(ref['ref'])}</code>" if ref.get("ref") else ""
        name = f"{html.escape(label)} · " if label else ""
        return f'{name}<span class="res-url">{url}</span>{extra}'
