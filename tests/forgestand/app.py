"""The stand-in's HTTP side, forge-neutral: authenticate, find the operation in the forge's own
description, check the request, run the forge module's handler, check the answer, ETag/304, count.

A flavour (github.py, gitlab.py, gitea.py) supplies the API prefix, how a token is presented, the
forge's error shapes and one handler per operationId of its description.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import parse_qsl, unquote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .openapi import ApiDescription, Descriptions, Operation
from .paging import http_date, last_modified, not_modified_since, paginate

if TYPE_CHECKING:
    from .standin import StandIn


@dataclass
class Call:
    method: str
    path: str
    query: str
    status: int
    operation_id: str = ""
    at: float = field(default_factory=time.time)  # when the request arrived
    answered_at: float = 0.0                      # when its answer was ready
    peer: str = ""                                # the client's address:port (one per TCP connection)


@dataclass
class Answer:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Ctx:
    """One request as a handler sees it (path values decoded)."""

    standin: "StandIn"
    params: dict[str, str]
    query: dict[str, str]
    body: Any
    headers: dict[str, str]


Handler = Callable[[Ctx], Answer]


class Flavour:
    """What differs between forges on the wire. Subclasses fill the class attributes."""

    kind = ""
    api_prefix = ""
    handlers: dict[str, Handler] = {}
    #: Raw paths served outside the description (POST only), e.g. GitHub's /api/graphql.
    extra_paths: dict[str, Handler] = {}
    #: GitHub answers a single resource with Last-Modified and honours If-Modified-Since.
    sends_last_modified = False

    def common_headers(self, standin: "StandIn", answer: Answer) -> dict[str, str]:
        """Headers the forge puts on every API answer (GitHub's rate-limit headers)."""
        return {}

    def description(self) -> "ApiDescription | Descriptions":
        raise NotImplementedError

    def presented_token(self, headers: dict[str, str]) -> str | None:
        raise NotImplementedError

    def error(self, status: int, message: str) -> Answer:
        raise NotImplementedError

    def unauthorized(self) -> Answer:
        return self.error(401, "Bad credentials")

    def rate_limited(self, standin: "StandIn", retry_after: int) -> Answer:
        """An exhausted rate limit (GitLab and Gitea: 429 with Retry-After)."""
        answer = self.error(429, "Retry later")
        answer.headers["Retry-After"] = str(retry_after)
        return answer

    def not_found(self) -> Answer:
        return self.error(404, "Not Found")

    def invalid(self, problems: list[str]) -> Answer:
        return self.error(422, "Validation Failed: " + "; ".join(problems))


def _json_body(raw: bytes) -> tuple[Any, bool, str | None]:
    if not raw.strip():
        return None, False, None
    try:
        return json.loads(raw), True, None
    except ValueError as exc:
        return None, True, f"the request body is not JSON ({exc})"


def _encode(answer: Answer) -> bytes:
    if answer.body is None:
        return b""
    if answer.headers.get("Content-Type", "").startswith("text/plain"):
        return str(answer.body).encode()
    return json.dumps(answer.body).encode()


def _etag(payload: bytes) -> str:
    return 'W/"' + hashlib.sha1(payload).hexdigest() + '"'


class StandInApp:
    """The ASGI side of one stand-in: git's auth subrequest and every API request."""

    def __init__(self, standin: "StandIn", flavour: Flavour):
        self.standin = standin
        self.flavour = flavour
        self.description = flavour.description()

    async def git_auth(self, request: Request) -> Response:
        """nginx's auth_request for a git smart-HTTP request: any user name, the right token."""
        header = request.headers.get("authorization", "")
        ok = False
        if header.lower().startswith("basic "):
            try:
                _user, _, password = base64.b64decode(header[6:]).decode().partition(":")
                ok = password == self.standin.token
            except ValueError:
                ok = False
        status = 200 if ok else 401
        self.standin.git_requests.append((request.headers.get("x-original-uri", ""), status))
        realm = {} if ok else {"WWW-Authenticate": f'Basic realm="{self.flavour.kind} stand-in"'}
        return Response(status_code=status, headers=realm)

    def _authorised(self, request: Request) -> bool:
        return self.flavour.presented_token({k.lower(): v for k, v in request.headers.items()}) == self.standin.token

    def _done(self, record: Call, answer: Answer, payload: bytes | None = None) -> Response:
        record.status = answer.status
        record.answered_at = time.time()
        self.standin.calls.append(record)
        return self._send(answer, payload)

    async def api(self, request: Request) -> Response:
        raw_path = request.scope.get("raw_path", request.url.path.encode()).decode().split("?", 1)[0]
        if raw_path in self.flavour.extra_paths and request.method == "POST":
            return await self._extra(request, raw_path)
        if not raw_path.startswith(self.flavour.api_prefix + "/"):
            return self._send(self.flavour.not_found(), None)
        rest = raw_path[len(self.flavour.api_prefix):]
        query_pairs = parse_qsl(request.url.query, keep_blank_values=True)
        record = Call(request.method, rest, request.url.query, 0, peer=_peer(request))
        if not self._authorised(request):
            return self._done(record, self.flavour.unauthorized())
        if self.standin.rate_limited_until > time.time():
            wait = max(1, int(self.standin.rate_limited_until - time.time()))
            return self._done(record, self.flavour.rate_limited(self.standin, wait))
        found = self.description.match(request.method, rest)
        if found is None:
            self.standin.violation(f"{request.method} {self.flavour.api_prefix}{rest}: no such operation in "
                                   f"{self.description.name}")
            return self._done(record, self.flavour.not_found())
        op, raw_values = found
        record.operation_id = op.operation_id
        body, has_body, not_json = _json_body(await request.body())
        problems = [not_json] if not_json else self.description.check_request(op, raw_values, query_pairs, body, has_body)
        for problem in problems:
            self.standin.violation(problem)
        if problems:
            answer = self.flavour.invalid(problems)
        else:
            answer = await self._handle(request, op, raw_values, dict(query_pairs), body)
        if request.method == "GET" and answer.status == 200:
            answer = self._conditional(request, answer, raw_path, dict(query_pairs))
        return self._done(record, answer, _encode(answer))

    async def _handle(self, request: Request, op: Operation, raw_values: dict[str, str], query: dict[str, str],
                      body: Any) -> Answer:
        """Run the flavour's handler for a valid request and hold its answer to the description."""
        handler = self.flavour.handlers.get(op.operation_id)
        if handler is None:
            self.standin.violation(f"{op.method} {op.template} ({op.operation_id}) is valid but the stand-in does "
                                   "not implement it: ask the forge-standins helper")
            return self.flavour.not_found()
        ctx = Ctx(self.standin, {k: unquote(v) for k, v in raw_values.items()}, query, body,
                  {k.lower(): v for k, v in request.headers.items()})
        answer = await run_in_threadpool(handler, ctx)
        for problem in self.description.check_response(op, answer.status, answer.body, answer.body is not None):
            self.standin.violation(f"stand-in answer: {problem}")
        return answer

    def _conditional(self, request: Request, answer: Answer, raw_path: str, query: dict[str, str]) -> Answer:
        """A page of a list (as the forge pages it), ETag / If-None-Match, and on GitHub
        Last-Modified / If-Modified-Since; a 304 when the client's copy is current."""
        if isinstance(answer.body, list):
            answer.body, headers = paginate(self.flavour.kind, self.standin.base_url + raw_path, query, answer.body)
            answer.headers.update(headers)
        tag = _etag(_encode(answer))
        answer.headers["ETag"] = tag
        changed = last_modified(answer.body) if self.flavour.sends_last_modified else None
        if changed is not None:
            answer.headers["Last-Modified"] = http_date(changed)
        validators = {k: v for k, v in answer.headers.items() if k in ("ETag", "Last-Modified")}
        if_none_match = request.headers.get("if-none-match")
        if if_none_match is not None:
            if tag in [t.strip() for t in if_none_match.split(",")]:
                return Answer(304, None, validators)
        elif changed is not None and not_modified_since(request.headers.get("if-modified-since", ""), changed):
            return Answer(304, None, validators)
        return answer

    async def _extra(self, request: Request, raw_path: str) -> Response:
        """A path outside the REST description (GitHub's GraphQL endpoint): its own handler checks it."""
        record = Call(request.method, raw_path, request.url.query, 0, raw_path, peer=_peer(request))
        if not self._authorised(request):
            return self._done(record, self.flavour.unauthorized())
        body, _has_body, not_json = _json_body(await request.body())
        if not_json or not isinstance(body, dict):
            self.standin.violation(f"POST {raw_path}: {not_json or 'the body is not a JSON object'}")
            return self._done(record, self.flavour.error(400, "Problems parsing JSON"))
        ctx = Ctx(self.standin, {}, {}, body, {k.lower(): v for k, v in request.headers.items()})
        return self._done(record, await run_in_threadpool(self.flavour.extra_paths[raw_path], ctx))

    def _send(self, answer: Answer, payload: bytes | None) -> Response:
        if payload is None:
            payload = _encode(answer)
        answer.headers.update(self.flavour.common_headers(self.standin, answer))
        media = None if not payload or "Content-Type" in answer.headers else "application/json; charset=utf-8"
        return Response(payload if answer.status != 304 else b"", status_code=answer.status,
                        headers=answer.headers, media_type=media)


def build_app(standin: "StandIn", flavour: Flavour) -> Starlette:
    app = StandInApp(standin, flavour)
    return Starlette(routes=[Route("/_standin/git-auth", app.git_auth, methods=["GET"]),
                             Route("/{path:path}", app.api, methods=["GET", "POST", "PUT", "PATCH", "DELETE"])])


def _peer(request: Request) -> str:
    return f"{request.client.host}:{request.client.port}" if request.client else ""
