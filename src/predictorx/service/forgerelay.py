"""The server relays a task's push (and a follow-up's fetch) to its forge, so no forge credential
reaches a daemon (docs/forges.md, "Where a credential lives").

`forgepush.push_target` hands the task's daemon a relay URL on this server and a relay pass
(service/relaypass.py) for that task, that daemon and that one forge branch. The daemon speaks git
smart HTTP to the relay as it would to the forge; the relay checks the pass, that the task is
still that daemon's, and — for a push — that every ref update names exactly that branch and none
deletes it, before it forwards anything. It forwards to the forge's repository with the
connection's credential (opened by `forges.connection_of`, here, in the server) and streams both
ways: a pack is never held whole in memory. A fetch (upload-pack) is relayed only for a task that
continues a branch (`Task.pull_request_id`).
"""

from __future__ import annotations

import asyncio
import base64
import os
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from ..store.schema import Daemon, ForgeConnection, Member, Token, utcnow
from ..forges.httpclient import USER_AGENT
from . import relaypass
from .errors import Forbidden, NotFound, ServiceError
from .forgepush import _daemons_task, _forges

SERVICES = ("git-receive-pack", "git-upload-pack")
#: A push's command list (its ref updates, before the pack) is read whole, at most this.
MAX_COMMANDS = 64 * 1024
MAX_BODY_ENV = "PREDICTORX_MAX_PUSH_BYTES"
DEFAULT_MAX_BODY = 1024 * 1024 * 1024
ZERO = "0" * 40


class RelayRefused(ServiceError):
    """The relay will not forward this (a sentence; nothing of it reached the forge)."""


def max_body_bytes() -> int:
    raw = os.environ.get(MAX_BODY_ENV, "").strip()
    try:
        return int(raw) if raw else DEFAULT_MAX_BODY
    except ValueError:
        return DEFAULT_MAX_BODY


@dataclass(frozen=True)
class Upstream:
    """Where a relayed request goes: the forge's repository URL and the connection's credential."""

    url: str
    authorization: str
    branch: str
    fetch_allowed: bool

    def __repr__(self) -> str:  # the credential never lands in a log or a traceback
        return f"Upstream(url={self.url!r}, branch={self.branch!r})"


