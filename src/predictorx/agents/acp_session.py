"""One ACP run's conversation (acp.py runs it): the SDK's client connection over `LineTransport`,
what it sends, in which order, and how a cancel or the process's end stops it.

The SDK (pydantic models of the whole protocol) is imported here only, when a run starts: the
server and the daemon import the adapters at start and should not pay for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any, cast

from acp import PROTOCOL_VERSION, Client, connect_to_agent, text_block
from acp.schema import HttpMcpServer, Implementation, McpServerStdio

from . import message as m
from .acp_client import CAPABILITIES, PredictorClient
from .acp_link import LineTransport, split_overrides
from .acp_updates import add_prompt_usage, flush, map_update
from .adapter import MessageHandler
from .message import AgentMessage
from .process import ProcessOutcome, ProcessRequest, run_process
from .spec import RunSpec
from .stream_state import StreamState

log = logging.getLogger(__name__)

CANCEL_GRACE_S = 1.0
EXIT_GRACE_S = 2.0
#: After the process is gone, how long the conversation may take to notice.
SETTLE_S = 2.0


@dataclass
class Talk:
    """How the conversation went."""
    stop_reason: str | None = None
    error: str | None = None


class Session:
    """One run's conversation with the agent."""

    def __init__(self, spec: RunSpec, state: StreamState, talk: Talk, link: LineTransport,
                 outbox: asyncio.Queue[AgentMessage | None], policy: str, session_model: str | None):
        self.spec, self.state, self.talk, self.outbox = spec, state, talk, outbox
        self.session_model = session_model
        self.replaying = False
        self.session_id: str | None = None
        client = PredictorClient(spec.cwd, policy, self._record, spec.ask_person, spec.ask_timeout_s)
        # The SDK's Client protocol lists terminal and elicitation methods too; the router answers
        # what a client leaves out with method-not-found, which is what we declare.
        self.conn = connect_to_agent(cast(Client, client), link, observers=[self._observe])

    def _record(self, msg: AgentMessage) -> None:
        for held in flush(self.state):
            self.outbox.put_nowait(held)
        self.outbox.put_nowait(msg)

    def _observe(self, event: Any) -> None:
        """Every message as it arrives, in order (the SDK handles them as concurrent tasks)."""
        message = event.message
        if event.direction.value != "incoming" or message.get("method") != "session/update" or self.replaying:
            return
        update = (message.get("params") or {}).get("update")
        if isinstance(update, dict):
            for msg in map_update(update, self.state):
                self.outbox.put_nowait(msg)

    async def converse(self) -> None:
        try:
            await self._converse()
        except Exception as exc:  # noqa: BLE001 — the agent's error is the run's failure reason
            self.talk.error = _describe(exc)

    async def _converse(self) -> None:
        spec = self.spec
        init = await self.conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=CAPABILITIES,
                                          client_info=Implementation(name="predictorx", version=_version()))
        can_load = bool(init.agent_capabilities and init.agent_capabilities.load_session)
        servers = split_overrides(spec.extra_args, spec.env)[0]
        http_ok = bool(init.agent_capabilities and init.agent_capabilities.mcp_capabilities
                       and init.agent_capabilities.mcp_capabilities.http)
        for s in servers:
            if "url" in s and not http_ok:
                self._record(m.system("mcp_server_skipped", name=s["name"],
                                      message=f"this ACP agent takes no HTTP MCP servers: {s['name']} was left out"))
        mcp: list[Any] = [HttpMcpServer(type="http", **s) if "url" in s else McpServerStdio(**s)
                          for s in servers if "url" not in s or http_ok]
        cwd = str(spec.cwd)
        if spec.resume_session_id and can_load:
            self.replaying = True
            try:
                opened: Any = await self.conn.load_session(cwd=cwd, session_id=spec.resume_session_id, mcp_servers=mcp)
            finally:
                self.replaying = False
            self.session_id = spec.resume_session_id
        else:
            if spec.resume_session_id:
                self._record(m.system("resume_skipped", session_id=spec.resume_session_id,
                                      message="this ACP agent does not offer session/load: a new session was started"))
            opened = await self.conn.new_session(cwd=cwd, mcp_servers=mcp)
            self.session_id = opened.session_id
        self.state.session_id = self.session_id
        self._record(m.system("session", session_id=self.session_id, protocol_version=init.protocol_version,
                              agent=_agent_info(init), load_session=can_load))
        await self._choose_model(getattr(opened, "config_options", None) or [])
        prompt = spec.prompt + (await spec.prompt_tail if spec.prompt_tail is not None else "")
        reply = await self.conn.prompt(session_id=self.session_id, prompt=[text_block(prompt)])
        self.talk.stop_reason = str(reply.stop_reason)
        add_prompt_usage(reply.usage.model_dump(by_alias=True) if reply.usage else None, self.state)

    async def _choose_model(self, options: list[Any]) -> None:
        """The agent's model through its `model` config option, for agents that take no model flag
        (OpenCode): ACP's own way, so no config file of the agent is written for it."""
        if not self.session_model or self.session_id is None:
            return
        dumped = [o.model_dump(mode="json", by_alias=True) if hasattr(o, "model_dump") else o for o in options]
        models = [o for o in dumped if isinstance(o, dict) and o.get("category") == "model"]
        # Cline offers two in that category, its provider first: the one named `model` is the model.
        option = next((o for o in models if o.get("id") == "model"), models[0] if models else None)
        if option is None:
            self._record(m.system("model_not_set", model=self.session_model,
                                  message="this ACP agent offers no model option; it uses its configured model"))
            return
        if option.get("currentValue") != self.session_model:
            await self.conn.set_config_option(config_id=option["id"], session_id=self.session_id,
                                              value=self.session_model)

    async def cancel(self) -> None:
        if self.session_id is None:
            return
        with contextlib.suppress(Exception):
            await self.conn.cancel(session_id=self.session_id)


