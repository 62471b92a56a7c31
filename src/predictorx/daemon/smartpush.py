"""A push spoken as git's smart-HTTP receive-pack by the daemon itself (issue 22: run ended → PR
opened), over one kept-alive connection: `GET <remote>/info/refs?service=git-receive-pack` (the ref
discovery gitprotocol-http requires first; it can be made while the run's work is still being
delivered: `discover`), then `POST <remote>/git-receive-pack` with the one ref update, the pack
made by one real `git pack-objects --stdout --thin --revs` (the new tip, excluding what the forge
advertised and this repository holds, as `git send-pack` does) and the forge's report-status read
back. `git push` spends most of its time on its process chain (git, git-remote-http, send-pack,
pack-objects) and its set-up; this spends one process.

The credential is in this client's Authorization header only — never argv, never a child's
environment (pack-objects gets the daemon's, which holds no token), never a log. The lease is
forgepush.py's: the forge's branch must be what Predictor X pushed last (or absent), checked
against the advertisement and sent as the update's old value, which receive-pack checks again
under its ref lock.

Anything this does not speak raises `Unsupported` and the caller pushes with `git push`
(forgepush.push) instead: a proxy or TLS/HTTP setting in the environment or the repository's
config, a URL with credentials in it, a redirect, any answer but 200 to either request (a refused
credential included: git's own sentence then), a server without report-status, a SHA-256
repository, a dropped connection.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import signal
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union
from urllib.parse import urlsplit

from ..forges.base import PushTarget
from ..http1 import chunk_size, framing, read_head, unread
from .forgepush import CHANGED, PushError, Pushed, check_target, scrub
from .gitcmd import git_env, sealed_env
from .gitobjects import present

ZERO = "0" * 40
_SHA = re.compile(r"^[0-9a-f]{40}$")
#: Each of the two requests and the pack's making is bounded by this (seconds)…
STEP_TIMEOUT = 120.0
#: …and the whole push by this, so that `git push` after it (forgepush.PUSH_TIMEOUT) still ends
#: within the delivery's wait for the push (earlypush.PUSH_WAIT).
PUSH_BUDGET = 50.0
#: A pack larger than this is left to `git push` (it streams; this holds the pack in memory, and
#: a push that large gains nothing from the few milliseconds this saves).
MAX_PACK = 64 * 1024 * 1024
MAX_HEAD = 64 * 1024
#: The interim (1xx) answers read before an answer, at most (each within the reader's limit).
MAX_INTERIM = 8
#: What a forge may send: a ref advertisement, a report (with its side-band messages), one chunk.
MAX_ADVERTISEMENT = 32 * 1024 * 1024
MAX_REPORT = 1024 * 1024
MAX_CHUNK = 16 * 1024 * 1024
AGENT = "git/predictorx"
#: What in the daemon's environment changes how git would reach the forge: then git does it.
_ENV_NAMES = {"http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
              "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"}
_ENV_PREFIXES = ("GIT_HTTP_", "GIT_CURL_", "GIT_PROXY", "GIT_TRACE_CURL")
#: The same for an https remote only (GIT_SSL_CAINFO, git's CA file, is used here as git uses it).
_TLS_NAMES = {"SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE"}
_TLS_PREFIXES = ("GIT_SSL_",)
CA_FILE = "GIT_SSL_CAINFO"
#: Sections of a repository's config that change git's HTTP (or where it reads more config).
_CONFIG = re.compile(rb"^\s*\[\s*(http|url|include|includeif)\b", re.IGNORECASE | re.MULTILINE)
_CHANGED_REASONS = ("non-fast-forward", "fetch first", "stale", "failed to update ref", "failed to lock",
                    "cannot lock")


class Unsupported(Exception):
    """This push is left to `git push`; the message says why (no secret in it)."""


@dataclass
class Advertised:
    refs: dict[str, str]
    caps: set[str]
    haves: set[str] = field(default_factory=set)  # every object the forge named (refs and `.have`s)


class Session:
    """One connection to a forge's git endpoint, its receive-pack refs discovered (`discover`)."""

    def __init__(self, target: PushTarget, advertised: Advertised,
                 conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None):
        self.target, self.advertised, self._conn = target, advertised, conn

    def serves(self, target: PushTarget) -> bool:
        mine = self.target
        return (mine.remote_url, mine.username, mine.token) == (target.remote_url, target.username, target.token)

    def close(self) -> None:
        if self._conn is not None:
            self._conn[1].close()
            self._conn = None


#: A session, a discovery under way that gives one (or None), or none.
SessionLike = Union["Session", "asyncio.Future[Any]", None]


