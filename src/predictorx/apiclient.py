"""The Predictor X API over HTTP, as one person's (or one task's) client: the CLI, `predictorx up`
and the daemon's in-task commands (`repo checkout`) share it. Every failure becomes a `CliError`
— one sentence for stderr and an exit code — so no caller shows a traceback to a person.

It lives outside cli/ so the daemon can use it without importing the CLI (import-linter contract
in pyproject.toml)."""

from __future__ import annotations

from typing import Any, NoReturn

import httpx2 as httpx

from . import config


class CliError(Exception):
    """Shown to the user as one sentence; exit code 1 (2 for usage mistakes)."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.message = message
        self.code = code


def fail(message: str, code: int = 1) -> NoReturn:
    raise CliError(message, code)


class Client:
    def __init__(self, server_url: str | None = None, token: str | None = None, workspace: str | None = None,
                 timeout: float = 30.0):
        cfg = config.client_config()
        self.server_url = (server_url or cfg.server_url or "").rstrip("/")
        self.token = token or cfg.token
        self.workspace = workspace or cfg.workspace_id
        if not self.server_url or not self.token:
            fail("no server configured: start one with `predictorx up`, or run "
                 "`predictorx login --server-url URL --token TOKEN`")
        headers = {"Authorization": f"Bearer {self.token}"}
        if self.workspace:
            headers["X-Workspace"] = self.workspace
        self.http = httpx.Client(base_url=self.server_url, headers=headers, timeout=timeout)

    def request(self, method: str, path: str, **kw: Any) -> Any:
        try:
            r = self.http.request(method, path, **kw)
        except httpx.ConnectError:
            fail(f"cannot reach the Predictor X server at {self.server_url}; start it with `predictorx up` "
                 "or point PREDICTORX_SERVER_URL at a running one")
        except httpx.TimeoutException:
            fail(f"the server at {self.server_url} did not answer in time; try again")
        except httpx.HTTPError as e:
            fail(f"talking to {self.server_url} failed: {e}")
        if r.status_code >= 400:
            try:
                detail = r.json().get("detail")
            except (ValueError, AttributeError):
                detail = None
            if r.status_code == 401:
                fail(f"{detail or 'not authorised'}")
            fail(detail if isinstance(detail, str) else f"the server answered {r.status_code}: {r.text[:300]}")
        if r.status_code == 204 or not r.content:
            return None
        return r.json()

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("POST", path, json=body if body is not None else {}, **kw)

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, json=body)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)
