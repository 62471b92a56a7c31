"""The Predictor X API over HTTP, as one person's (or one task's) client: the CLI, `predictorx up`
and the daemon's in-task commands (`repo checkout`) share it. Every failure becomes a `CliError`
— one sentence for stderr and an exit code — so no caller shows a traceback to a person.

It speaks HTTP with the standard library: people and agents run the CLI all day, one or two
requests a time, and an HTTP library's import cost several times the request itself (issue 23,
item 9; bench/cli_start.py). A plain http:// request without a proxy (the local server; an agent
on loopback) is written on a socket here — http.client alone would import email and ssl, a
quarter of a command's start; https:// and proxies go through http.client. Proxies come from the environment as for any HTTP client
(HTTP(S)_PROXY, ALL_PROXY, NO_PROXY: an agent in an allowlisted sandbox reaches a remote server
through one).

It lives outside cli/ so the daemon can use it without importing the CLI (import-linter contract
in pyproject.toml)."""

from __future__ import annotations

import json
import os
from typing import Any, NoReturn
from urllib.parse import urlencode, urlsplit

from . import config
from .http1 import Malformed, read_response


class CliError(Exception):
    """Shown to the user as one sentence; exit code 1 (2 for usage mistakes)."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.message = message
        self.code = code


def fail(message: str, code: int = 1) -> NoReturn:
    raise CliError(message, code)


class Answer:
    """What the server answered: its status and body."""

    def __init__(self, status_code: int, content: bytes):
        self.status_code = status_code
        self.content = content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


class Unreachable(Exception):
    """No connection to the server (refused, no route, unknown name, TLS handshake)."""


class BadAnswer(OSError):
    """The server's answer is not HTTP we can read (cut short, malformed)."""


def query(params: dict[str, Any] | None) -> str:
    """`params` as a query string, the way HTTP clients write them (None: empty, bools: true/false)."""
    def text(v: Any) -> str:
        return "" if v is None else ("true" if v is True else "false" if v is False else str(v))

    pairs = [(k, text(item)) for k, v in (params or {}).items() for item in (v if isinstance(v, (list, tuple)) else [v])]
    return urlencode(pairs)


def _proxy_for(scheme: str, host: str) -> str | None:
    if not any(k.lower().endswith("_proxy") for k in os.environ):  # the common case: no proxy, no import
        return None
    from urllib.request import getproxies_environment, proxy_bypass

    proxies = getproxies_environment()
    proxy = proxies.get(scheme) or proxies.get("all")
    return None if not proxy or proxy_bypass(host) else proxy


def send(method: str, url: str, headers: dict[str, str], body: bytes | None, timeout: float) -> Answer:
    """One request; raises Unreachable, TimeoutError or OSError (BadAnswer for an unreadable answer)."""
    parts = urlsplit(url)
    secure = parts.scheme == "https"
    host, port = parts.hostname or "", parts.port or (443 if secure else 80)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    proxy = _proxy_for(parts.scheme, host)
    headers = {**headers, "Host": parts.netloc.rsplit("@", 1)[-1]}
    if not proxy and not secure:
        return _send_plain(method, (host, port), target, headers, body, timeout)
    import http.client

    try:
        return _send_http_client(method, url, (host, port), target, headers, body, timeout, proxy)
    except http.client.HTTPException as e:
        raise BadAnswer(str(e) or type(e).__name__) from e


def _send_http_client(method: str, url: str, address: tuple[str, int], target: str, headers: dict[str, str],
                      body: bytes | None, timeout: float, proxy: str | None) -> Answer:
    import http.client

    secure = url.startswith("https:")
    host, port = address
    if proxy:
        p = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if p.username:
            import base64

            auth = base64.b64encode(f"{p.username}:{p.password or ''}".encode()).decode()
            headers["Proxy-Authorization"] = f"Basic {auth}"
        if secure:  # a CONNECT tunnel to the server through the proxy
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(p.hostname or "", p.port or 80, timeout=timeout)
            conn.set_tunnel(host, port, headers={k: v for k, v in headers.items() if k == "Proxy-Authorization"})
        else:  # the absolute URL to the proxy
            conn = http.client.HTTPConnection(p.hostname or "", p.port or 80, timeout=timeout)
            target = url
    elif secure:
        conn = http.client.HTTPSConnection(host, port, timeout=timeout)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        try:
            conn.connect()
        except TimeoutError:
            raise
        except OSError as e:
            raise Unreachable(str(e)) from e
        conn.request(method, target, body=body, headers=headers)
        response = conn.getresponse()
        return Answer(response.status, response.read())
    finally:
        conn.close()


def _send_plain(method: str, address: tuple[str, int], target: str, headers: dict[str, str], body: bytes | None,
                timeout: float) -> Answer:
    """HTTP/1.1 on a socket, one request per connection (`Connection: close`), the answer read by its
    framing (http1.read_response)."""
    import socket

    try:
        sock = socket.create_connection(address, timeout=timeout)
    except TimeoutError:
        raise
    except OSError as e:
        raise Unreachable(str(e)) from e
    lines = [f"{method} {target} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items()), "Connection: close"]
    if body is not None or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body or b'')}")
    with sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b""))
        try:
            status, content = read_response(sock, method, timeout)
        except Malformed as e:
            raise BadAnswer(str(e)) from None
    return Answer(status, content)


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
        if urlsplit(self.server_url).scheme not in ("http", "https"):
            fail(f"the server URL {self.server_url} is not an http:// or https:// URL")
        self.headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if self.workspace:
            self.headers["X-Workspace"] = self.workspace
        self.timeout = timeout

    def send(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> Answer:
        """The transport (tests put an in-process app here)."""
        return send(method, url, headers, body, self.timeout)

    def request(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None,
                headers: dict[str, str] | None = None) -> Any:
        url = self.server_url + path + (f"?{query(params)}" if params else "")
        headers = {**self.headers, **(headers or {})}
        body = None
        if json is not None:
            body = _json_bytes(json)
            headers["Content-Type"] = "application/json"
        try:
            r = self.send(method, url, headers, body)
        except Unreachable:
            fail(f"cannot reach the Predictor X server at {self.server_url}; start it with `predictorx up` "
                 "or point PREDICTORX_SERVER_URL at a running one")
        except TimeoutError:
            fail(f"the server at {self.server_url} did not answer in time; try again")
        except OSError as e:
            fail(f"talking to {self.server_url} failed: {e or type(e).__name__}")
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
        try:
            return r.json()
        except ValueError:  # (a proxy's or another program's page on that address)
            fail(f"the server at {self.server_url} answered {r.status_code} with something that is not JSON: "
                 f"{r.text[:120]!r}; is PREDICTORX_SERVER_URL a Predictor X server?")

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("POST", path, json=body if body is not None else {}, **kw)

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, json=body)

    def put(self, path: str, body: Any) -> Any:
        return self.request("PUT", path, json=body)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value).encode()