def unsupported_here(target: PushTarget) -> str | None:
    """Why this process's environment or `target`'s URL leaves the push to git, or None."""
    parts = urlsplit(target.remote_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "not an http(s) URL"
    if parts.username or parts.password or parts.query or parts.fragment:
        return "a URL with credentials, a query or a fragment"
    tls = parts.scheme == "https"
    for name in os.environ:
        if (name in _ENV_NAMES or name.startswith(_ENV_PREFIXES)
                or (tls and name != CA_FILE and (name in _TLS_NAMES or name.startswith(_TLS_PREFIXES)))):
            return f"{name} is set"
    return None


def git_dir_of(repo: Path, is_git_dir: bool) -> Path:
    """The git dir whose objects the pack is made from; Unsupported when its config changes git's HTTP."""
    if is_git_dir:
        found = repo
    elif (repo / ".git").is_dir():
        found = repo / ".git"
    elif (repo / "HEAD").is_file() and (repo / "objects").is_dir():
        found = repo
    else:
        raise Unsupported("not a plain repository (a linked worktree or a .git file)")
    try:
        config = (found / "config").read_bytes()
    except OSError:
        config = b""
    if _CONFIG.search(config) or (found / "config.worktree").exists():
        raise Unsupported("the repository's config sets HTTP, URL rewriting or includes")
    return found


async def discover(target: PushTarget) -> Session:
    """The forge's receive-pack refs, on a connection kept for the push."""
    check_target(target)
    why = unsupported_here(target)
    if why:
        raise Unsupported(why)
    parts = urlsplit(target.remote_url)
    conn = None
    try:
        async with asyncio.timeout(STEP_TIMEOUT):
            conn = await _connect(parts.scheme, parts.hostname or "", parts.port)
            status, headers = await _request(conn, "GET", f"{_path(target)}/info/refs?service=git-receive-pack",
                                             target, None)
            body = await _read_all(conn[0], headers)
        if status != 200:
            raise Unsupported(f"the ref discovery was answered {status}")
        if _type(headers) != "application/x-git-receive-pack-advertisement":
            raise Unsupported("not a smart-HTTP server")
        session = Session(target, _advertised(body), conn)
    except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError, ssl.SSLError) as e:
        if conn is not None:
            conn[1].close()
        raise Unsupported(f"the ref discovery failed ({type(e).__name__})") from None
    except BaseException:
        if conn is not None:
            conn[1].close()
        raise
    if ("close" in headers.get("connection", "").lower() or unread(conn[0])
            or ("transfer-encoding" in headers and "content-length" in headers)):
        session.close()  # the push opens its own (nothing past an answer is read as the next one)
    return session


async def push(repo: Path, tip: str, target: PushTarget, *, lease: str | None, is_git_dir: bool,
               session: "SessionLike" = None) -> Pushed:
    """Update `refs/heads/<target.branch>` at the forge to `tip` (a commit of `repo`), leased as
    forgepush.push leases it. `session`: refs discovered (or being discovered) for this target
    already; closed here. pack-objects starts before that discovery is awaited, so its start
    overlaps the discovery still under way. Raises PushError (a sentence, no secret) or
    Unsupported (push with git instead)."""
    packer = None
    try:
        async with asyncio.timeout(PUSH_BUDGET):
            if not _SHA.match(tip):
                raise Unsupported("the tip is not a commit name")
            git_dir = git_dir_of(repo, is_git_dir)
            if session is None:  # asked now, beside pack-objects' start
                session = asyncio.ensure_future(discover(target))
            packer = await _Packer.start(git_dir)
            found = await session if isinstance(session, asyncio.Future) else session
            if isinstance(found, Unsupported):  # the discovery at the agent's end failed: not asked twice
                raise found
            session = found
            if session is not None and not session.serves(target):
                session.close()
                session = None
            if session is None:
                session = await discover(target)
            return await _update(session, packer, git_dir, tip, target, lease)
    except TimeoutError:
        raise Unsupported(f"the push took longer than {PUSH_BUDGET:.0f} s") from None
    finally:
        if packer is not None:
            await packer.stop()
        discard(session)


def discard(session: "SessionLike") -> None:
    """Close `session`, or the one a discovery under way will give (that discovery is cancelled)."""
    if isinstance(session, asyncio.Future):
        if session.done():
            session = None if session.cancelled() or session.exception() else session.result()
            if isinstance(session, Unsupported):
                session = None
        else:
            session.add_done_callback(discard)
            session.cancel()
            return
    if session is not None:
        session.close()


