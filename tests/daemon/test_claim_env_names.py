"""A member's daemon keeps its machine's runtime settings its owner's (issue 28 §2, envnames.py):
a claim's variable that changes what the agent runs or which model it asks where (NODE_OPTIONS,
ANTHROPIC_BASE_URL, a proxy …) reaches the agent only when the agent's owner set it as its own,
never from a workspace secret granted by an admin, nor from an older server that does not say
whose it is. Each one left out is logged by name, never with its value; a granted API key passes."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from predictorx import envnames
from predictorx.daemon.runner import TaskRun
from predictorx.protocol import Claim, EnvVar, MessageBatch

from fake_host import FakeHost

#: A stand-in `claude`: writes the environment it was given, and ends.
_CLAUDE = """
import json, os, sys
json.dump(dict(os.environ), open(sys.argv[1], "w"))
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "ok", "session_id": "s-1"}))
"""


class _Api:
    server_url = "http://127.0.0.1:9"

    async def status(self, task_id: str, status: str, **_: Any) -> dict[str, Any]:
        return {}

    async def call(self, method: str, path: str, body: Any = None, retries: int = 0) -> Any:
        return {}

    async def upload(self, task_id: str, batch: MessageBatch) -> dict[str, Any]:
        return {"last_seq": batch.messages[-1].seq if batch.messages else -1, "stop": None}


def _var(name: str, value: str, scope: str | None) -> dict[str, Any]:
    return {"name": name, "value": value, "secret": True, **({"scope": scope} if scope else {})}


async def test_a_grants_runtime_settings_never_reach_the_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("IS_SANDBOX", "1")  # (these tests may run as root)
    for name in ("NODE_OPTIONS", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    script, seen = tmp_path / "claude.py", tmp_path / "env.json"
    script.write_text(_CLAUDE)
    env = [_var("NODE_OPTIONS", "--require=/tmp/evil-value.js", "workspace"),
           _var("https_proxy", "http://evil-value.example:3128", "workspace"),
           _var("ANTHROPIC_BASE_URL", "https://evil-value.example", None),  # an older server: whose, unsaid
           _var("ANTHROPIC_API_KEY", "sk-granted-key-0000", "workspace"),  # a key: the usual grant
           _var("ANTHROPIC_MODEL", "owners-model", "agent"),  # the owner's own choice
           _var("PREDICTORX_TOKEN", "pxt_evil-value", "agent")]  # never anyone's
    wire = {"task": {"id": "t-1", "workspace_id": "w-1"}, "issue": {"number": 3, "title": "Fix it"}, "context": {},
            "token": "pxt_x", "env": env,
            "agent": {"name": "c", "provider": "claude", "command": [sys.executable, str(script), str(seen)]}}
    host = FakeHost(tmp_path / "ws", _Api())
    with caplog.at_level(logging.WARNING, logger=envnames.__name__):
        await TaskRun(host, Claim.from_wire(json.loads(json.dumps(wire)))).run()  # type: ignore[arg-type]
    assert host.finished["status"] == "completed", host.finished
    got = json.loads(seen.read_text())
    assert "NODE_OPTIONS" not in got and "https_proxy" not in got and "ANTHROPIC_BASE_URL" not in got
    assert got["ANTHROPIC_API_KEY"] == "sk-granted-key-0000" and got["ANTHROPIC_MODEL"] == "owners-model"
    assert got["PREDICTORX_TOKEN"] == "pxt_x"  # the task's own token, not the claim's variable
    logged = caplog.text
    assert all(n in logged for n in ("NODE_OPTIONS", "https_proxy", "ANTHROPIC_BASE_URL", "PREDICTORX_TOKEN"))
    assert "evil-value" not in logged and "ANTHROPIC_API_KEY" not in logged


@pytest.mark.parametrize("name", ["NODE_OPTIONS", "node_options", "LD_PRELOAD", "PYTHONSTARTUP", "PERL5OPT",
                                  "JAVA_TOOL_OPTIONS", "DOTNET_STARTUP_HOOKS", "BASH_ENV", "PROMPT_COMMAND",
                                  "GIT_SSH_COMMAND", "SSH_ASKPASS", "ALL_PROXY", "no_proxy", "SSL_CERT_FILE",
                                  "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "OPENAI_BASE_URL",
                                  "GOOGLE_GEMINI_BASE_URL", "OPENAI_MODEL", "ANTHROPIC_CUSTOM_HEADERS",
                                  "CLAUDE_CONFIG_DIR", "CLAUDECODE", "CODEX_HOME", "GEMINI_CLI_TRUST_WORKSPACE",
                                  "OPENCODE_CONFIG", "XDG_CONFIG_HOME", "MODEL", "EDITOR", "GLIBC_TUNABLES"])
def test_runtime_settings(name: str) -> None:
    assert envnames.runtime_setting(name)
    assert envnames.for_run([EnvVar(name, "v", scope="workspace")], "t-1") == []


@pytest.mark.parametrize("name", ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "GEMINI_API_KEY", "OPENAI_API_KEY",
                                  "CLAUDE_CODE_OAUTH_TOKEN", "COPILOT_GITHUB_TOKEN", "GITHUB_TOKEN", "DATABASE_URL",
                                  "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY", "NODE_ENV"])
def test_keys_tokens_and_a_projects_own_variables_stay_grantable(name: str) -> None:
    assert not envnames.runtime_setting(name)
    assert [v.name for v in envnames.for_run([EnvVar(name, "v", scope="workspace")], "t-1")] == [name]
