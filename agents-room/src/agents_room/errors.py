"""The one root of agents-room's errors meant for the caller (agent or person): the message is one
sentence saying what is wrong and what to do. The CLI prints it on stderr and exits 1
(cli.main); the MCP server answers it as the tool's error."""

from __future__ import annotations


class AgentsRoomError(Exception):
    """An error meant for the caller; its message is what they read."""