def pass_from_basic(header: str | None) -> str:
    """The relay pass out of an `Authorization: Basic` header (BadPass when there is none)."""
    if not header or not header[:6].lower() == "basic ":
        raise relaypass.BadPass("no relay pass (HTTP Basic) was sent")
    try:
        user, _, password = base64.b64decode(header[6:].strip(), validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        raise relaypass.BadPass("the relay pass is unreadable") from None
    if user != relaypass.USERNAME:
        raise relaypass.BadPass("not a relay pass")
    return password


def upstream(session: Session, task_id: str, given: relaypass.Pass, service: str) -> Upstream:
    """The forge behind the relay of `task_id` for a verified pass: NotFound unless the pass is
    this task's and the task is still its daemon's; Forbidden for a fetch the task may not make."""
    if given.task_id != task_id:
        raise NotFound(f"task {task_id!r} not found")
    task = _daemons_task(session, given.daemon_id, task_id)
    if not _daemon_live(session, given.daemon_id):
        raise relaypass.BadPass("the daemon this relay pass was made for is revoked (or its owner left the workspace)")
    row = session.get(ForgeConnection, given.connection_id)
    if row is None or row.workspace_id != task.workspace_id:
        raise NotFound(f"task {task_id!r} not found")
    # The repository must still be this connection's: an owner who moved the connection to
    # another host since the pass was made must not have its new token sent to the old one.
    forges = _forges()
    mapped = forges.connection_for_url(session, task.workspace_id, given.remote_url)
    if mapped is None or mapped[0].id != row.id:
        raise RelayRefused(f"the repository of task {task_id} no longer belongs to its forge connection; "
                           "the daemon asks for a new push target", 409)
    if service not in SERVICES:
        raise RelayRefused("the relay speaks git smart HTTP only (git-receive-pack, git-upload-pack)", 403)
    if service == "git-upload-pack" and not task.pull_request_id:
        raise Forbidden(f"task {task_id} continues no branch, so the relay fetches nothing for it")
    conn = forges.connection_of(row)
    basic = base64.b64encode(f"{conn.git_username}:{conn.token}".encode()).decode()
    return Upstream(given.remote_url.rstrip("/"), f"Basic {basic}", given.branch,
                    fetch_allowed=bool(task.pull_request_id))


def _daemon_live(session: Session, daemon_id: str) -> bool:
    """The daemon still acts here: a daemon token of it is live (a member's removal revokes them,
    service/daemons.disconnect_owner) and its owner is still a member. A pass is stateless, so its
    ten minutes must not outlive the daemon it was made for."""
    daemon = session.get(Daemon, daemon_id)
    if daemon is None:
        return False
    live = session.scalar(select(Token.id).where(
        Token.kind == "daemon", Token.daemon_id == daemon_id, Token.revoked.is_(False),
        or_(Token.expires_at.is_(None), Token.expires_at > utcnow())).limit(1))
    if live is None:
        return False
    if daemon.owner_id is not None and session.get(Member, (daemon.workspace_id, daemon.owner_id)) is None:
        return False
    return True


# -- a push's ref updates --------------------------------------------------------------------------

def _pkt_lines(data: bytes) -> tuple[list[bytes], int] | None:
    """The pkt-lines of `data` up to its flush-pkt and where that ends; None while it is incomplete."""
    lines: list[bytes] = []
    at, done = _more_pkt_lines(data, 0, lines)
    return (lines, at) if done else None


def _more_pkt_lines(data: bytes | bytearray, at: int, lines: list[bytes]) -> tuple[int, bool]:
    """Read on from `at` (where the lines already in `lines` end): (where reading stopped, whether
    it stopped at the flush-pkt). Each byte is read once however the body is chunked."""
    while True:
        if len(data) < at + 4:
            return at, False
        try:
            size = int(data[at:at + 4], 16)
        except ValueError:
            raise RelayRefused("the push's command list is not git's pkt-line format", 400) from None
        if size == 0:
            return at + 4, True
        if size < 4:
            raise RelayRefused("the push's command list is not git's pkt-line format", 400)
        if len(data) < at + size:
            return at, False
        lines.append(bytes(data[at + 4:at + size]))
        at += size


def check_commands(lines: list[bytes], branch: str) -> None:
    """Every ref update of a push must update the pass's branch and none may delete it."""
    wanted = f"refs/heads/{branch}".encode()
    if not lines:
        raise RelayRefused("the push names no ref to update", 400)
    for line in lines:
        command = line.split(b"\0", 1)[0].rstrip(b"\n")
        if command.startswith(b"shallow "):
            continue
        parts = command.split(b" ")
        if len(parts) != 3 or len(parts[0]) != 40 or len(parts[1]) != 40:
            raise RelayRefused("the push's command list is not git's receive-pack format", 400)
        if parts[2] != wanted:
            raise RelayRefused(f"this task may push only its branch {branch}; "
                               f"{parts[2].decode(errors='replace')[:200]} was refused", 403)
        if parts[1] == ZERO.encode():
            raise RelayRefused(f"this task may not delete the forge's branch {branch}", 403)


class TooLarge(Exception):
    pass


async def checked_push(body: AsyncIterator[bytes], branch: str, limit: int) -> AsyncIterator[bytes]:
    """The push's body as it streams, its command list checked first (check_commands; RelayRefused
    before anything is forwarded), at most `limit` bytes (TooLarge past it)."""
    # Read on where the last chunk's lines ended: a list trickled a byte per chunk is not parsed
    # again from its start each time (on the event loop, that stalled the whole server).
    head = bytearray()
    lines: list[bytes] = []
    at = 0
    async for chunk in body:
        head += chunk
        at, done = _more_pkt_lines(head, at, lines)
        if done:
            check_commands(lines, branch)
            break
        if len(head) > MAX_COMMANDS:
            raise RelayRefused(f"the push's command list is longer than {MAX_COMMANDS} bytes", 413)
    else:
        raise RelayRefused("the push's command list ended before its flush-pkt", 400)
    return _counted(bytes(head), body, limit)


async def _counted(head: bytes, rest: AsyncIterator[bytes], limit: int) -> AsyncIterator[bytes]:
    sent = len(head)
    if sent > limit:
        raise TooLarge()
    yield head
    async for chunk in rest:
        sent += len(chunk)
        if sent > limit:
            raise TooLarge()
        yield chunk


#: The longest a relayed body may send nothing (nginx's `client_body_timeout` in front, said here
#: too: uvicorn has no body timeout, and server/connguard.py never cuts a request being answered).
BODY_IDLE_S = 120.0


async def idle_bounded(body: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """`body` as it arrives, ended (RelayRefused 408) when nothing came for BODY_IDLE_S."""
    chunks = body.__aiter__()
    while True:
        try:
            chunk = await asyncio.wait_for(chunks.__anext__(), BODY_IDLE_S)
        except StopAsyncIteration:
            return
        except asyncio.TimeoutError:
            raise RelayRefused(f"the request's body sent nothing for {BODY_IDLE_S:g} s", 408) from None
        yield chunk


async def bounded(body: AsyncIterator[bytes], limit: int) -> AsyncIterator[bytes]:
    sent = 0
    async for chunk in body:
        sent += len(chunk)
        if sent > limit:
            raise TooLarge()
        yield chunk


def forwarded_headers(headers: Any) -> dict[str, str]:
    """What of the daemon's request the forge sees: git's own headers, never its Authorization."""
    keep = ("content-type", "accept", "git-protocol", "content-encoding", "user-agent", "content-length")
    kept = {k: headers[k] for k in keep if headers.get(k)}
    # (values arrive as Latin-1; the forge's request carries ASCII only — building it raised: a 500)
    for k, v in kept.items():
        if not v.isascii() or not v.isprintable():
            raise RelayRefused(f"the request's {k} header is not printable ASCII; git sends it so", 400)
    return kept


# -- to the forge and back ---------------------------------------------------------------------------

#: Connect fast; a forge may take long to answer a large pack (its checks run after the last byte).
TIMEOUT = httpx.Timeout(300.0, connect=10.0)
#: One client per event loop, kept: making one costs 40-90 ms of CPU (its TLS context), which a
#: new one per request put on every push twice (discovery, then the pack); kept, a push's two
#: requests also share one connection to the forge.
_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]" = weakref.WeakKeyDictionary()


def _client() -> httpx.AsyncClient:
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False,
                                   limits=httpx.Limits(max_connections=64, max_keepalive_connections=8))
        _clients[loop] = client
    return client


