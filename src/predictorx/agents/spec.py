"""What to run: everything an adapter needs to launch one agent CLI for one task."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class RunSpec:
    prompt: str
    #: The task's working directory; the agent runs here and finds its instruction file here.
    cwd: Path
    #: Added on top of the daemon's own environment (task token, server URL, task id, …).
    env: dict[str, str]
    #: Where the raw stream (`<provider>.stream.jsonl`) and stderr (`<provider>.stderr.log`) go.
    logs_dir: Path
    model: str | None = None
    #: For a CLI adapter: the words that launch the CLI instead of its executable name
    #: (`["/opt/bin/claude"]`, `["node", "cli.js"]`); the adapter's flags follow them.
    #: For the `command` provider: the whole command line.
    argv_override: list[str] | None = None
    #: Appended to the adapter's own flags, before the prompt.
    extra_args: list[str] = field(default_factory=list)
    #: Continue this CLI session instead of starting a new one.
    resume_session_id: str | None = None
    #: The whole run; when it passes, the process group is stopped and the run fails.
    timeout_s: float | None = None
    #: The prompt's end, known a little later (the daemon's sweep, its running report's answer):
    #: an adapter whose CLI reads the prompt from stdin starts the CLI first and writes it once
    #: this is done; the others wait for it before starting. A failure here stops the run.
    prompt_tail: asyncio.Future[str] | None = None
    #: Turns the finished argv (and the agent's env) into the sandboxed command line, e.g.
    #: `bwrap … -- argv` (daemon/sandbox.py); None: the agent runs unconfined. One with a
    #: `launch(argv, env)` gives (command line, fds to pass) instead (`sandboxed`).
    sandbox: Callable[[list[str], dict[str, str]], list[str]] | None = None
    #: How an agent's permission requests are answered (ACP): allow, deny or ask.
    permission_policy: str | None = None
    #: For `ask`: waits for a person's answer to question `request_id` (an option id), for at most
    #: `ask_timeout_s`; None: no one can be asked (then the question is answered deny).
    ask_person: Callable[[str], Awaitable[str | None]] | None = None
    ask_timeout_s: float = 600.0
    #: The values of the run's secrets (in `env`): the raw logs never hold them (secretmask.py).
    secrets: tuple[str, ...] = ()


def sandboxed(sandbox: Callable[[list[str], dict[str, str]], list[str]], argv: list[str],
              env: dict[str, str]) -> tuple[list[str], tuple[int, ...]]:
    """(the sandboxed command line, the open fds its process is to be given — and then closed:
    ProcessRequest.pass_fds). A sandbox with `launch` (daemon/sandbox.py SandboxPlan) opens what
    its process reads (the seccomp filter) itself; any other is called."""
    launch = getattr(sandbox, "launch", None)
    return launch(argv, env) if launch is not None else (sandbox(argv, env), ())


def dies_with_parent(sandbox: Callable[[list[str], dict[str, str]], list[str]] | None) -> bool:
    """Whether the sandbox's command dies with its parent by itself (SandboxPlan: bwrap's
    `--die-with-parent`; ProcessRequest.dies_with_parent)."""
    return sandbox is not None and getattr(sandbox, "dies_with_parent", False) is True
