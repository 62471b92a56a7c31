"""An MCP server over streamable HTTP on 127.0.0.1 (the official SDK's), recording the
Authorization header of every request it gets: what an agent's own MCP server (issue 28 §3) sees
when the agent's CLI connects with a header that names one of the agent's secrets."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.types import Receive, Scope, Send

TOOL = "lookup_docs"


class RecordingMcp:
    """Answers only requests that carry `Authorization: Bearer <token>` (others: 401)."""

    def __init__(self, token: str) -> None:
        self.authorizations: list[str] = []
        server = MCPServer("docs")

        @server.tool(name=TOOL, description="Look a topic up in the team's documentation.")
        def lookup_docs(topic: str) -> str:
            return f"The docs say nothing about {topic}."

        inner = server.streamable_http_app()

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                said = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
                self.authorizations.append(said)
                if said != f"Bearer {token}":
                    await send({"type": "http.response.start", "status": 401,
                                "headers": [(b"content-type", b"text/plain")]})
                    await send({"type": "http.response.body", "body": b"no or wrong token"})
                    return
            await inner(scope, receive, send)

        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/mcp"
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the MCP server did not start in 30 s")
            time.sleep(0.02)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()
