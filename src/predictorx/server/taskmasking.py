"""What an agent sends with its task token never stores its own secrets (issue 28 §2).

A run's secrets are in the agent's environment; the daemon masks them in everything it uploads,
but the agent also writes to the server itself with its task token — comments, handoffs, beans,
workflow steps, classifications, its issue's fields. Rather than each of those routes (and every
later one) remembering to mask, this pure ASGI middleware masks the body of every writing request
made with a task token before any route parses it: each secret value of the task's agent — as it
is, and as JSON writes it escaped — becomes secretmask.MASK. A request from a person or a daemon,
or from an agent without secrets, passes untouched and costs no query.

It sits inside BodyGuard, so the body it reads is already bounded. The principal it
authenticated is left in the scope, so the role matrix does not look the token up again.
"""

from __future__ import annotations

import json

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from ..secretmask import Masker
from ..service import agentenv, auth
from ..service.errors import ClientError
from .bodyguard import replay_body, streamed
from .deps import PRINCIPAL_KEY

_WRITES = frozenset({"POST", "PUT", "PATCH"})
_TASK_PREFIX = auth.PREFIX["task"].encode()


def _bearer(scope: Scope) -> bytes | None:
    for name, value in scope.get("headers") or ():
        if name == b"authorization" and value[:7].lower() == b"bearer ":
            return value[7:].strip()
    return None


def _forms(values: list[str]) -> list[str]:
    """A secret as it may appear in a JSON body: plain, and escaped as JSON writes it."""
    out = set(values)
    for v in values:
        out.add(json.dumps(v)[1:-1])
        out.add(json.dumps(v, ensure_ascii=False)[1:-1])
    return sorted(out)


def _task_secrets(state, raw: str) -> tuple[auth.Principal | None, list[str]]:
    with state.read() as session:
        try:
            principal = auth.authenticate(session, raw)
        except ClientError:
            return None, []  # the role matrix answers 401 with its own sentence
        task = auth.task_of(session, principal)
        return principal, agentenv.secret_values(session, task.agent_id) if task is not None else []


class TaskSecretMasking:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # (a git pack through the forge relay is not read here: it is not bounded by BodyGuard,
        # it is stored nowhere, and the relay takes no task token)
        if scope["type"] != "http" or scope["method"] not in _WRITES or streamed(scope):
            await self.app(scope, receive, send)
            return
        raw = _bearer(scope)
        if raw is None or not raw.startswith(_TASK_PREFIX):
            await self.app(scope, receive, send)
            return
        principal, secrets = await run_in_threadpool(_task_secrets, scope["app"].state.px, raw.decode("latin-1"))
        if principal is not None:
            scope[PRINCIPAL_KEY] = principal
        if not secrets:
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        masked = Masker(_forms(secrets)).data(body)
        headers = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
        headers.append((b"content-length", str(len(masked)).encode()))
        await self.app({**scope, "headers": headers}, replay_body(masked, receive), send)


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)
