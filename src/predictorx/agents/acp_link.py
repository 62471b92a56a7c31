"""The ACP connection's transport over the shared process runner, and the run's MCP servers.

The agent is started by `process.run_process` like every other CLI (its own process group, raw
logs, unbounded lines, the sandbox): its stdout lines arrive through the runner's line handler
and become JSON-RPC messages for the SDK (`acp._transport.Transport`: send/receive/close of
decoded dicts); what the SDK sends is written to the agent's stdin, which the runner hands over
for the whole conversation (`ProcessRequest.stdin_session`). A stdout line that is not JSON-RPC
(an agent's stray print) becomes a system message rather than breaking the connection.

MCP servers: the daemon adds agents-room and `predictorx mcp` to a run as Codex-style overrides
(`-c mcp_servers.NAME.command=…`, see daemon/workflowhooks.py and daemon/rooms.py); an ACP agent gets
them in `session/new` instead, so `split_overrides` takes them out of the argv.
"""

from __future__ import annotations

import asyncio
import json
import tomllib
from collections.abc import Awaitable, Callable
from typing import Any

from .adapter import parse_json_object

#: Codex flags the overrides come with that mean nothing to an ACP agent.
_CODEX_ONLY_FLAGS = ("--dangerously-bypass-hook-trust",)


class LineTransport:
    """JSON-RPC messages in from stdout lines, out to the agent's stdin."""

    def __init__(self, on_noise: Callable[[str], Awaitable[None]]):
        self._incoming: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._stdin: asyncio.Future[asyncio.StreamWriter] = asyncio.get_running_loop().create_future()
        self._release = asyncio.Event()
        self._on_noise = on_noise

    # -- the runner's side --
    async def on_line(self, line: str) -> None:
        message = parse_json_object(line)
        if message is None or message.get("jsonrpc") != "2.0":
            if line.strip():
                await self._on_noise(line)
            return
        self._incoming.put_nowait(message)

    async def hold_stdin(self, stdin: asyncio.StreamWriter) -> None:
        """The runner's `stdin_session`: keep stdin until the conversation is over."""
        if not self._stdin.done():
            self._stdin.set_result(stdin)
        await self._release.wait()

    def close_stdin(self) -> None:
        """End of the conversation: the agent reads EOF and (a well-behaved one) exits."""
        self._release.set()

    def end(self) -> None:
        """The process is gone: nothing more will arrive; the SDK fails what it still waits for."""
        self._incoming.put_nowait(None)
        if not self._stdin.done():
            self._stdin.set_exception(ConnectionError("the agent's process ended"))
            self._stdin.exception()  # retrieved: nobody else may be waiting
        self._release.set()

    # -- the SDK's side (acp._transport.Transport) --
    async def send(self, message: dict[str, Any]) -> None:
        if self._release.is_set():
            raise ConnectionError("the agent's stdin is closed")
        stdin = await self._stdin
        stdin.write(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
        await stdin.drain()

    async def receive(self) -> dict[str, Any] | None:
        return await self._incoming.get()

    async def close(self) -> None:
        self.close_stdin()


def split_overrides(args: list[str], env: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """(the MCP servers named by `-c mcp_servers.NAME.KEY=VALUE` pairs as ACP stdio or HTTP servers,
    the other arguments). Other `-c` pairs (Codex hooks and features) are dropped: ACP has no hooks.
    What Codex would read from its environment (`env_vars`, `env_http_headers`,
    `bearer_token_env_var`: an agent's secrets, agentconfig/mcpconfig.py) is read from `env` here, and
    goes to the agent in `session/new` only."""
    servers: dict[str, dict[str, Any]] = {}
    rest: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "-c" and i + 1 < len(args):
            _take_override(args[i + 1], servers)
            i += 2
            continue
        if word not in _CODEX_ONLY_FLAGS:
            rest.append(word)
        i += 1
    return [s for name, spec in servers.items() if (s := _server(name, spec, env or {}))], rest


def _server(name: str, spec: dict[str, Any], env: dict[str, str]) -> dict[str, Any] | None:
    def table(key: str) -> dict[str, Any]:
        value = spec.get(key)
        return value if isinstance(value, dict) else {}
    if isinstance(spec.get("url"), str):
        headers = {**{str(k): str(v) for k, v in table("http_headers").items()},
                   **{str(k): env.get(str(v), "") for k, v in table("env_http_headers").items()}}
        if isinstance(spec.get("bearer_token_env_var"), str):
            headers["Authorization"] = "Bearer " + env.get(spec["bearer_token_env_var"], "")
        return {"name": name, "url": spec["url"], "headers": [{"name": k, "value": v} for k, v in headers.items()]}
    if not isinstance(spec.get("command"), str):
        return None
    values = {str(k): str(v) for k, v in table("env").items()}
    values.update({str(n): env[str(n)] for n in spec.get("env_vars") or [] if str(n) in env})
    return {"name": name, "command": spec["command"], "args": [str(a) for a in spec.get("args") or []],
            "env": [{"name": k, "value": v} for k, v in values.items()]}


def _take_override(pair: str, servers: dict[str, dict[str, Any]]) -> None:
    key, sep, value = pair.partition("=")
    parts = key.split(".")
    if not sep or len(parts) != 3 or parts[0] != "mcp_servers":
        return
    try:
        parsed = tomllib.loads(f"v = {value}")["v"]
    except (tomllib.TOMLDecodeError, KeyError):
        return
    servers.setdefault(parts[1], {})[parts[2]] = parsed
