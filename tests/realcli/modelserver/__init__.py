"""Scripted model servers on 127.0.0.1, one per wire protocol the real agent CLIs speak (R-EX-9).

Each answers like a tiny model that always does the same job: asked with a prompt, it calls the
CLI's own shell tool once (the test's `command`); shown that tool's result, it gives its final
`answer`. Every request is recorded, so a test asserts what the model was shown.
"""

from .anthropic import AnthropicServer
from .base import ModelServer, Recorded
from .chat import ChatCompletionsServer
from .gemini import GeminiServer
from .responses import ResponsesServer

__all__ = ["AnthropicServer", "ChatCompletionsServer", "GeminiServer", "ModelServer", "Recorded", "ResponsesServer"]