async def supervise(process: asyncio.Task[ProcessOutcome], conversation: asyncio.Task[None], session: Session,
                     link: LineTransport, stop: asyncio.Event, cancel: asyncio.Event) -> ProcessOutcome:
    """Wait for the first of: the conversation's end, the process's end, a cancel; then end the rest."""
    cancelled = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({process, conversation, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        if cancel.is_set() and not process.done():
            await session.cancel()
            await asyncio.wait({process, conversation}, timeout=CANCEL_GRACE_S, return_when=asyncio.FIRST_COMPLETED)
            stop.set()
        if not process.done():
            link.close_stdin()  # the conversation is over: EOF asks the agent to exit
            await asyncio.wait({process}, timeout=EXIT_GRACE_S)
            stop.set()  # what is left of its group is stopped by the runner
        outcome = await process
        link.end()
        await asyncio.wait({conversation}, timeout=SETTLE_S)
        return outcome
    finally:
        cancelled.cancel()
        await asyncio.gather(session.conn.close(), return_exceptions=True)


async def deliver(outbox: asyncio.Queue[AgentMessage | None], on_message: MessageHandler) -> None:
    while (msg := await outbox.get()) is not None:
        try:
            await on_message(msg)
        except Exception:  # one failed delivery must not lose the rest
            log.exception("acp: delivering a message failed")

def _agent_info(init: Any) -> dict[str, Any] | None:
    info = getattr(init, "agent_info", None)
    return info.model_dump(mode="json", exclude_none=True) if info is not None else None


def _describe(exc: BaseException) -> str:
    data = getattr(exc, "data", None)
    text = str(exc) or type(exc).__name__
    if isinstance(data, dict) and data.get("details"):
        text += f": {data['details']}"
    elif data:
        text += f": {data}"
    return text


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("predictorx")
    except PackageNotFoundError:
        return "0"


async def run_conversation(spec: RunSpec, argv: list[str], env: dict[str, str], on_message: MessageHandler,
                           cancel: asyncio.Event, policy: str,
                           session_model: str | None) -> tuple[StreamState, Talk, ProcessOutcome]:
    """Start the agent (sandboxed `argv`) through the shared runner and hold the conversation."""
    state, talk = StreamState(), Talk()
    outbox: asyncio.Queue[AgentMessage | None] = asyncio.Queue()
    delivery = asyncio.create_task(deliver(outbox, on_message))

    async def noise(line: str) -> None:
        outbox.put_nowait(m.system("output", text=line))

    link = LineTransport(noise)
    stop = asyncio.Event()
    request = ProcessRequest(argv=argv, cwd=spec.cwd, env=env, stdin_data=None, stdin_session=link.hold_stdin,
                             stream_log=spec.logs_dir / "acp.stream.jsonl",
                             stderr_log=spec.logs_dir / "acp.stderr.log", timeout_s=spec.timeout_s,
                             secrets=spec.secrets)
    process = asyncio.create_task(run_process(request, link.on_line, stop))
    session = Session(spec, state, talk, link, outbox, policy, session_model)
    conversation = asyncio.create_task(session.converse())
    try:
        outcome = await supervise(process, conversation, session, link, stop, cancel)
    finally:
        for task in (process, conversation):
            task.cancel()
        for msg in flush(state):
            outbox.put_nowait(msg)
        outbox.put_nowait(None)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(delivery, SETTLE_S)
    return state, talk, outcome
