"""Fake agent CLIs for tests: `claude`, `codex`, `gemini`, `opencode` in this directory.

Put `FAKES_DIR` first on PATH (`with_fakes_on_path(env)`) and the real adapters will run them.
Their switches are described in README.md.
"""

from __future__ import annotations

import os
from pathlib import Path

FAKES_DIR = Path(__file__).resolve().parent
FAKE_PROVIDERS = ("claude", "codex", "gemini", "opencode")


def with_fakes_on_path(env: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of `env` (default: os.environ) whose PATH starts with the fakes' directory."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = os.pathsep.join([str(FAKES_DIR), env.get("PATH", os.defpath)])
    return env


def fake_executable(provider: str) -> Path:
    return FAKES_DIR / provider
