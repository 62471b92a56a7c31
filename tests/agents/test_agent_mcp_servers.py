"""An agent's own MCP servers (issue 28 §3; agentconfig/mcpconfig.py): checked when saved, written into
each CLI's own MCP configuration beside `predictorx mcp` — Claude Code's --mcp-config file, Codex's
`-c` overrides, an ACP agent's `session/new` — with its secrets only named in what is written or
on a command line, and their values given to an ACP agent over its stdin only."""

from __future__ import annotations

import json
import uuid

import pytest

from predictorx.agentconfig import mcpconfig
from predictorx.agents.acp_link import split_overrides
from predictorx.daemon import workflowhooks as harness

SECRET = "sk-mcp-" + uuid.uuid4().hex
SERVERS = [
    {"name": "db", "command": "db-mcp", "args": ["--ro"], "env": {"MODE": "read"}, "env_vars": ["DB_PASSWORD"]},
    {"name": "docs", "url": "https://docs.example/mcp", "headers": {"X-Client": "px"},
     "env_headers": {"X-Api-Key": "DOCS_KEY"}, "bearer_env": "DOCS_TOKEN"},
]
ENV = {"DB_PASSWORD": SECRET, "DOCS_KEY": SECRET + "k", "DOCS_TOKEN": SECRET + "t",
       "PREDICTORX_TOKEN": "pxt_task", "PREDICTORX_SERVER_URL": "http://127.0.0.1:1"}


@pytest.mark.parametrize("bad, says", [
    ([{"name": "predictorx", "command": "x"}], "not one of"),
    ([{"name": "a", "command": "x", "url": "https://x"}], "not both"),
    ([{"name": "a"}], "either a command"),
    ([{"name": "a", "url": "ftp://x"}], "https://"),
    ([{"name": "a", "command": "x", "env_vars": ["1BAD"]}], "variable names"),
    ([{"name": "a", "url": "https://x", "env_headers": {"H": "not a name"}}], "name an environment variable"),
    ([{"name": "a", "command": "x"}, {"name": "a", "command": "y"}], "same name"),
    ([{"name": "a", "command": "x", "token": "t"}], "unknown field"),
])
def test_a_wrong_server_is_refused_with_a_sentence(bad, says):
    with pytest.raises(mcpconfig.McpConfigError, match=says):
        mcpconfig.normalize(bad)


def test_claude_gets_its_servers_in_the_mcp_config_with_secrets_named(tmp_path):
    args = harness.mcp_setup("claude", tmp_path, ENV, SERVERS)
    assert args[0] == "--mcp-config"
    text = (tmp_path / "predictorx.mcp.json").read_text()
    config = json.loads(text)["mcpServers"]
    assert set(config) == {"predictorx", "db", "docs"}
    assert config["db"] == {"command": "db-mcp", "args": ["--ro"], "env": {"MODE": "read", "DB_PASSWORD": "${DB_PASSWORD}"}}
    assert config["docs"] == {"type": "http", "url": "https://docs.example/mcp", "headers": {
        "X-Client": "px", "X-Api-Key": "${DOCS_KEY}", "Authorization": "Bearer ${DOCS_TOKEN}"}}
    assert SECRET not in text and SECRET not in " ".join(args)


def test_codex_gets_overrides_naming_secrets_and_an_acp_agent_their_values_in_memory(tmp_path):
    args = harness.mcp_setup("codex", tmp_path, ENV, SERVERS)
    assert SECRET not in " ".join(args)  # its command line names the variables only
    assert "mcp_servers.db.env_vars=[\"DB_PASSWORD\"]" in args
    assert "mcp_servers.docs.bearer_token_env_var=\"DOCS_TOKEN\"" in args
    assert 'mcp_servers.docs.env_http_headers={"X-Api-Key" = "DOCS_KEY"}' in args
    servers, rest = split_overrides(["--keep", *args], ENV)
    assert rest == ["--keep"]
    by_name = {s["name"]: s for s in servers}
    assert set(by_name) == {"predictorx", "db", "docs"}
    assert by_name["db"]["env"] == [{"name": "MODE", "value": "read"}, {"name": "DB_PASSWORD", "value": SECRET}]
    assert by_name["docs"]["headers"] == [{"name": "X-Client", "value": "px"}, {"name": "X-Api-Key", "value": SECRET + "k"},
                                          {"name": "Authorization", "value": f"Bearer {SECRET}t"}]
    from acp.schema import HttpMcpServer, McpServerStdio

    assert HttpMcpServer(type="http", **by_name["docs"]).url == "https://docs.example/mcp"
    assert McpServerStdio(**by_name["db"]).command == "db-mcp"


def test_other_clis_get_none_and_a_broken_list_does_not_stop_the_run(tmp_path):
    assert harness.mcp_setup("gemini", tmp_path, ENV, SERVERS) == []
    with pytest.raises(mcpconfig.McpConfigError):
        harness.mcp_setup("claude", tmp_path, ENV, [{"name": "x"}])
