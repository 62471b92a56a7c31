"""The daemon's side of the HTTP API: every call bounded by a timeout, transient failures retried."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx2 as httpx

log = logging.getLogger("predictorx.daemon")


class ServerError(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


class ServerApi:
    def __init__(self, server_url: str, token: str, workspace: str | None = None, timeout: float = 30.0):
        self.server_url = server_url.rstrip("/")
        self.user_token = token
        self.token = token
        self.workspace = workspace
        self.timeout = timeout
        self.http = httpx.AsyncClient(base_url=self.server_url, timeout=timeout,
                                      limits=httpx.Limits(max_connections=32))

    def _headers(self, token: str | None = None) -> dict[str, str]:
        h = {"Authorization": f"Bearer {token or self.token}"}
        if self.workspace:
            h["X-Workspace"] = self.workspace
        return h

    async def call(self, method: str, path: str, body: Any = None, *, retries: int = 3,
                   token: str | None = None) -> Any:
        delay = 0.2
        for attempt in range(retries + 1):
            try:
                r = await self.http.request(method, path, json=body, headers=self._headers(token))
            except (httpx.TransportError, httpx.TimeoutException) as e:
                if attempt == retries:
                    raise ServerError(0, f"server unreachable: {e}") from e
            else:
                if r.status_code < 400:
                    return r.json() if r.content else None
                try:
                    detail = r.json().get("detail", r.text)
                except ValueError:
                    detail = r.text
                if r.status_code < 500 or attempt == retries:
                    raise ServerError(r.status_code, str(detail))
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5)
        raise AssertionError("unreachable")

    async def register(self, payload: dict[str, Any]) -> dict[str, Any]:
        answer = await self.call("POST", "/api/daemon/register", payload, token=self.user_token, retries=5)
        self.token = answer["token"]
        return answer

    async def heartbeat(self, task_ids: list[str]) -> list[str]:
        return (await self.call("POST", "/api/daemon/heartbeat", {"task_ids": task_ids}, retries=1))["cancelled"]

    async def claim(self, limit: int, task_id: str | None = None) -> list[dict[str, Any]]:
        body: dict[str, Any] = {"limit": limit}
        if task_id:
            body["task_id"] = task_id
        return (await self.call("POST", "/api/daemon/claim", body, retries=1))["tasks"]

    async def status(self, task_id: str, status: str, wait_reason: str | None = None,
                     branch_name: str | None = None) -> dict[str, Any]:
        body = {"status": status, "wait_reason": wait_reason, "branch_name": branch_name}
        return await self.call("POST", f"/api/daemon/tasks/{task_id}/status", body, retries=6)

    async def finish(self, task_id: str, **fields: Any) -> dict[str, Any]:
        return await self.call("POST", f"/api/daemon/tasks/{task_id}/finish", fields, retries=10)

    async def release(self, task_id: str) -> dict[str, Any]:
        return await self.call("POST", f"/api/daemon/tasks/{task_id}/release", {}, retries=3)

    async def messages(self, task_id: str, batch: list[dict[str, Any]]) -> int:
        return (await self.call("POST", f"/api/tasks/{task_id}/messages", {"messages": batch}, retries=2))["last_seq"]

    async def answer(self, request_id: str, ok: bool, error: str | None = None) -> None:
        await self.call("POST", f"/api/daemon/requests/{request_id}", {"ok": ok, "error": error}, retries=1)

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """The push connection: server-sent events, one JSON object each."""
        timeout = httpx.Timeout(self.timeout, read=60.0)  # pings arrive every 15 s
        async with self.http.stream("GET", "/api/daemon/events", headers=self._headers(), timeout=timeout) as r:
            if r.status_code >= 400:
                await r.aread()
                raise ServerError(r.status_code, r.text[:300])
            async for line in r.aiter_lines():
                if line.startswith("data:"):
                    try:
                        yield json.loads(line[5:].strip())
                    except ValueError:
                        log.warning("ignoring a malformed event: %.200s", line)

    async def close(self) -> None:
        await self.http.aclose()