async def _update(session: Session, packer: "_Packer", git_dir: Path, tip: str, target: PushTarget,
                  lease: str | None) -> Pushed:
    adv, ref = session.advertised, f"refs/heads/{target.branch}"
    if "report-status" not in adv.caps:
        raise Unsupported("the server offers no report-status")
    if any(c.startswith("object-format=") and c != "object-format=sha1" for c in adv.caps):
        raise Unsupported("not a SHA-1 repository")
    current = adv.refs.get(ref, ZERO)
    if current == tip:
        return Pushed(tip)  # already there (as `git push` says "Everything up-to-date")
    if current != (lease if lease and _SHA.match(lease) else ZERO):
        raise PushError(CHANGED.format(branch=target.branch))
    pack = await packer.pack(tip, await asyncio.to_thread(present, git_dir, adv.haves))
    wanted = ["report-status"] + [c for c in ("side-band-64k", "quiet") if c in adv.caps]
    if any(c.startswith("agent=") for c in adv.caps):
        wanted.append(f"agent={AGENT}")
    body = (_pkt(f"{current} {tip} {ref}\0{' '.join(wanted)}".encode()) + b"0000", pack)
    report, said = await _post(session, target, body, "side-band-64k" in wanted)
    _check_report(report, said, ref, target)
    return Pushed(tip)


async def _post(session: Session, target: PushTarget, body: tuple[bytes, ...], side_band: bool
                ) -> tuple[bytes, list[str]]:
    """Send the update and its pack; the report-status (and what the forge said on side band 2)
    as soon as it is complete. The rest of the answer (the forge's post-receive work, its `gc
    --auto`) is read to its end in the background, on this connection, so that work is never cut
    short by a closed connection — and the push's report does not wait for it."""
    path = f"{_path(target)}/git-receive-pack"
    extra = {"Content-Type": "application/x-git-receive-pack-request",
             "Accept": "application/x-git-receive-pack-result"}
    try:
        async with asyncio.timeout(STEP_TIMEOUT):
            if session._conn is not None and unread(session._conn[0]):
                session.close()  # (bytes came that nobody asked for: they would be read as the report)
            if session._conn is not None:
                try:  # the discovery's connection; one the server closed meanwhile is opened anew
                    status, headers = await _request(session._conn, "POST", path, target, body, extra)
                except _NotSent:  # (sent and unanswered, it may have landed: `git push` then looks)
                    session.close()
            if session._conn is None:
                parts = urlsplit(target.remote_url)
                session._conn = await _connect(parts.scheme, parts.hostname or "", parts.port)
                status, headers = await _request(session._conn, "POST", path, target, body, extra)
            reader, writer = session._conn
            if status != 200 or _type(headers) != "application/x-git-receive-pack-result":
                raise Unsupported(f"the push was answered {status}")
            chunks = _body(reader, headers)
            report, said = await _report_of(chunks, side_band)
    except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError, ssl.SSLError) as e:
        raise Unsupported(f"the push request failed ({type(e).__name__})") from None
    session._conn = None  # the connection is the drain's now
    _draining.add(task := asyncio.ensure_future(_drain(chunks, writer)))
    task.add_done_callback(_draining.discard)
    return report, said


#: Answers read to their end after their report (`_post`); held so that none is collected half-way.
_draining: set[asyncio.Future[None]] = set()


async def _drain(chunks: AsyncIterator[bytes], writer: asyncio.StreamWriter) -> None:
    try:
        async with asyncio.timeout(STEP_TIMEOUT):
            async for _ in chunks:
                pass
    except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError):
        pass
    finally:
        writer.close()


async def _report_of(chunks: AsyncIterator[bytes], side_band: bool) -> tuple[bytes, list[str]]:
    """The report-status pkt-lines (to their flush) read from the answer's body as it comes, and
    the forge's messages (side band 2 and 3) until then."""
    pending, report, said = b"", b"", list[str]()
    async for chunk in chunks:
        pending += chunk
        if len(pending) + len(report) > MAX_REPORT:
            raise ValueError("the forge's report is too long")
        if not side_band:
            report, pending = report + pending, b""
        while side_band and len(pending) >= 4:
            size = int(pending[:4], 16)
            if size < 4:  # the answer's closing flush
                pending = pending[4:]
                continue
            if len(pending) < size:
                break
            payload, pending = pending[4:size], pending[size:]
            if payload[:1] == b"\x01":
                report += payload[1:]
            else:
                said = (said + [t.strip() for t in payload[1:].decode("utf-8", "replace").splitlines()
                                if t.strip()])[-20:]
        if _whole(report):
            return report, said
    return report, said


