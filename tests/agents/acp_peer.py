"""A tiny ACP agent on the official SDK's agent side: a real peer over stdio for the `acp` adapter.

The prompt's words choose what it does:
- always: a thought, text in two chunks, a plan, a tool call (pending → permission → completed)
  whose work is `fs/write_text_file` of `note.txt` in the session's folder, with a diff;
- ``PEER_MCP``: first says the names of the MCP servers session/new gave it;
- ``PEER_MCP_ENV``: then the SHA-256 of each stdio server's environment value, then the values;
- ``PEER_OUTSIDE``: also asks to read /etc/hostname (the client must refuse);
- ``PEER_HANG``: then waits until `session/cancel` and answers `cancelled`;
- ``PEER_SPAWN``: first starts a `sleep 300` child in its process group (cancel must stop it; its pid
  goes in `child.pid` in the folder).
`session/new` offers two config options of category `model`, Cline-style: `provider` first, then
`model`; `session/set_config_option` notes what was set in `config.txt` in the folder.
`session/load` replays one user and one agent chunk, which the client must not record again. The
permission's choice is written into the note, so a test sees what the client answered.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    plan_entry,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import (
    AgentCapabilities,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SetSessionConfigOptionResponse,
)


_OPTIONS = [SessionConfigOptionSelect(
    type="select", id=name, name=name.title(), category="model", current_value=value,
    options=[SessionConfigSelectOption(value=value, name=value)]) for name, value in (("provider", "p-1"),
                                                                                     ("model", "m-1"))]


class Peer:
    def __init__(self) -> None:
        self.conn: Any = None
        self.cwd: dict[str, str] = {}
        self.cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=PROTOCOL_VERSION,
                                  agent_capabilities=AgentCapabilities(load_session=True))

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        sid = f"peer-{len(self.cwd) + 1}"
        self.cwd[sid] = cwd
        Path(cwd, "mcp.txt").write_text(",".join(s.name for s in mcp_servers or []))
        # (kept in memory: what session/new gave each stdio server in its environment)
        self.mcp_env = {f"{s.name}:{e.name}": e.value for s in mcp_servers or [] for e in getattr(s, "env", None) or []}
        return NewSessionResponse(session_id=sid, config_options=_OPTIONS)

    async def set_config_option(self, config_id: str, session_id: str, value: Any,
                                **kwargs: Any) -> SetSessionConfigOptionResponse:
        with open(Path(self.cwd[session_id], "config.txt"), "a") as f:
            f.write(f"{config_id}={value}\n")
        return SetSessionConfigOptionResponse(config_options=_OPTIONS)

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        if not session_id.startswith("peer-"):
            raise ValueError(f"no session {session_id}")
        self.cwd[session_id] = cwd
        await self.conn.session_update(session_id, update_user_message_text("earlier question"))
        await self.conn.session_update(session_id, update_agent_message_text("earlier answer"))
        return LoadSessionResponse()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        words = " ".join(getattr(b, "text", "") for b in prompt)
        cwd = self.cwd[session_id]
        self.cancelled[session_id] = asyncio.Event()
        say = self.conn.session_update
        if "PEER_MCP" in words:
            await say(session_id, update_agent_message_text(f"mcp={Path(cwd, 'mcp.txt').read_text()} "))
        if "PEER_MCP_ENV" in words:  # the values' hashes, then the values themselves (to be masked)
            env = getattr(self, "mcp_env", {})
            await say(session_id, update_agent_message_text(" ".join(
                f"{k}={hashlib.sha256(v.encode()).hexdigest()}" for k, v in sorted(env.items())) + " "))
            await say(session_id, update_agent_message_text(f"raw={','.join(v for _, v in sorted(env.items()))} "))
        if "PEER_SPAWN" in words:
            child = subprocess.Popen(["sleep", "300"])
            Path(cwd, "child.pid").write_text(str(child.pid))
        await say(session_id, update_agent_thought_text("thinking it over"))
        await say(session_id, update_agent_message_text("Hello, "))
        await say(session_id, update_agent_message_text("world."))
        await say(session_id, update_plan([plan_entry("write the note", status="in_progress")]))
        note = os.path.join(cwd, "note.txt")
        await say(session_id, start_tool_call("call-1", "Write note.txt", kind="edit", status="pending",
                                              raw_input={"path": note}))
        answer = await self.conn.request_permission(
            session_id=session_id, tool_call=update_tool_call("call-1", title="Write note.txt"),
            options=[PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                     PermissionOption(option_id="always", name="Always", kind="allow_always"),
                     PermissionOption(option_id="no", name="Reject", kind="reject_once")])
        choice = getattr(answer.outcome, "option_id", None) or "cancelled"
        if choice in ("yes", "always"):
            await self.conn.write_text_file(session_id=session_id, path=note, content="written by the peer\n")
            await say(session_id, update_tool_call("call-1", status="completed",
                                                   content=[tool_diff_content(note, "written by the peer\n"),
                                                            tool_content(text_block("wrote it"))]))
        else:
            await say(session_id, update_tool_call("call-1", status="failed",
                                                   content=[tool_content(text_block(f"not allowed ({choice})"))]))
        if "PEER_OUTSIDE" in words:
            try:
                await self.conn.read_text_file(session_id=session_id, path="/etc/hostname")
                await say(session_id, update_agent_message_text("read outside"))
            except Exception as e:  # noqa: BLE001 — what the client said is the point
                await say(session_id, update_agent_message_text(f" refused: {e}"))
        if "PEER_HANG" in words:
            await self.cancelled[session_id].wait()
            return PromptResponse(stop_reason="cancelled")
        await say(session_id, update_agent_message_text(" Done."))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        if session_id in self.cancelled:
            self.cancelled[session_id].set()


if __name__ == "__main__":
    print("not json: the peer starts", file=sys.stderr)
    asyncio.run(run_agent(Peer()))