async def close_clients() -> None:
    """At the server's stop: the relay's kept client of this loop closed (its connections)."""
    client = _clients.pop(asyncio.get_running_loop(), None)
    if client is not None:
        await client.aclose()


@dataclass
class Relayed:
    """The forge's answer: its status and content type, its body as it streams (then closed)."""

    status: int
    headers: dict[str, str]
    body: AsyncIterator[bytes]


async def forward(up: Upstream, method: str, suffix: str, *, params: dict[str, str] | None = None,
                  headers: dict[str, str], content: AsyncIterator[bytes] | None = None) -> Relayed:
    """One request to the forge's repository (`suffix`: /info/refs, /git-receive-pack, …) with the
    connection's credential. Never follows a redirect; a forge that cannot be reached, redirects,
    or refuses the connection's own credential is a 502 with a sentence (never the credential)."""
    client = _client()
    sent = {"User-Agent": USER_AGENT, **headers, "Authorization": up.authorization}
    try:
        request = client.build_request(method, up.url + suffix, params=params, headers=sent, content=content)
        response = await client.send(request, stream=True)
    except TooLarge:
        raise RelayRefused(f"the push is larger than this server relays (set by {MAX_BODY_ENV})", 413) from None
    except (httpx.HTTPError, httpx.InvalidURL, OSError) as e:
        raise RelayRefused(f"the forge could not be reached ({type(e).__name__})", 502) from None
    status = response.status_code
    if 300 <= status < 400 or status == 401:
        await response.aclose()
        raise RelayRefused("the forge redirected the relay elsewhere; not followed" if status != 401 else
                           "the forge refused the connection's credential (401); an owner or admin updates it "
                           "(`predictorx forge update --token-stdin`)", 502)
    kept = {k: response.headers[k] for k in ("content-type", "content-encoding", "cache-control")
            if k in response.headers}
    return Relayed(status, kept, _streamed(response))


async def _streamed(response: httpx.Response) -> AsyncIterator[bytes]:
    try:
        async for chunk in response.aiter_raw():
            yield chunk
    except httpx.HTTPError:
        pass  # the status is sent: the answer ends short, and git says so
    finally:
        await response.aclose()