def _whole(report: bytes) -> bool:
    """`report` is complete pkt-lines ending with a flush."""
    at = 0
    while at + 4 <= len(report):
        size = int(report[at:at + 4], 16)
        if size < 4:
            return at + 4 == len(report)
        at += size
    return False


class _Packer:
    """One real `git pack-objects --stdout --thin --revs` (the daemon's environment: no token),
    started before the revisions it packs are known. Its deltas name their bases by object id
    (no `--delta-base-offset`: that needs the server's `ofs-delta`, not known yet), which every
    receive-pack takes."""

    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc

    @classmethod
    async def start(cls, git_dir: Path) -> "_Packer":
        return cls(await asyncio.create_subprocess_exec(
            "git", f"--git-dir={git_dir}", "pack-objects", "--stdout", "--thin", "--revs", "-q",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=git_env(sealed_env()), start_new_session=True))

    async def pack(self, tip: str, bases: set[str]) -> bytes:
        """The pack of `tip` less what `bases` reach; Unsupported beyond MAX_PACK or STEP_TIMEOUT
        (read as it comes, so a larger one is never held)."""
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        revs = (tip + "\n" + "".join(f"^{b}\n" for b in sorted(bases))).encode()
        try:
            async with asyncio.timeout(STEP_TIMEOUT):
                proc.stdin.write(revs)
                await proc.stdin.drain()
                proc.stdin.close()
                err = asyncio.ensure_future(_tail(proc.stderr))
                parts, size = [], 0
                while chunk := await proc.stdout.read(1 << 20):
                    size += len(chunk)
                    if size > MAX_PACK:
                        err.cancel()
                        raise Unsupported("a pack larger than the daemon sends itself")
                    parts.append(chunk)
                said = await err
                await proc.wait()
        except TimeoutError:
            raise Unsupported(f"git pack-objects took longer than {STEP_TIMEOUT:.0f} s") from None
        except (BrokenPipeError, ConnectionResetError):
            raise Unsupported("git pack-objects ended early") from None
        if proc.returncode != 0:
            raise Unsupported(f"git pack-objects failed: {said.decode('utf-8', 'replace').strip()[-300:]}")
        return b"".join(parts)

    async def stop(self) -> None:
        """End it if it still runs (not used, timed out, cancelled), its process group with it."""
        if self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await self.proc.wait()


def _check_report(report: bytes, said: list[str], ref: str, target: PushTarget) -> None:
    """Raise PushError unless the forge reported its unpack ok and `ref` updated."""
    remote = scrub(" / ".join(said[-3:]), target)
    lines = [ln.decode("utf-8", "replace").rstrip("\n") for ln in _pkt_lines(report)] if _whole(report) else []
    if not lines or not lines[0].startswith("unpack "):
        raise PushError(f"the forge sent no report of the push of {target.branch}{': ' + remote if remote else ''}")
    if lines[0] != "unpack ok":
        raise PushError(scrub(f"the forge could not take the pushed objects: {lines[0][7:]}", target))
    for line in lines[1:]:
        if line == f"ok {ref}":
            return
        if line.startswith(f"ng {ref} "):
            reason = line[len(ref) + 4:]
            if any(r in reason for r in _CHANGED_REASONS):
                raise PushError(CHANGED.format(branch=target.branch))
            raise PushError(scrub(f"the forge refused the push of branch {target.branch}: {reason}"
                                  + (f" ({remote})" if remote else ""), target))
    raise PushError(f"the forge's report of the push names no result for {target.branch}")


def _advertised(body: bytes) -> Advertised:
    lines = _pkt_lines(body, keep_flush=True)
    if not lines or lines[0].rstrip(b"\n") != b"# service=git-receive-pack":
        raise Unsupported("no service line in the ref advertisement")
    refs: dict[str, str] = {}
    caps: set[str] = set()
    haves: set[str] = set()
    for line in lines[1:]:
        if line is None or line.rstrip(b"\n") == b"version 1":
            continue
        text, _, capabilities = line.rstrip(b"\n").partition(b"\0")
        if capabilities:
            caps = set(capabilities.decode("utf-8", "replace").split())
        sha, _, name = text.decode("utf-8", "replace").partition(" ")
        if not _SHA.match(sha) or not name:
            raise Unsupported("an advertisement line this client does not read")
        if name != "capabilities^{}" and name != ".have":
            refs[name] = sha
        if sha != ZERO:
            haves.add(sha)
    return Advertised(refs, caps, haves)


