"""Markdown as safe HTML, at a bounded cost (issue 13 §3; issue 29 §5).

markdown-it-py renders with raw HTML off and nh3 (ammonia) cleans the result, so no text — a
person's, an agent's, a prompt-injected agent's — puts script, styles or event handlers on a page.

Rendering is the expensive part of a page (a 100 KB Markdown table took 0.4 s and became 250 KB of
HTML), so what people write is rendered once, when it is written, and stored (`comment_html`); a
text too long to render within the bounds below is shown as the start of its plain text with a
link to the raw text instead. Pages then only paste stored HTML.
"""

from __future__ import annotations

import re

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup, escape

_MD = MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True}).enable(["table", "strikethrough"])

#: A stored comment's Markdown is rendered only up to this many characters (about 0.1 s for the
#: worst case, a table); longer ones are stored as their plain-text start and a "show raw" link.
RENDER_MAX_CHARS = 32_000
#: Rendered HTML above this is not stored either (nested lists and tables grow 3–4×).
HTML_MAX_BYTES = 96_000
#: How much of a too-long text the page shows, as plain text.
PREVIEW_CHARS = 3_000


def render(value: str) -> str:
    """Markdown → sanitised HTML, unbounded: callers bound `value`."""
    cleaned = nh3.clean(_MD.render(value), link_rel="noopener noreferrer nofollow", url_schemes={"http", "https", "mailto"})
    return with_task_boxes(cleaned)


# A list item whose text starts "[ ] " or "[x] " (GitHub's task list), in cleaned HTML: "<li>" or,
# in a loose list, "<li>\n<p>". Only a bare <li> matches, and nh3 has already removed any
# attribute or tag a text could smuggle in, so the boxes added here are the only inputs.
_TASK_ITEM = re.compile(r"<li>(\s*<p>)?\[([ xX])\] ")
_BOX = {" ": '<input type="checkbox" disabled aria-label="not done"> ',
        "x": '<input type="checkbox" disabled checked aria-label="done"> '}


def with_task_boxes(cleaned: str) -> str:
    """Task-list items as read-only checkboxes."""
    if "[" not in cleaned:
        return cleaned
    return _TASK_ITEM.sub(lambda m: '<li class="task-item">' + (m.group(1) or "") + _BOX[m.group(2).lower()], cleaned)


_PREVIEW_OPEN = '<pre class="mono preview">'


def preview(value: str) -> str:
    """The first PREVIEW_CHARS of a text, as escaped plain text."""
    cut = value[:PREVIEW_CHARS]
    more = "…" if len(value) > PREVIEW_CHARS else ""
    return f"{_PREVIEW_OPEN}{escape(cut)}{more}</pre>"


def is_preview(html: str) -> bool:
    """Whether stored HTML is a too-long text's plain start (rendered Markdown never starts so:
    raw HTML is off, so no Markdown makes a <pre> with a class)."""
    return html.startswith(_PREVIEW_OPEN)


def fits(value: str) -> bool:
    return len(value) <= RENDER_MAX_CHARS


def comment_html(body: str, agent_names: list[str]) -> str:
    """What a comment's page shows, made once when it is written: its Markdown with `@agent`
    mentions marked, or, when too long to render within bounds, the start of its plain text."""
    if not fits(body):
        return preview(body)
    rendered = with_mentions(render(body), agent_names)
    return rendered if len(rendered.encode()) <= HTML_MAX_BYTES else preview(body)


_TAG = re.compile(r"(<[^>]+>)")


def with_mentions(rendered: str, names: list[str]) -> str:
    """Rendered HTML with each `@agent` of the workspace marked — outside tags, code and links
    only, so an address or a URL is never rewritten."""
    if not names:
        return rendered
    pattern = re.compile(r"(?<![\w@/.])@(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                         + r")(?![\w-])")
    out, skip = [], 0
    for part in _TAG.split(rendered):
        if part.startswith("<"):
            name = part[1:].split(">")[0].split()[0].lower() if len(part) > 2 else ""
            if name in ("code", "pre", "a"):
                skip += 1
            elif name in ("/code", "/pre", "/a"):
                skip = max(0, skip - 1)
            out.append(part)
        elif skip:
            out.append(part)
        else:
            out.append(pattern.sub(r'<span class="mention">@\1</span>', part))
    return "".join(out)


def as_markup(html: str) -> Markup:
    """Stored HTML (made by this module) into a template."""
    return Markup(html)
