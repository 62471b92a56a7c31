"""Agent adapters: one async interface over every agent CLI (R-EX-3, R-EX-5, R-EX-8).

Importing this package registers the built-in adapters (claude, codex, gemini, opencode,
command, acp). `get(provider)` returns one; `adapter.run(spec, on_message, cancel)` runs it.
"""

from . import acp, claude, codex, command, gemini, opencode  # noqa: F401  (registration side effect)
from .adapter import AgentAdapter, MessageHandler, parse_json_object  # noqa: F401
from .message import MESSAGE_KINDS, AgentMessage  # noqa: F401
from .registry import UnknownProvider, get, known_providers, register, unregister  # noqa: F401
from .result import RunResult, RunStatus  # noqa: F401
from .spec import RunSpec  # noqa: F401
from .stream_state import StreamState  # noqa: F401
