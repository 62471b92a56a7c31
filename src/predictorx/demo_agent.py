"""The demo's agent: a small real program run by the `command` provider (R-EX-8).

It reads the prompt on stdin, makes a real change in its working directory (adds a greeting to
`hello.py`), commits it, and narrates in the `command` provider's JSON-lines format.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def say(kind: str, **content: object) -> None:
    print(json.dumps({"type": kind, **content}), flush=True)


def main() -> int:
    prompt = sys.stdin.read()
    say("thinking", text=f"Read the issue ({len(prompt)} characters). I will add a greeting to hello.py.")
    target = Path.cwd() / "hello.py"
    say("tool_use", id="t1", name="edit", input={"file": "hello.py"})
    before = target.read_text() if target.exists() else ""
    target.write_text(before + '\n\ndef greet(name: str) -> str:\n    return f"Hello, {name}! (added by the demo agent)"\n')
    say("tool_result", tool_use_id="t1", output="hello.py: added greet()", is_error=False)
    env = {**os.environ, "GIT_AUTHOR_NAME": os.environ.get("PREDICTORX_AGENT", "demo-bot"),
           "GIT_AUTHOR_EMAIL": "agent@predictorx.local",
           "GIT_COMMITTER_NAME": os.environ.get("PREDICTORX_AGENT", "demo-bot"),
           "GIT_COMMITTER_EMAIL": "agent@predictorx.local"}
    subprocess.run(["git", "add", "hello.py"], check=False, env=env, timeout=30)
    subprocess.run(["git", "commit", "-q", "--no-gpg-sign", "-m", "Add greet() (demo agent)"], check=False,
                   env=env, timeout=30)
    say("text", text="Added greet() to hello.py and committed it on my branch.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