def _pkt(data: bytes) -> bytes:
    return b"%04x" % (len(data) + 4) + data


def _pkt_lines(data: bytes, keep_flush: bool = False) -> list:
    """The payloads of the pkt-lines in `data` (None for a flush when `keep_flush`)."""
    out: list = []
    at = 0
    while at + 4 <= len(data):
        size = int(data[at:at + 4], 16)
        if size < 4:
            if keep_flush:
                out.append(None)
            at += 4
            continue
        out.append(data[at + 4:at + size])
        at += size
    if at != len(data):
        raise Unsupported("a truncated pkt-line")
    return out


def _path(target: PushTarget) -> str:
    return urlsplit(target.remote_url).path.rstrip("/")


async def _connect(scheme: str, host: str, port: int | None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    if scheme == "https":  # the system's CAs as git's libcurl uses them, or git's CA file (GIT_SSL_CAINFO)
        context = ssl.create_default_context(cafile=os.environ.get(CA_FILE) or None)
        return await asyncio.open_connection(host, port or 443, ssl=context, limit=MAX_HEAD)
    return await asyncio.open_connection(host, port or 80, limit=MAX_HEAD)


class _NotSent(ConnectionError):
    """The connection failed while the request was being written: it may be sent again."""


async def _request(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], method: str, path: str,
                   target: PushTarget, body: tuple[bytes, ...] | None, extra: dict[str, str] | None = None
                   ) -> tuple[int, dict[str, str]]:
    """One HTTP/1.1 request with the credential in its Authorization header; the answer's status
    and header fields (its body is the caller's to read: `_body`). `body`: its parts, in order."""
    reader, writer = conn
    basic = base64.b64encode(f"{target.username}:{target.token}".encode()).decode()
    netloc = urlsplit(target.remote_url).netloc
    head = [f"{method} {path} HTTP/1.1", f"Host: {netloc}", f"User-Agent: {AGENT}", f"Authorization: Basic {basic}",
            "Pragma: no-cache"]
    head += [f"{k}: {v}" for k, v in (extra or {}).items()]
    if body is not None:
        head.append(f"Content-Length: {sum(len(part) for part in body)}")
    try:
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        for part in body or ():
            writer.write(part)
        await writer.drain()
    except ConnectionError as e:
        raise _NotSent(str(e)) from e
    _, status, headers = await read_head(reader)
    for _ in range(MAX_INTERIM):  # 103 Early Hints, an unasked 100 Continue: the answer comes after them
        if not 100 <= status < 200 or status == 101:
            break
        _, status, headers = await read_head(reader)
    else:
        raise ValueError("too many interim answers")
    if "chunked" not in headers.get("transfer-encoding", "").lower() and "content-length" not in headers:
        headers["connection"] = "close"  # read to its end: the connection is over then
    return status, headers


async def _body(reader: asyncio.StreamReader, headers: dict[str, str]) -> AsyncIterator[bytes]:
    """An answer's body as it arrives (chunked, by its length, or to the connection's end)."""
    kind, length = framing(headers, limit=float("inf"))  # (what is kept is bounded by its reader)
    if kind == "chunked":
        while size := chunk_size(await _line(reader), 0, limit=MAX_CHUNK):
            yield await reader.readexactly(size)
            if await reader.readexactly(2) != b"\r\n":
                raise ValueError("malformed chunked body")
        while (await _line(reader)) != b"\r\n":  # trailers, to the empty line
            pass
        return
    left = length if kind == "length" else None
    while left is None or left > 0:
        data = await reader.read(65536 if left is None else min(left, 65536))
        if not data:
            if left:
                raise asyncio.IncompleteReadError(b"", left)
            return
        if left is not None:
            left -= len(data)
        yield data


async def _line(reader: asyncio.StreamReader) -> bytes:
    try:
        return await reader.readuntil(b"\r\n")
    except asyncio.LimitOverrunError as e:
        raise ValueError("a chunk line too long") from e


async def _read_all(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    parts, size = [], 0
    async for chunk in _body(reader, headers):
        size += len(chunk)
        if size > MAX_ADVERTISEMENT:
            raise ValueError("a ref advertisement larger than this client reads")
        parts.append(chunk)
    return b"".join(parts)


async def _tail(stream: asyncio.StreamReader, keep: int = 4096) -> bytes:
    """A stream read to its end; its last `keep` bytes."""
    out = b""
    while chunk := await stream.read(65536):
        out = (out + chunk)[-keep:]
    return out


def _type(headers: dict[str, str]) -> str:
    return headers.get("content-type", "").split(";")[0].strip()
