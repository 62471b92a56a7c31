"""`predictorx mcp`'s fast stdio front (workflowmcp/mcp_stdio.py): the handshake and tools/list come
from mcp_tools.json without importing the MCP SDK (Claude Code waits for its MCP servers before
its first model request; the SDK import is ~1 s of CPU per task), and that file is the SDK server's
own listing. Tool calls through the front: tests/e2e/test_harness_mcp.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from predictorx.daemon.workflowhooks import mcp_setup
from predictorx.workflowmcp.mcp_server import build_server
from predictorx.workflowmcp.mcp_stdio import TOOLS_FILE, listing_of


def test_mcp_tools_json_is_the_sdk_servers_listing():
    assert json.loads(Path(TOOLS_FILE).read_text()) == listing_of(build_server()), \
        "mcp_tools.json is stale: run python -m predictorx.workflowmcp.mcp_stdio --write"


def test_the_daemons_mcp_command_answers_the_handshake_without_the_sdk(tmp_path):
    args = mcp_setup("claude", tmp_path, {"PREDICTORX_SERVER_URL": "http://127.0.0.1:9", "PREDICTORX_TOKEN": "t",
                                          "PREDICTORX_ISSUE": "1", "PREDICTORX_TASK_ID": "x"})
    server = json.loads((tmp_path / "predictorx.mcp.json").read_text())["mcpServers"]["predictorx"]
    assert args == ["--mcp-config", str(tmp_path / "predictorx.mcp.json")] and "mcp_stdio" in " ".join(server["args"])
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "mcp.py").write_text("raise ImportError('the MCP SDK was imported before a tool call')\n")
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]
    p = subprocess.run([server["command"], *server["args"]], input="".join(json.dumps(x) + "\n" for x in lines),
                       capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(blocker)})
    replies = [json.loads(x) for x in p.stdout.splitlines()]
    assert [r["id"] for r in replies] == [0, 1, 2], p.stderr
    assert replies[0]["result"]["protocolVersion"] == "2025-11-25"
    assert replies[0]["result"]["serverInfo"]["name"] == "predictorx"
    assert {"harness_state", "workflow_complete", "handoff_write"} <= {t["name"] for t in replies[1]["result"]["tools"]}


def test_a_bad_env_file_is_a_sentence(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{nope")
    p = subprocess.run([sys.executable, "-m", "predictorx.workflowmcp.mcp_stdio", "--env-file", str(bad)],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode != 0 and "is not a readable JSON file" in p.stderr and "Traceback" not in p.stderr


def test_the_front_loads_only_what_its_first_answer_needs(tmp_path):
    """Claude Code waits for the front's handshake before its first model request (issue 9): the
    daemon starts it as a file, so no package, runpy, pathlib or typing import comes first."""
    mcp_setup("claude", tmp_path, {"PREDICTORX_TOKEN": "t"})
    server = json.loads((tmp_path / "predictorx.mcp.json").read_text())["mcpServers"]["predictorx"]
    hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    p = subprocess.run([server["command"], "-X", "importtime", *server["args"]], input=json.dumps(hello) + "\n",
                       capture_output=True, text=True, timeout=60)
    assert json.loads(p.stdout)["id"] == 0, p.stderr
    imported = {line.split("|")[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")}
    # -S: not even `site` (site-packages, the .pth files) before the first answer (issue 30); nor
    # the json package (its `re` import was half of the front's start): json's C half does the work
    assert server["args"][0] == "-S" and not imported & {"runpy", "pathlib", "typing", "site", "predictorx",
                                                          "predictorx.workflowmcp", "json", "re", "enum"}, imported
    # nor os (~1 ms: the env file's values reach the environment with the first tool call, below)
    assert "os" not in imported, imported


def test_the_front_runs_from_its_bytecode(tmp_path):
    """mcp_stdio.py started as a script was compiled again at every run's start (~2 ms, issue 30):
    the daemon starts it through mcp_stdio_start.py, which runs it from its bytecode (made once
    when missing or stale, as an import makes it) as the same `__main__`."""
    import shutil

    from predictorx.workflowmcp import mcp_stdio

    folder = tmp_path / "predictorx" / "workflowmcp"
    folder.mkdir(parents=True)
    for name in ("mcp_stdio.py", "mcp_stdio_start.py", "mcp_tools.json"):
        shutil.copy(Path(mcp_stdio.__file__).with_name(name), folder / name)
    (tmp_path / "env.json").write_text(json.dumps({"PREDICTORX_TOKEN": "t"}))
    hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for _ in range(2):
        p = subprocess.run([sys.executable, "-S", str(folder / "mcp_stdio_start.py"), "--env-file", str(tmp_path / "env.json")],
                           input=json.dumps(hello) + "\n", capture_output=True, text=True, timeout=60, env=env)
        assert json.loads(p.stdout)["result"]["serverInfo"]["name"] == "predictorx", p.stderr
        assert [x.name.split(".")[0] for x in (folder / "__pycache__").iterdir()] == ["mcp_stdio"]
    assert mcp_setup("claude", tmp_path, {"PREDICTORX_TOKEN": "t"}) and \
        json.loads((tmp_path / "predictorx.mcp.json").read_text())["mcpServers"]["predictorx"]["args"] == \
        ["-S", str(Path(mcp_stdio.__file__).with_name("mcp_stdio_start.py")), "--env-file", str(tmp_path / "predictorx-mcp.env.json")]


def test_the_env_files_values_are_in_the_environment_before_a_tool_runs(monkeypatch):
    from predictorx.workflowmcp.mcp_stdio import Front

    monkeypatch.setenv("PREDICTORX_ISSUE", "before")  # (so that the test's own value is undone after it)
    monkeypatch.delenv("PREDICTORX_ISSUE")
    seen = []

    def build():
        seen.append(os.environ.get("PREDICTORX_ISSUE"))
        raise RuntimeError("no server here")

    front = Front({"name": "predictorx", "instructions": "", "tools": []}, build, env={"PREDICTORX_ISSUE": "7"})
    assert front.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["result"] == {"tools": []}
    assert "PREDICTORX_ISSUE" not in os.environ
    answer = front.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x", "arguments": {}}})
    assert seen == ["7"] and "no server here" in answer["error"]["message"]


VALUES = [{"jsonrpc": "2.0", "id": 7, "result": {"tools": [{"name": "x", "description": "é “q” \n\t\\ \u2028 \U0001f600",
                                                            "inputSchema": {"type": "object", "required": []}}]}},
          {"a": [1, -2.5, 1e300, 10 ** 30, True, False, None, "", {}, []], "ü": {"nested": [[[]]]}},
          {"x": float("nan"), "y": float("inf"), "z": float("-inf")}, "plain", 3, [], {1: "int key", None: 0}]


def test_the_fronts_json_reads_and_writes_as_json_does():
    from predictorx.workflowmcp.mcp_stdio import json_dumps, json_loads

    for value in VALUES:
        text = json.dumps(value, ensure_ascii=False)
        assert json_dumps(value) == text
        assert json_dumps(json_loads(text)) == json_dumps(json.loads(text))
        assert json_dumps(json_loads(text.encode("utf-8"))) == text
    assert json_loads(b'\xef\xbb\xbf{"bom": 1}') == {"bom": 1}  # (json's own way with a byte order mark)
    for bad in ("{nope", '{"a": 1} x', "", b"\xff{}", "[1,]"):
        try:
            json.loads(bad)
        except ValueError as e:
            expected = str(e)
        try:
            json_loads(bad)
        except ValueError as e:
            assert str(e) == expected
        else:
            raise AssertionError(f"{bad!r} decoded")
    for unencodable in ({"a": object()}, {(1, 2): 3}):
        try:
            json_dumps(unencodable)
        except TypeError as e:
            assert "not" in str(e) and "Traceback" not in str(e)
        else:
            raise AssertionError("encoded")


def test_the_front_started_without_site_loads_it_for_a_tool_call(tmp_path):
    """The daemon starts the front with -S (issue 30): a tool call adds `site` first, so the SDK
    (in site-packages) answers it — here, as it answers a tool it does not have."""
    mcp_setup("claude", tmp_path, {"PREDICTORX_TOKEN": "t", "PREDICTORX_SERVER_URL": "http://127.0.0.1:9"})
    server = json.loads((tmp_path / "predictorx.mcp.json").read_text())["mcpServers"]["predictorx"]
    assert server["args"][0] == "-S"
    calls = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}},
             {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}}]
    p = subprocess.run([server["command"], *server["args"]], input="".join(json.dumps(c) + "\n" for c in calls),
                       capture_output=True, text=True, timeout=120)
    answers = [json.loads(line) for line in p.stdout.splitlines()]
    assert answers[1]["result"] == {"content": [{"type": "text", "text": "Unknown tool: no_such_tool"}],
                                    "isError": True}, (answers, p.stderr)
