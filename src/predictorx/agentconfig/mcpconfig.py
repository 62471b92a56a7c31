"""An agent's own MCP servers (issue 28 §3), as each CLI's MCP configuration takes them.

A server is a stdio command (`command`, `args`, literal `env`, and `env_vars`: names of the run's
environment variables it gets, e.g. the agent's secrets) or an HTTP URL (`url`, literal
`headers`, `env_headers`: header → the variable whose value it carries, `bearer_env`: the variable
sent as `Authorization: Bearer …`). A secret is only ever named, never written: Claude Code gets
`${NAME}` (it expands them from its own environment), Codex `env_vars`, `env_http_headers` and
`bearer_token_env_var` (it reads them from its environment), an ACP agent the values in
`session/new`, over its stdin (acp_session.py). Literal values are not secret: they are shown in
the API and, for Codex, are on its command line (`-c`).

Beside agents-room and `predictorx mcp` (daemon/workflowhooks.py, daemon/rooms.py), whose names are
reserved. Pure: `normalize` checks a list as the API gives it, the renderers build each CLI's form.
"""

from __future__ import annotations

import json
import re
from typing import Any

NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,40}")
VAR_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
HEADER_RE = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}")
RESERVED = ("predictorx", "agents-room", "agents_room")
MAX_SERVERS = 20
MAX_ITEMS = 100
MAX_TEXT = 4000


class McpConfigError(ValueError):
    """A server list that cannot be used; the message is one sentence for a person."""


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_TEXT or "\0" in value:
        raise McpConfigError(f"{what} must be a non-empty text of at most {MAX_TEXT} characters")
    return value


def _names(values: Any, what: str) -> list[str]:
    if values is None:
        return []
    if not isinstance(values, list) or len(values) > MAX_ITEMS or not all(
            isinstance(v, str) and VAR_RE.fullmatch(v) for v in values):
        raise McpConfigError(f"{what} must be a list of environment variable names")
    return list(dict.fromkeys(values))


def _mapping(values: Any, what: str, key_re: re.Pattern[str], value_re: re.Pattern[str] | None = None) -> dict[str, str]:
    if values is None:
        return {}
    if not isinstance(values, dict) or len(values) > MAX_ITEMS:
        raise McpConfigError(f"{what} must be an object of at most {MAX_ITEMS} entries")
    out = {}
    for key, value in values.items():
        if not isinstance(key, str) or not key_re.fullmatch(key):
            raise McpConfigError(f"{what}: {key!r} is not a valid name")
        out[key] = _text(value, f"{what}.{key}")
        if value_re is not None and not value_re.fullmatch(value):
            raise McpConfigError(f"{what}.{key} must name an environment variable")
    return out


def _one(spec: Any) -> dict[str, Any]:
    if not isinstance(spec, dict):
        raise McpConfigError("each MCP server is an object with a name and a command or a url")
    name = spec.get("name")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or name.lower() in RESERVED:
        raise McpConfigError(f"MCP server name {name!r}: letters, digits, - and _ (up to 40), and not one of "
                             f"{', '.join(RESERVED)}")
    known = {"name", "command", "args", "env", "env_vars", "url", "headers", "env_headers", "bearer_env"}
    if set(spec) - known:
        raise McpConfigError(f"MCP server {name}: unknown field(s) {', '.join(sorted(set(spec) - known))}")
    if ("command" in spec) == ("url" in spec):
        raise McpConfigError(f"MCP server {name} needs either a command (stdio) or a url (HTTP), not both")
    if "command" in spec:
        args = spec.get("args") or []
        if not isinstance(args, list) or len(args) > MAX_ITEMS:
            raise McpConfigError(f"MCP server {name}: args must be a list")
        return {"name": name, "command": _text(spec["command"], f"{name}.command"),
                "args": [_text(a, f"{name}.args") if a != "" else "" for a in args],
                "env": _mapping(spec.get("env"), f"{name}.env", VAR_RE),
                "env_vars": _names(spec.get("env_vars"), f"{name}.env_vars")}
    url = _text(spec["url"], f"{name}.url")
    if not url.startswith(("https://", "http://")):
        raise McpConfigError(f"MCP server {name}: the url must start with https:// or http://")
    bearer = spec.get("bearer_env")
    if bearer is not None and (not isinstance(bearer, str) or not VAR_RE.fullmatch(bearer)):
        raise McpConfigError(f"MCP server {name}: bearer_env must name an environment variable")
    return {"name": name, "url": url, "headers": _mapping(spec.get("headers"), f"{name}.headers", HEADER_RE),
            "env_headers": _mapping(spec.get("env_headers"), f"{name}.env_headers", HEADER_RE, VAR_RE),
            "bearer_env": bearer}


def normalize(servers: Any) -> list[dict[str, Any]]:
    """The list checked and in its one shape; McpConfigError says what is wrong."""
    if servers is None:
        return []
    if not isinstance(servers, list) or len(servers) > MAX_SERVERS:
        raise McpConfigError(f"mcp_servers must be a list of at most {MAX_SERVERS} servers")
    out = [_one(s) for s in servers]
    names = [s["name"] for s in out]
    if len(set(names)) != len(names):
        raise McpConfigError("two MCP servers have the same name")
    return out


def referenced(servers: list[dict[str, Any]]) -> list[str]:
    """The environment variables the servers take their secrets from."""
    names: list[str] = []
    for s in servers:
        names += s.get("env_vars") or []
        names += list((s.get("env_headers") or {}).values())
        names += [s["bearer_env"]] if s.get("bearer_env") else []
    return list(dict.fromkeys(names))


# -- each CLI's form ---------------------------------------------------------------------------------

def claude_servers(servers: list[dict[str, Any]]) -> dict[str, Any]:
    """`mcpServers` entries for Claude Code's --mcp-config: secrets as `${NAME}`, which it expands."""
    out: dict[str, Any] = {}
    for s in servers:
        if "command" in s:
            out[s["name"]] = {"command": s["command"], "args": s["args"],
                              "env": {**s["env"], **{n: "${" + n + "}" for n in s["env_vars"]}}}
        else:
            headers = {**s["headers"], **{h: "${" + v + "}" for h, v in s["env_headers"].items()}}
            if s["bearer_env"]:
                headers["Authorization"] = "Bearer ${" + s["bearer_env"] + "}"
            out[s["name"]] = {"type": "http", "url": s["url"], **({"headers": headers} if headers else {})}
    return out


def _inline_table(values: dict[str, str]) -> str:
    return "{" + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in values.items()) + "}"


def codex_overrides(servers: list[dict[str, Any]]) -> list[str]:
    """`-c mcp_servers.NAME.KEY=VALUE` pairs for Codex (and, through acp_link, an ACP agent)."""
    args: list[str] = []

    def put(name: str, key: str, value: str) -> None:
        args.extend(["-c", f"mcp_servers.{name}.{key}={value}"])
    for s in servers:
        n = s["name"]
        if "command" in s:
            put(n, "command", json.dumps(s["command"]))
            put(n, "args", json.dumps(s["args"]))
            if s["env"]:
                put(n, "env", _inline_table(s["env"]))
            if s["env_vars"]:
                put(n, "env_vars", json.dumps(s["env_vars"]))
            continue
        put(n, "url", json.dumps(s["url"]))
        if s["headers"]:
            put(n, "http_headers", _inline_table(s["headers"]))
        if s["env_headers"]:
            put(n, "env_http_headers", _inline_table(s["env_headers"]))
        if s["bearer_env"]:
            put(n, "bearer_token_env_var", json.dumps(s["bearer_env"]))
    return args
