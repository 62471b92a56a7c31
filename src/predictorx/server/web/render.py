"""Templates and the HTML answers every page handler shares.

Templates and static files are found relative to this module, so they work from a source tree
and from an installed wheel alike. Autoescape is on for every template, whatever its name.
"""

from __future__ import annotations

import json
import shlex
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape
from starlette.types import Receive, Scope, Send

from ... import resources as registry
from ... import richtext
from . import console, templatecache, transcript
from .pagework import in_page_thread

SERVER_DIR = Path(__file__).resolve().parent.parent
TEMPLATES_DIR = SERVER_DIR / "templates"
STATIC_DIR = SERVER_DIR / "static"


def _as_datetime(value: datetime | str | None) -> datetime | None:
    """A datetime, or an ISO text (agents-room answers carry those), in UTC; None when neither."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value


def ago(value: datetime | str | None) -> str:
    """'3 min ago' (or 'in 5 min' for a time ahead) — the exact time goes in a title next to it.
    A text that is no time is shown as it is."""
    moment = _as_datetime(value)
    if moment is None:
        return value if isinstance(value, str) else ""
    seconds = int((datetime.now(timezone.utc) - moment).total_seconds())
    ahead, seconds = seconds < -45, abs(seconds)
    if seconds < 45:
        return "just now"
    for size, unit in ((86400 * 365, "y"), (86400 * 30, "mo"), (86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"in {seconds // size} {unit}" if ahead else f"{seconds // size} {unit} ago"
    return "just now"


def iso(value: datetime | str | None) -> str:
    """The exact time, in UTC, to the second ('2026-12-05T17:42:00+00:00')."""
    moment = _as_datetime(value)
    if moment is None:
        return value if isinstance(value, str) else ""
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def plural(count: int, noun: str, many: str | None = None) -> str:
    """'1 comment', '2 comments', '0 comments' (`many` for an irregular plural)."""
    return f"{count:,} {noun if count == 1 else many or noun + 's'}"


def pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def humanize(value: str | None) -> str:
    return (value or "").replace("_", " ")


def resource_html(resource_type: str, ref: Any, label: str | None) -> Markup:
    """A resource as its type's handler renders it (R-RES-1: this code knows no type).

    A type the server no longer knows, or a plugin renderer that breaks, shows its raw payload
    instead of taking the page down.
    """
    try:
        return Markup(registry.get(resource_type).render_html(ref, label))
    except Exception:  # noqa: BLE001 — a broken plugin must not break the project page
        head = f"{escape(label)} · " if label else ""
        return Markup(f'{head}<code class="res-raw">{escape(json.dumps(ref, sort_keys=True))}</code>')


def resource_title(resource_type: str) -> str:
    try:
        return registry.get(resource_type).title or resource_type
    except registry.ResourceError:
        return resource_type


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(str(TEMPLATES_DIR)), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(ago=ago, iso=iso, plural=plural, ansi=console.ansi_html, ansi_plain=console.plain,
                       pretty=pretty, humanize=humanize, markdown=transcript.markdown,
                       as_text=transcript.as_text)
    env.globals.update(resource_html=resource_html, resource_title=resource_title, fold=transcript.fold,
                       console_blocks=console.blocks,
                       shell_command=transcript.shell_command, tool_summary=transcript.tool_summary,
                       system_line=transcript.system_line, shell_join=shlex.join,
                       stored_html=richtext.as_markup)
    return env


ENV = _environment()


def compile_templates() -> int:
    """Compile every template now, before the server answers: the first view of each page would
    otherwise compile it, holding the interpreter for a few hundred milliseconds in which the
    event loop answers nothing (bench/pagestall.py saw a 1 s health answer so). How many."""
    if ENV.bytecode_cache is None:  # what an earlier start compiled, when unchanged (templatecache.py)
        ENV.bytecode_cache = templatecache.bytecode_cache(ENV)
    names = [p.name for p in TEMPLATES_DIR.glob("*.html")]
    for name in names:
        ENV.get_template(name)
    return len(names)


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


class PageResponse(HTMLResponse):
    """A template, rendered as the answer is sent, in a page thread (pagework.py): rendering never
    runs on the event loop, whichever handler (async or not) made the answer (issue 29 §5)."""

    def __init__(self, name: str, context: dict[str, Any], status_code: int = 200,
                 headers: dict[str, str] | None = None):
        self.template_name = name
        self.context = context
        super().__init__(b"", status_code=status_code, headers=headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.body = (await in_page_thread(render_template, self.template_name, self.context)).encode()
        self.raw_headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        self.raw_headers.append((b"content-length", str(len(self.body)).encode()))
        await super().__call__(scope, receive, send)


def render_template(name: str, context: dict[str, Any]) -> str:
    return ENV.get_template(name).render(**context)


def html(name: str, context: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> HTMLResponse:
    """A template (a whole page or one panel) as the answer; rendered when sent, off the loop."""
    return PageResponse(name, context, status, headers)


def redirect(request: Request, url: str) -> Response:
    """After a successful form post: htmx follows HX-Redirect, a plain form a 303."""
    if is_htmx(request):
        return Response(status_code=204, headers={"HX-Redirect": url})
    return RedirectResponse(url, status_code=303)


def panel(request: Request, template: str, context: dict[str, Any], *, page_url: str, status: int = 200,
          headers: dict[str, str] | None = None) -> Response:
    """The answer to a form inside a panel. htmx swaps the re-rendered panel in (with the error
    next to the form when there is one); a plain form post goes back to the page, or on an
    error gets the panel alone, with its message, on a page of its own."""
    if is_htmx(request):
        return html(template, context, status, headers)
    if status < 400:
        return RedirectResponse(page_url, status_code=303)
    # The page around it needs the signed-in person (the sidebar); a panel's context may not carry it.
    viewer = context.get("viewer") or getattr(request.state, "viewer", None)
    return html("standalone.html", {**context, "viewer": viewer, "panel_template": template, "back_url": page_url},
                status)
