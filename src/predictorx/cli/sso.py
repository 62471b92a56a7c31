"""`predictorx login --sso`: a personal token through the server's OpenID provider (issue 28 §1).

Where the provider offers the device authorization grant: the server starts it, this prints the
address and the user code, and polls the server (which polls the provider) until the person has
approved it in any browser. Else the loopback redirect: this listens on 127.0.0.1 (a free port),
sends the browser to the server's `/auth/oidc/{name}/cli?redirect=http://127.0.0.1:PORT/callback`,
and the server, once the person signed in at the provider, sends the browser back here with a
single-use code, which this redeems for the token. The token is never in argv or printed.
"""

from __future__ import annotations

import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from .client import Client, fail, seg

LOOPBACK_WAIT_S = 600.0


def anonymous(server_url: str) -> Client:
    client = Client(server_url=server_url, token="-")  # (no token yet: public routes only)
    client.headers.pop("Authorization", None)
    return client


def choose(providers: list[dict[str, Any]], wanted: str | None) -> dict[str, Any]:
    if not providers:
        fail("this server has no OpenID provider; an operator adds one with `predictorx server oidc add`")
    if wanted:
        found = next((p for p in providers if p["name"] == wanted), None)
        if found is None:
            fail(f"no provider {wanted!r} on this server; it has: {', '.join(p['name'] for p in providers)}")
        return found
    if len(providers) > 1:
        fail(f"this server has several providers; pick one with --provider ({', '.join(p['name'] for p in providers)})")
    return providers[0]


def say(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def by_device(client: Client, provider: dict[str, Any]) -> str:
    started = client.post("/api/sso/device", {"provider": provider["name"]})
    where = started.get("verification_uri_complete") or started["verification_uri"]
    say(f"To sign in with {provider['display_name']}, open {where}")
    say(f"and confirm the code {started['user_code']} (valid {started['expires_in'] // 60} minutes).")
    interval = float(started["interval"])
    deadline = time.monotonic() + float(started["expires_in"])
    while time.monotonic() < deadline:
        time.sleep(interval)
        answer = client.post("/api/sso/device/poll", {"handle": started["handle"]})
        if answer["status"] == "done":
            return answer["token"]
        interval = float(answer.get("interval") or interval)
    fail("the device sign-in expired before it was approved; run `predictorx login --sso` again")
    raise AssertionError  # (fail exits)


class _Catch(BaseHTTPRequestHandler):
    code: str | None = None
    done = threading.Event()

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        codes = parse_qs(parts.query).get("code")
        if parts.path != "/callback" or not codes:
            self.send_response(404)
            self.end_headers()
            return
        type(self).code = codes[0]
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.end_headers()
        self.wfile.write(b"Signed in: you can close this tab and go back to the terminal.\n")
        type(self).done.set()

    def log_message(self, *args: object) -> None:  # nothing on the terminal
        pass


def by_loopback(client: Client, provider: dict[str, Any], open_browser: bool) -> str:
    class catch(_Catch):  # (its own code and event: one sign-in)
        code = None
        done = threading.Event()

    server = HTTPServer(("127.0.0.1", 0), catch)
    thread = threading.Thread(target=server.serve_forever, name="sso-loopback", daemon=True)
    thread.start()
    try:
        back = f"http://127.0.0.1:{server.server_address[1]}/callback"
        url = f"{client.server_url}/auth/oidc/{seg(provider['name'])}/cli?redirect={quote(back, safe='')}"
        say(f"To sign in with {provider['display_name']}, open {url}")
        if open_browser:
            import webbrowser

            webbrowser.open(url)
        if not catch.done.wait(LOOPBACK_WAIT_S):
            fail("no sign-in came back within 10 minutes; run `predictorx login --sso` again")
    finally:
        server.shutdown()
        server.server_close()
    return client.post("/api/sso/redeem", {"code": catch.code})["token"]


def sign_in(server_url: str, wanted: str | None, *, open_browser: bool, loopback: bool = False) -> str:
    """A personal token for this person, through the server's provider."""
    client = anonymous(server_url)
    provider = choose(client.get("/api/sso/providers"), wanted)
    if provider.get("device") and not loopback:
        return by_device(client, provider)
    return by_loopback(client, provider, open_browser)
