"""What every fake agent CLI shares: its switches, what it records, and how it misbehaves.

The fakes (`claude`, `codex`, `gemini`, `opencode` beside this file) only differ in their flags
and their stream format; this module is imported by them, never run. See README.md.

Switches (environment variables):

- FAKE_AGENT_MODE     ok (default) | fail | error_event | hang | long_line | edit
- FAKE_AGENT_DELAY    seconds to sleep before each event (default 0)
- FAKE_AGENT_RECORD   path: write what the fake saw there as JSON; if the path is a directory,
                      write `<dir>/<PREDICTORX_TASK_ID or pid>.json` (concurrent runs don't collide)
- FAKE_AGENT_RUNS_LOG path: append one JSON line per run (provider, task id, pid, cwd) — to count runs
- FAKE_AGENT_TEXT     the final answer (default "Done: fake <provider> finished the task.")
- FAKE_AGENT_SESSION_ID  the session id to report (default: the resumed one, else a new uuid)
- FAKE_AGENT_UNKNOWN_SESSIONS  comma-separated session ids a resume fails on (exit 42, no output)
- FAKE_AGENT_EDIT_FILE   edit mode: file (relative to cwd) to append a line to (default FAKE_AGENT_EDITS.md)
- FAKE_AGENT_EDIT_LINE   edit mode: the line appended (default "edited by fake <provider>")
- FAKE_AGENT_EXIT_CODE   fail mode: the exit code (default 1)
- FAKE_AGENT_STDERR      text written to stderr before anything else
- FAKE_AGENT_IGNORE_SIGTERM=1  hang mode: the fake and its child ignore SIGTERM (tests SIGKILL)
- FAKE_AGENT_VERSION  what `--version` prints
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

MODES = ("ok", "fail", "error_event", "hang", "long_line", "edit")
LONG_LINE_BYTES = 1024 * 1024


class FakeAgent:
    def __init__(self, provider: str, instruction_file: str):
        self.provider = provider
        self.instruction_file = instruction_file
        self.mode = os.environ.get("FAKE_AGENT_MODE", "ok")
        if self.mode not in MODES:
            self.die(f"FAKE_AGENT_MODE must be one of {', '.join(MODES)}, not {self.mode!r}", 2)
        self.delay = float(os.environ.get("FAKE_AGENT_DELAY", "0") or 0)
        self.text = os.environ.get("FAKE_AGENT_TEXT", f"Done: fake {provider} finished the task.")
        self.record_path = os.environ.get("FAKE_AGENT_RECORD")
        self.record: dict[str, Any] = {}
        if os.environ.get("FAKE_AGENT_STDERR"):
            sys.stderr.write(os.environ["FAKE_AGENT_STDERR"] + "\n")
            sys.stderr.flush()

    # -- input ----------------------------------------------------------------------------------
    @staticmethod
    def read_stdin() -> str:
        """All of stdin when it is not a terminal — what the real CLIs do; blocks until EOF."""
        if sys.stdin is None or sys.stdin.closed or sys.stdin.isatty():
            return ""
        return sys.stdin.read()

    def session_id(self, resumed: str | None = None) -> str:
        if resumed and resumed in os.environ.get("FAKE_AGENT_UNKNOWN_SESSIONS", "").split(","):
            # As Gemini CLI does for a session kept under another folder: fail before any output.
            self.die("Error resuming session: No previous sessions found for this project.", 42)
        return os.environ.get("FAKE_AGENT_SESSION_ID") or resumed or str(uuid.uuid4())

    # -- recording ------------------------------------------------------------------------------
    def save_record(self, argv: list[str], prompt: str, **extra: Any) -> None:
        """Write what this run saw to FAKE_AGENT_RECORD (atomically, so readers never see half)."""
        cwd = Path.cwd()
        instruction = cwd / self.instruction_file
        resources = cwd / ".predictorx" / "project" / "resources.json"
        self.record = {
            "provider": self.provider,
            "argv": argv,
            "cwd": str(cwd),
            "prompt": prompt,
            "instruction_file": self.instruction_file,
            "instruction": instruction.read_text(encoding="utf-8") if instruction.is_file() else None,
            "resources": json.loads(resources.read_text(encoding="utf-8")) if resources.is_file() else None,
            "env": {k: v for k, v in os.environ.items() if k.startswith(("PREDICTORX_", "FAKE_AGENT_"))},
            "pid": os.getpid(),
            "pgid": os.getpgid(0),
            "mode": self.mode,
            **extra,
        }
        self._write_record()
        runs_log = os.environ.get("FAKE_AGENT_RUNS_LOG")
        if runs_log:
            line = {k: self.record[k] for k in ("provider", "pid", "cwd", "mode")}
            line["task_id"] = os.environ.get("PREDICTORX_TASK_ID")
            # One small O_APPEND write per run: lines from concurrent runs never interleave.
            fd = os.open(runs_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (json.dumps(line) + "\n").encode())
            finally:
                os.close(fd)

    def _write_record(self) -> None:
        if not self.record_path:
            return
        path = Path(self.record_path)
        if path.is_dir():
            path = path / f"{os.environ.get('PREDICTORX_TASK_ID') or os.getpid()}.json"
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.record, indent=2), encoding="utf-8")
        os.replace(tmp, path)

    def run_session_start_hooks(self, settings_path: str, session_id: str) -> list[str]:
        """Run the `SessionStart` command hooks of a Claude Code settings file, as the CLI does:
        the event JSON on stdin, stdout collected (Claude shows it to the model)."""
        with open(settings_path, encoding="utf-8") as fh:
            settings = json.load(fh)
        event = {"session_id": session_id, "hook_event_name": "SessionStart", "source": "startup",
                 "cwd": os.getcwd(), "transcript_path": os.path.join(os.getcwd(), ".fake-transcript.jsonl")}
        outputs = []
        for group in settings.get("hooks", {}).get("SessionStart", []):
            for hook in group.get("hooks", []):
                if hook.get("type") == "command":
                    done = subprocess.run(hook["command"], shell=True, input=json.dumps(event), capture_output=True,
                                   text=True, timeout=hook.get("timeout", 60))
                    outputs.append(done.stdout)
        return outputs

    # -- output ---------------------------------------------------------------------------------
    def emit(self, event: dict[str, Any]) -> None:
        if self.delay:
            time.sleep(self.delay)
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()

    @staticmethod
    def long_text() -> str:
        return "x" * LONG_LINE_BYTES

    def die(self, message: str, code: int = 1) -> None:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
        sys.exit(code)

    def fail(self) -> None:
        """fail mode: complain on stderr, exit non-zero."""
        code = int(os.environ.get("FAKE_AGENT_EXIT_CODE", "1"))
        self.die(f"fake {self.provider}: failing on purpose (FAKE_AGENT_MODE=fail)", code)

    def edit(self) -> tuple[str, str]:
        """edit mode: append a line to a file in cwd, a real change for the daemon to find."""
        name = os.environ.get("FAKE_AGENT_EDIT_FILE", "FAKE_AGENT_EDITS.md")
        line = os.environ.get("FAKE_AGENT_EDIT_LINE", f"edited by fake {self.provider}")
        path = Path.cwd() / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
        return name, line

    def hang(self) -> None:
        """hang mode: start a child that sleeps too (same process group), then sleep until killed."""
        if os.environ.get("FAKE_AGENT_IGNORE_SIGTERM") == "1":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited by the child through exec
        child = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(60)"])
        self.record["child_pid"] = child.pid
        self._write_record()
        while True:
            time.sleep(60)
