"""The daemon's side of the HTTP API: every call bounded by a timeout, transient failures retried
(daemon/retry.py), and — given several server URLs — failover to the next one (issue 14).

Several URLs are for replicas reached without a proxy (or for two proxies): a URL that does not
answer, or answers 502/503/504, hands the daemon on to the next one for this and later calls.
Behind one proxy, one URL is enough: the proxy itself routes around a dead replica.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx2 as httpx

from ..protocol import ClaimRequest, Heartbeat, MessageBatch, PushReport, Registration, RequestAnswer, TaskStatus
from .plainhttp import PlainHttp, eligible
from .retry import FAILOVER_STATUSES, ServerError, first_then_backoff

log = logging.getLogger("predictorx.daemon")

__all__ = ["ServerApi", "ServerError", "server_urls"]


def server_urls(value: str | list[str]) -> list[str]:
    """`http://a:8484,http://b:8484` (or a list) → the URLs, in order of preference."""
    parts = value if isinstance(value, list) else value.split(",")
    urls = [u.strip().rstrip("/") for u in parts if u.strip()]
    if not urls:
        raise ValueError("no server URL given")
    return urls


class ServerApi:
    def __init__(self, server_url: str | list[str], token: str | None, workspace: str | None = None,
                 timeout: float = 30.0):
        """`token`: this daemon's own token (None until it has registered). A person's token is
        only ever passed to `register` for the first registration, and not kept."""
        self.urls = server_urls(server_url)
        self._current = 0
        #: What the saved daemon token is filed under (daemon_token.json): the configured server.
        self.server_key = ",".join(self.urls)
        self.token = token
        self.workspace = workspace
        self.timeout = timeout
        self.http = httpx.AsyncClient(timeout=timeout, limits=httpx.Limits(max_connections=32))
        #: The calls to a plain-http URL without a proxy, over asyncio streams: a tenth of httpx's
        #: CPU per call (daemon/plainhttp.py, issue 30). The push connection stays with httpx.
        self.plain = PlainHttp(timeout)
        self._plain_urls = {u for u in self.urls if eligible(u, self.http)}

    @property
    def server_url(self) -> str:
        """The URL in use now (the agents are given this one)."""
        return self.urls[self._current]

    def _failed(self, index: int, why: str) -> None:
        """The URL at `index` failed: move on to the next one (once, however many calls saw it fail)."""
        if len(self.urls) > 1 and self._current == index:
            self._current = (index + 1) % len(self.urls)
            log.warning("server %s failed (%s); switching to %s", self.urls[index], why, self.server_url)

    def _headers(self, token: str | None = None) -> dict[str, str]:
        h = {"Authorization": f"Bearer {token or self.token}"}
        if self.workspace:
            h["X-Workspace"] = self.workspace
        return h

    async def _once(self, method: str, path: str, body: Any, token: str | None) -> Any:
        index = self._current
        url = self.urls[index]
        r: httpx.Response | Any
        plain = url in self._plain_urls
        # (encoded as httpx does; an unencodable body is the caller's error, not the server's)
        data = None if body is None or not plain else json.dumps(
            body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        try:
            if plain:
                r = await self.plain.request(method, url + path, data, self._headers(token))
            else:
                r = await self.http.request(method, url + path, json=body, headers=self._headers(token))
        except (httpx.TransportError, httpx.TimeoutException, OSError, asyncio.IncompleteReadError,
                TimeoutError, ValueError) as e:
            self._failed(index, str(e) or type(e).__name__)
            raise ServerError(0, f"server {url} unreachable: {e or type(e).__name__}") from e
        if r.status_code < 400:
            return json.loads(r.content) if r.content else None
        text = r.content.decode("utf-8", errors="replace")
        try:
            detail = json.loads(r.content).get("detail", text)
        except (ValueError, AttributeError):
            detail = text
        if r.status_code in FAILOVER_STATUSES:
            self._failed(index, f"HTTP {r.status_code}")
        raise ServerError(r.status_code, str(detail)[:500])

    async def call(self, method: str, path: str, body: Any = None, *, retries: int | None = 3,
                   token: str | None = None) -> Any:
        """One request; `retries` more tries on a transient failure (None: until it succeeds)."""
        return await first_then_backoff(lambda: self._once(method, path, body, token),
                                        None if retries is None else retries + 1)

    async def register(self, registration: Registration, user_token: str | None = None) -> dict[str, Any]:
        """With `user_token`: the first registration, answered with this daemon's token. Without:
        the daemon registers itself again (a restart) with its own token, which it keeps."""
        if user_token is None and self.token is None:
            raise ServerError(401, "this daemon has no token yet")
        answer = await self.call("POST", "/api/daemon/register", registration.to_wire(), token=user_token or self.token,
                                 retries=5)
        if answer.get("token"):
            self.token = answer["token"]
        return answer

    async def heartbeat(self, task_ids: list[str]) -> list[str]:
        body = Heartbeat(tuple(task_ids)).to_wire()
        return (await self.call("POST", "/api/daemon/heartbeat", body, retries=1))["cancelled"]

    async def claim(self, limit: int, task_id: str | None = None) -> list[dict[str, Any]]:
        body = ClaimRequest(limit, task_id).to_wire()
        return (await self.call("POST", "/api/daemon/claim", body, retries=1))["tasks"]

    async def status(self, task_id: str, status: str, wait_reason: str | None = None,
                     branch_name: str | None = None) -> dict[str, Any]:
        body = TaskStatus(status, wait_reason, branch_name).to_wire()
        return await self.call("POST", f"/api/daemon/tasks/{task_id}/status", body, retries=6)

    async def finish(self, task_id: str, **fields: Any) -> dict[str, Any]:
        return await self.call("POST", f"/api/daemon/tasks/{task_id}/finish", fields, retries=10)

    async def release(self, task_id: str) -> dict[str, Any]:
        return await self.call("POST", f"/api/daemon/tasks/{task_id}/release", {}, retries=3)

    async def upload(self, task_id: str, batch: MessageBatch) -> dict[str, Any]:
        """A batch of messages (and the run's usage so far): `{"last_seq": …, "stop": reason | None}`."""
        return await self.call("POST", f"/api/tasks/{task_id}/messages", batch.to_wire(), retries=0)

    async def answer(self, request_id: str, ok: bool, error: str | None = None,
                     data: dict[str, Any] | None = None) -> None:
        body = RequestAnswer(ok, error, data).to_wire()
        await self.call("POST", f"/api/daemon/requests/{request_id}", body, retries=1)

    async def forge_target(self, task_id: str) -> dict[str, Any]:
        """Where and with what this daemon pushes (or fetches) the task's branch: its answer holds
        the forge credential, which goes only into git's environment (daemon/forgepush.py)."""
        return await self.call("GET", f"/api/daemon/tasks/{task_id}/forge-target", retries=2)

    async def forge_pushed(self, task_id: str, report: PushReport) -> None:
        await self.call("POST", f"/api/daemon/tasks/{task_id}/forge-push", report.to_wire(), retries=6)

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """The push connection: server-sent events, one JSON object each."""
        timeout = httpx.Timeout(self.timeout, read=60.0)  # pings arrive every 15 s
        index = self._current
        url = self.urls[index]
        try:
            async with self.http.stream("GET", url + "/api/daemon/events", headers=self._headers(),
                                        timeout=timeout) as r:
                if r.status_code >= 400:
                    await r.aread()
                    if r.status_code in FAILOVER_STATUSES:
                        self._failed(index, f"HTTP {r.status_code}")
                    raise ServerError(r.status_code, r.text[:300])
                async for line in r.aiter_lines():
                    if line.startswith("data:"):
                        try:
                            yield json.loads(line[5:].strip())
                        except ValueError:
                            log.warning("ignoring a malformed event: %.200s", line)
        except (httpx.TransportError, httpx.TimeoutException) as e:
            self._failed(index, str(e) or type(e).__name__)
            raise ServerError(0, f"push connection to {url} lost: {e or type(e).__name__}") from e

    async def close(self) -> None:
        await self.plain.aclose()
        await self.http.aclose()
