"""The one HTTP mechanism under the forge clients: a shared sync httpx client (thread-safe, pooled),
a timeout on every call, a User-Agent naming Predictor X, conditional GETs, and the mapping of
answers to the errors of `forges.base` (4xx → ForgeRefused with the forge's own sentence; 5xx,
429, transport failures and unreadable bodies → ForgeUnavailable).

The token travels only in a request header; it is never logged and never put in an exception
(httpx's own errors name the URL, which carries no credential here).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import quote

import httpx2 as httpx

from .. import __version__
from .base import Connection, ForgeRefused, ForgeUnavailable

log = logging.getLogger("predictorx.forges")

USER_AGENT = f"PredictorX/{__version__} (forge client)"
#: Connect fast or give up; a forge that takes longer than this to answer one call is unavailable.
TIMEOUT = httpx.Timeout(30.0, connect=10.0)

_client: httpx.Client | None = None
_client_lock = threading.Lock()


def client() -> httpx.Client:
    """The process's forge HTTP client (created on first use; httpx's sync client is thread-safe)."""
    global _client
    with _client_lock:
        if _client is None:
            _client = httpx.Client(timeout=TIMEOUT, follow_redirects=False,
                                   headers={"User-Agent": USER_AGENT},
                                   limits=httpx.Limits(max_connections=20, max_keepalive_connections=10))
        return _client


def segment(value: str) -> str:
    """One URL path segment (a branch "feat/x" → "feat%2Fx", a GitLab project path likewise)."""
    return quote(value, safe="")


@dataclass
class Answer:
    status: int
    headers: Mapping[str, str]
    body: Any  # parsed JSON, or the text for a non-JSON answer, or None (204, 304)
    validators: dict[str, str] = field(default_factory=dict)


def refusal_text(body: Any) -> str:
    """The forge's own sentence out of an error body: GitHub `message` + `errors`, GitLab
    `message` (a string, a list, or field → [errors]) or `error`, Gitea/Forgejo `message`."""
    if isinstance(body, str):
        return body.strip()[:500]
    if not isinstance(body, dict):
        return ""
    parts: list[str] = []
    for key in ("message", "error", "error_description"):
        value = body.get(key)
        if isinstance(value, str) and value:
            parts.append(value)
        elif isinstance(value, list):
            parts.extend(str(v) for v in value if v)
        elif isinstance(value, dict):  # GitLab: {"title": ["can't be blank"]}
            for name, errs in value.items():
                errs = errs if isinstance(errs, list) else [errs]
                parts.append(f"{name} " + ", ".join(str(e) for e in errs))
    for err in body.get("errors") or []:  # GitHub: [{resource, field, code, message?}]
        if isinstance(err, dict):
            text = err.get("message") or " ".join(str(err[k]) for k in ("field", "code") if err.get(k))
            if text:
                parts.append(str(text))
        elif err:
            parts.append(str(err))
    return "; ".join(dict.fromkeys(parts))


class ForgeApi:
    """One forge's HTTP dialect: how it is authenticated and what it is called in sentences."""

    def __init__(self, name: str, auth: Callable[[str], dict[str, str]],
                 headers: Mapping[str, str] | None = None):
        self.name = name
        self.auth = auth
        self.headers = dict(headers or {})

    def call(self, conn: Connection, method: str, path: str, *, params: Mapping[str, Any] | None = None,
             body: Any = None, validators: Mapping[str, str] | None = None, text: bool = False,
             accept_missing: bool = False) -> Answer:
        """`path` is under `conn.api_url`. `validators` (etag, last_modified) make a conditional
        GET: an unchanged resource answers status 304 with no body. `accept_missing`: a 404
        answers Answer(404) instead of raising (deleting what is already gone). `text`: the body
        is text (a job log), not JSON."""
        url = conn.api_url.rstrip("/") + path
        headers = {**self.headers, **self.auth(conn.token)}
        if validators:
            if validators.get("etag"):
                headers["If-None-Match"] = validators["etag"]
            if validators.get("last_modified"):
                headers["If-Modified-Since"] = validators["last_modified"]
        response = self._send(method, url, path, params, body, headers)
        log.debug("%s %s %s → %s", self.name, method, path, response.status_code)
        return self._answer(method, path, response, text, accept_missing)

    def _send(self, method: str, url: str, path: str, params: Mapping[str, Any] | None, body: Any,
              headers: dict[str, str]) -> httpx.Response:
        """One request, following a redirect only within the same origin (a renamed repository
        on GitHub answers 301): the credential header must not follow a redirect elsewhere."""
        for _ in range(4):
            try:
                response = client().request(method, url, params=_clean(params), json=body, headers=headers)
            except httpx.TimeoutException:
                raise ForgeUnavailable(f"{self.name} did not answer {method} {path} in time") from None
            except httpx.HTTPError as e:
                raise ForgeUnavailable(f"{self.name} could not be reached ({type(e).__name__}: {e})") from None
            location = response.headers.get("location")
            if response.status_code not in (301, 302, 307, 308) or not location:
                return response
            target = response.url.join(location)
            if (target.scheme, target.host, target.port) != (response.url.scheme, response.url.host, response.url.port):
                raise ForgeRefused(f"{self.name} redirected {method} {path} to another server; not followed",
                                   response.status_code)
            url, params = str(target), None
        raise ForgeUnavailable(f"{self.name} redirected {method} {path} too many times")

    def _answer(self, method: str, path: str, response: httpx.Response, text: bool,
                accept_missing: bool) -> Answer:
        status = response.status_code
        got = {k: v for k, v in (("etag", response.headers.get("etag")),
                                 ("last_modified", response.headers.get("last-modified"))) if v}
        if status == 304:
            return Answer(304, response.headers, None, got)
        if status == 404 and accept_missing:
            return Answer(404, response.headers, None)
        if status >= 500:
            raise ForgeUnavailable(f"{self.name} answered {status} to {method} {path}")
        wait = _rate_limited(response)
        if wait is not None:  # GitHub says 403 or 429, GitLab and Gitea 429: try later, not "no"
            said = refusal_text(_body(response)) or "rate limited"
            raise ForgeUnavailable(f"{self.name} is rate limiting Predictor X ({status}): {said}", retry_after=wait or None)
        if status >= 400:
            said = refusal_text(_body(response)) or response.reason_phrase or "no reason given"
            raise ForgeRefused(f"{self.name} refused ({status}): {said}", status)
        if status == 204 or not response.content:
            return Answer(status, response.headers, None, got)
        if text:
            return Answer(status, response.headers, response.text, got)
        try:
            return Answer(status, response.headers, response.json(), got)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ForgeUnavailable(f"{self.name} answered {method} {path} with something that is not JSON") from None

    def json(self, conn: Connection, method: str, path: str, **kw: Any) -> Any:
        return self.call(conn, method, path, **kw).body

    def get_list(self, conn: Connection, path: str, *, params: Mapping[str, Any] | None = None,
                 page_param: str = "per_page", page_size: int = 100, pages: int = 10) -> list[Any]:
        """A list endpoint, page by page (`page`), up to `pages` pages."""
        out: list[Any] = []
        for page in range(1, pages + 1):
            got = self.json(conn, "GET", path, params={**(params or {}), page_param: page_size, "page": page})
            if isinstance(got, dict):  # a wrapped list (GitHub check-runs) is the caller's to read
                raise ForgeUnavailable(f"{self.name} answered GET {path} with an object, not a list")
            if not isinstance(got, list):
                raise ForgeUnavailable(f"{self.name} answered GET {path} with something that is not a list")
            out.extend(got)
            if len(got) < page_size:
                break
        return out


def _rate_limited(response: httpx.Response) -> float | None:
    """Seconds to wait when the answer is a rate limit (0.0: limited, no time given); None when
    it is not one."""
    status, headers = response.status_code, response.headers
    if status not in (403, 429):
        return None
    exhausted = headers.get("x-ratelimit-remaining") == "0"
    if status == 403 and not exhausted and "retry-after" not in headers:
        return None  # a plain 403: the token may not do this
    try:
        if "retry-after" in headers:
            return max(0.0, float(headers["retry-after"]))
        if exhausted and headers.get("x-ratelimit-reset"):
            return max(0.0, float(headers["x-ratelimit-reset"]) - time.time())
    except ValueError:
        pass
    return 0.0


def _clean(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if params is None:
        return None
    return {k: ("true" if v is True else "false" if v is False else v) for k, v in params.items() if v is not None}


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text


@contextmanager
def readable(forge: str, what: str) -> Iterator[None]:
    """An answer of the wrong shape (a missing key, a null where an object was due) is the forge
    being unreadable, not a crash."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ForgeUnavailable(f"{forge} answered {what} in a shape Predictor X cannot read ({e!r})") from None


def mapping(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else {} (optional nested objects that may be null)."""
    return value if isinstance(value, dict) else {}
