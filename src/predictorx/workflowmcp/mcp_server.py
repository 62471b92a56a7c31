"""`predictorx mcp`: the harness's tools (harness_tools.py) served by the MCP SDK over stdio
(R-HAR-7, issue 12 §10). The daemon starts the fast front instead (mcp_stdio.py), which answers
the handshake and the listing itself and calls the tools directly (direct_call.py); this server
is what the listing is read from (mcp_tools.json) and what the front falls back on for a call it
does not answer itself."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from .harness_tools import INSTRUCTIONS, Api, functions


def build_server() -> MCPServer:
    app = MCPServer("predictorx", instructions=INSTRUCTIONS, log_level="WARNING")
    for tool in functions(Api(ToolError)):
        app.tool()(tool)
    return app


def run() -> None:
    build_server().run("stdio")
