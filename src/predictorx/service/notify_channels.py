"""Where notifications go (issue 27 §4): a person's own channels and the workspace's (owners and
admins), each a signed webhook or an Apprise URL (Slack, Discord, ntfy, Matrix, Telegram, e-mail …),
with the kinds of event it hears about and an optional quiet digest. The URL (it often holds a
token) and the webhook's signing secret are sealed (service/secretbox.py) and never shown again:
a list shows the channel's label (the scheme and host of a webhook, the service of an Apprise URL)."""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..store.inbox_schema import NotifyChannel
from ..store.schema import new_id
from . import notify_guard, secretbox
from .errors import Forbidden, Invalid, NotFound
from .inbox import KINDS

CHANNEL_KINDS = ("webhook", "apprise")
DIGESTS = ("off", "hourly", "daily")
SCOPES = ("me", "workspace")
MAX_CHANNELS = 50


def _is_admin(role: str | None) -> bool:
    return role in ("owner", "admin")


def _events(events: list[str] | None) -> list[str]:
    if events is None:
        return list(KINDS)
    wrong = [e for e in events if e not in KINDS]
    if wrong or not events:
        raise Invalid(f"events are some of {', '.join(KINDS)}" + (f"; not {', '.join(wrong)}" if wrong else ""))
    return [k for k in KINDS if k in events]


WEBHOOK_EXAMPLE = "https://hooks.example.org/predictorx or http://[2001:db8::1]:8080/hook"
APPRISE_EXAMPLE = "ntfy://topic, json://host:8080/path or mailto://user:pass@example.org?smtp=mail.example.org"


def url_problem(kind: str, url: str) -> str | None:
    """What is wrong with the form of a channel's URL, as a sentence saying what a valid one looks
    like; None when its form is sound (an Apprise URL must still be one Apprise understands: see
    `check_url`). No lookup, no import of Apprise: the notifier asks it of stored URLs too."""
    if kind == "webhook":
        if any(c.isspace() or not c.isprintable() for c in url):
            return f"a webhook URL has no spaces or control characters (percent-encode them), like {WEBHOOK_EXAMPLE}"
        try:
            parts = urlsplit(url)
        except ValueError:
            return ("a webhook URL's host is malformed (an IPv6 address goes between '[' and ']'), like "
                    f"{WEBHOOK_EXAMPLE}")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return f"a webhook URL is http:// or https:// with a host, like {WEBHOOK_EXAMPLE}"
        if parts.username or parts.password:
            return "a webhook URL carries no user or password; its signature authenticates it"
        return _port_problem(parts.netloc, "a webhook URL's port", WEBHOOK_EXAMPLE, tokens=False)
    if any(not c.isprintable() for c in url):
        return f"an Apprise URL has no line breaks or control characters, like {APPRISE_EXAMPLE}"
    try:
        parts = urlsplit(url)
    except ValueError:
        return ("the Apprise URL's host is malformed (an IPv6 address goes between '[' and ']'), like "
                f"{APPRISE_EXAMPLE}")
    # (Apprise's host part may be a token with a colon, Telegram's `tgram://123:ABC/…`: only a
    # number there is a port)
    problem = _port_problem(parts.netloc, "the Apprise URL's port", APPRISE_EXAMPLE, tokens=True)
    if problem is not None:
        return problem
    for key, values in parse_qs(parts.query).items():
        if key.lower() not in notify_guard.SERVER_OPTIONS:
            continue
        for value in values:
            what = f"the Apprise URL's {key}= (the server it names)"
            try:
                server = urlsplit(value if "://" in value else f"//{value}")
            except ValueError:
                return (f"{what} is malformed: a host name or address, an IPv6 address between '[' and ']', "
                        f"like {key}=mail.example.org or {key}=[2001:db8::1]:587")
            problem = _port_problem(server.netloc, f"the port of {what}", f"{key}=mail.example.org:587",
                                    tokens=False)
            if problem is not None:
                return problem
    return None


def _port_problem(netloc: str, what: str, example: str, *, tokens: bool) -> str | None:
    """A port that cannot be (not a number, or outside 1–65535); with `tokens`, a part after the
    host's colon that is no number is not taken for a port."""
    raw = netloc.rpartition("@")[2].rpartition("]")[2].partition(":")[2]
    if not raw or (tokens and not (raw.isascii() and raw.isdigit())):
        return None
    if raw.isascii() and raw.isdigit() and 1 <= int(raw) <= 65535:
        return None
    return f"{what} is a number from 1 to 65535 (not {raw[:20]!r}), like {example}"


def check_url(kind: str, url: str) -> str:
    """The label a list shows for a channel's URL, or Invalid with a sentence: the one check of a
    URL a channel takes (`add`, which the API route, `predictorx notify add` through it, and the
    Notifications page call)."""
    problem = url_problem(kind, url)
    if problem is not None:
        raise Invalid(problem)
    return _webhook_label(url) if kind == "webhook" else _apprise_label(url)


def _webhook_label(url: str) -> str:
    parts = urlsplit(url)  # (its form checked by url_problem)
    return f"{parts.scheme}://{parts.netloc}/…"


