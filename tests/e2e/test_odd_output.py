"""Issue 8 finding 8 (R-SEC-8): whatever an agent prints — a JSON line with a lone surrogate, NUL,
a 3 MB line — its run ends completed with its messages and its result stored."""

from __future__ import annotations

import json
import sys

from .harness import wait_until

SCRIPT = r"""
import sys
out = sys.stdout
out.write('{"type": "text", "text": "before \\ud800 after"}\n')
out.write('{"type": "tool_use", "name": "x", "input": {"k\\u0000": "v\\udc80"}}\n')
out.write("N" * 3_000_000 + "\n")
out.write('{"type": "text", "text": "final answer \\udfff"}\n')
out.flush()
"""


def test_finding_08_a_lone_surrogate_line_never_loses_the_run(server, start_daemon):
    start_daemon()
    server.api("POST", "/api/agents", {"name": "odd", "provider": "command", "command": [sys.executable, "-c", SCRIPT]})
    number = server.api("POST", "/api/issues", {"title": "print odd things", "assignee": "odd"})["number"]
    runs = wait_until(lambda: (r := server.runs(number)) and r, what="a task")
    task = server.wait_task(runs[0]["id"], timeout=60)
    assert task["status"] == "completed", task
    assert task["result"] == "final answer \ufffd"
    msgs = server.api("GET", f"/api/tasks/{task['id']}/messages")
    texts = [m["content"].get("text", "") for m in msgs if m["kind"] == "text"]
    assert "before \ufffd after" in texts
    tool = next(m for m in msgs if m["kind"] == "tool_use")
    assert tool["content"]["input"] == {"k\ufffd": "v\ufffd"}
    long = next(t for t in texts if t.startswith("NNN"))
    assert "[truncated: " in long and len(long) < 300_000
    assert [m["seq"] for m in msgs] == list(range(len(msgs)))
    assert json.dumps(msgs)  # everything stored is valid text


def test_finding_08_message_uploads_stay_under_the_body_limit(tmp_path):
    """40 messages of 200 KB (8 MB) against a server configured to its smallest body limit (2 MiB):
    every one arrives, in batches under the limit; none is refused with 413."""
    from .harness import Server

    server = Server(tmp_path / "small-limit", f"sqlite:///{tmp_path / 'small.db'}", PREDICTORX_MAX_BODY_BYTES="2097152")
    try:
        script = "import sys\nfor i in range(40):\n    print(str(i).rjust(6, '0') + 'x' * 200_000)\n"
        from .harness import Daemon

        daemon = Daemon(server, tmp_path / "daemon-small")
        try:
            server.api("POST", "/api/agents", {"name": "chatty", "provider": "command",
                                               "command": [sys.executable, "-c", script]})
            number = server.api("POST", "/api/issues", {"title": "talk a lot", "assignee": "chatty"})["number"]
            runs = wait_until(lambda: (r := server.runs(number)) and r, what="a task")
            task = server.wait_task(runs[0]["id"], timeout=90)
            assert task["status"] == "completed", task
            msgs = server.api("GET", f"/api/tasks/{task['id']}/messages")
            lines = sorted(m["content"]["text"][:6] for m in msgs if m["kind"] == "text")
            assert lines == [str(i).rjust(6, "0") for i in range(40)], daemon.output()[-3000:]
        finally:
            daemon.stop()
    finally:
        server.stop()
