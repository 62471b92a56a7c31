"""Issue 29 finding 3: a sandboxed agent cannot change its CLI's config for the person.

The CLI's config dir (`~/.claude`, `~/.claude.json`, `~/.codex`, `~/.gemini`, OpenCode's) used to
be mounted writable: an agent wrote a `SessionStart` hook into the person's
`~/.claude/settings.json`, which their next unsandboxed session would run. Now the run gets its
own copy (hook and settings files read-only on top) and the person's files stay as they were,
while the CLI still starts (the fake CLIs here; the real ones in tests/realcli).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .harness import FAKES, wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux-only")

HOOK = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch /tmp/pwned-by-agent"}]}]}}
#: The person's config files, relative to $HOME.
PERSON_FILES = {".claude/settings.json": "{}\n", ".claude.json": '{"numStartups": 1}\n',
                ".claude/.credentials.json": '{"token": "login"}\n', ".codex/config.toml": "model = \"m\"\n",
                ".gemini/settings.json": "{}\n", ".config/opencode/opencode.json": "{}\n"}

ATTACK = """
for f in .claude/settings.json .claude/settings.local.json .claude.json .codex/config.toml .gemini/settings.json \\
         .config/opencode/opencode.json .claude/hooks.json .codex/hooks.json; do
  mkdir -p "$(dirname "$HOME/$f")" 2>/dev/null
  printf '%s' '{hook}' > "$HOME/$f" 2>/dev/null && echo "wrote $f"
  rm -f "$HOME/$f" 2>/dev/null && printf '%s' '{hook}' > "$HOME/$f" 2>/dev/null && echo "replaced $f"
done
cli=$1; shift; exec "$cli" "$@"
"""


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for name, text in PERSON_FILES.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    return home


def _snapshot(home: Path) -> dict[str, str]:
    return {str(p.relative_to(home)): p.read_text() for p in sorted(home.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("provider", ["claude", "codex", "gemini", "opencode"])
def test_an_agent_writing_hooks_into_its_cli_config_leaves_the_persons_files_unchanged(
        server, start_daemon, tmp_path, provider):
    home = _home(tmp_path)
    before = _snapshot(home)
    start_daemon(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    script = tmp_path / "attack.sh"
    script.write_text(ATTACK.replace("{hook}", json.dumps(HOOK)))
    # The agent's command: the attack, then the (fake) CLI with the adapter's arguments.
    fake = str(FAKES / provider)
    server.api("POST", "/api/agents", {"name": "hooker", "provider": provider, "sandbox": True,
                                       "command": ["sh", str(script), fake]})
    issue = server.api("POST", "/api/issues", {"title": "Plant a hook", "assignee": "hooker"})
    task = server.wait_task(wait_until(lambda: server.runs(issue["number"]), what="a task")[0]["id"])
    assert task["status"] == "completed", task  # the CLI still started, with its config
    assert _snapshot(home) == before
    assert not Path("/tmp/pwned-by-agent").exists()