def _apprise_label(url: str) -> str:
    import apprise  # (a large import: only when a channel is set or used)

    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if not scheme or not apprise.Apprise().add(url):
        raise Invalid("not an Apprise URL this server understands (e.g. ntfy://topic, slack://…, discord://…, "
                      "mailto://…, json://host/path); see https://github.com/caronc/apprise/wiki")
    private = notify_guard.private_named(url)
    if private is not None:
        raise Invalid(f"the Apprise URL names a private address ({private}): notifications reach only public "
                      f"hosts unless the server sets {notify_guard.ALLOW_PRIVATE_ENV}=1")
    return f"{scheme}://…"


def add(session: Session, workspace_id: str, user_id: str, role: str | None, *, scope: str, kind: str, name: str,
        url: str, secret: str | None = None, events: list[str] | None = None,
        digest: str = "off") -> tuple[NotifyChannel, str | None]:
    """The new channel, and a webhook's signing secret when the server made it (shown once)."""
    if scope not in SCOPES:
        raise Invalid(f"scope is one of {', '.join(SCOPES)}")
    if scope == "workspace" and not _is_admin(role):
        raise Forbidden("only an owner or admin sets the workspace's notifications; `--scope me` sets your own")
    if kind not in CHANNEL_KINDS:
        raise Invalid(f"kind is one of {', '.join(CHANNEL_KINDS)}")
    if digest not in DIGESTS:
        raise Invalid(f"digest is one of {', '.join(DIGESTS)}")
    name, url = (name or "").strip(), (url or "").strip()
    if not name or len(name) > 100:
        raise Invalid("a channel needs a name of 1 to 100 characters")
    if not url or len(url) > 4000:
        raise Invalid("a channel needs a URL of up to 4,000 characters")
    label = check_url(kind, url)
    owner = user_id if scope == "me" else None
    mine = NotifyChannel.user_id.is_(None) if owner is None else NotifyChannel.user_id == owner
    count = session.scalar(select(func.count()).select_from(NotifyChannel).where(
        NotifyChannel.workspace_id == workspace_id, mine)) or 0
    if count >= MAX_CHANNELS:
        raise Invalid(f"at most {MAX_CHANNELS} channels per person and per workspace")
    made = None
    if kind == "webhook" and not secret:
        secret = made = secrets.token_urlsafe(32)
    if secret is not None and not 16 <= len(secret) <= 500:
        raise Invalid("a signing secret is 16 to 500 characters")
    row = NotifyChannel(id=new_id(), workspace_id=workspace_id, user_id=owner, kind=kind, name=name, label=label,
                        events=_events(events), digest=digest, enabled=True, created_by=user_id)
    ring = secretbox.load_keyring()
    secretbox.seal_into(row, "url_sealed", url, ring)
    if kind == "webhook":
        secretbox.seal_into(row, "secret_sealed", secret or "", ring)
    session.add(row)
    session.flush()
    return row, made


def get(session: Session, workspace_id: str, user_id: str, channel_id: str) -> NotifyChannel:
    """A channel the person may see: their own or the workspace's; another person's is not found."""
    row = session.get(NotifyChannel, channel_id)
    if row is None or row.workspace_id != workspace_id or (row.user_id is not None and row.user_id != user_id):
        raise NotFound(f"notification channel {channel_id} not found; `predictorx notify list` shows yours")
    return row


def editable(session: Session, workspace_id: str, user_id: str, role: str | None, channel_id: str) -> NotifyChannel:
    row = get(session, workspace_id, user_id, channel_id)
    if row.user_id is None and not _is_admin(role):
        raise Forbidden("only an owner or admin changes the workspace's notifications")
    return row


def update(session: Session, row: NotifyChannel, *, events: list[str] | None = None, digest: str | None = None,
           enabled: bool | None = None) -> NotifyChannel:
    if events is not None:
        row.events = _events(events)
    if digest is not None:
        if digest not in DIGESTS:
            raise Invalid(f"digest is one of {', '.join(DIGESTS)}")
        row.digest = digest
    if enabled is not None:
        row.enabled = enabled
    session.flush()
    return row


def visible(session: Session, workspace_id: str, user_id: str) -> list[NotifyChannel]:
    return list(session.scalars(select(NotifyChannel).where(
        NotifyChannel.workspace_id == workspace_id,
        (NotifyChannel.user_id == user_id) | NotifyChannel.user_id.is_(None)).order_by(NotifyChannel.created_at)))


def listening(session: Session, workspace_id: str, user_id: str | None, kind: str) -> list[NotifyChannel]:
    """The enabled channels of a person (user_id) and of the workspace that hear `kind`: the
    person's first, in one read (an inbox item asked twice, on every finish that raised one)."""
    owner = NotifyChannel.user_id.is_(None) if user_id is None else \
        (NotifyChannel.user_id == user_id) | NotifyChannel.user_id.is_(None)
    rows = session.scalars(select(NotifyChannel).where(NotifyChannel.workspace_id == workspace_id, owner,
                                                       NotifyChannel.enabled.is_(True)))
    heard = [r for r in rows if kind in (r.events or [])]
    return [r for r in heard if r.user_id is not None] + [r for r in heard if r.user_id is None]


def describe(row: NotifyChannel) -> dict[str, Any]:
    """Never the URL or the secret."""
    return {"id": row.id, "scope": "me" if row.user_id else "workspace", "kind": row.kind, "name": row.name,
            "label": row.label, "events": list(row.events or []), "digest": row.digest, "enabled": row.enabled,
            "created_at": row.created_at.isoformat() if row.created_at else None}
