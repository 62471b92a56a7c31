"""A sandboxed run's own copy of its CLI's config dir (issue 29 finding 3).

The CLI needs its login, settings and earlier sessions to start and resume; mounting the person's
`~/.claude`, `~/.claude.json`, `~/.codex`, `~/.gemini` or OpenCode's dirs writable let an agent
write a `SessionStart` hook into `~/.claude/settings.json` that the person's next unsandboxed
session would run. Now each sandboxed run gets, at the same paths:

- a copy of the person's config, made for this run in its env root: what the agent writes
  there ends with the run. The person's own sessions, logs and caches are not copied (Codex's
  databases among them: its thread history, logs, memories and goals);
- on top of the copy, read-only: the files that hold hooks, MCP servers and settings, and the
  person's own folders the CLI only reads (plugins, commands, skills), which are not copied;
- a file the CLI rewrites all along (`~/.claude.json`: start counts, tips, per-folder state), a
  copy in the sandbox's own memory (IN_MEMORY): writable there, gone with the run. Bound
  read-only, Claude Code tried each of its ~8 saves three ways (a rename onto a mount point
  fails, EBUSY; then two opens, EROFS): ~16 ms of CPU a run (issue 30);
- the sessions the CLI keeps (Claude Code's `projects/`, Codex's `sessions/`, Gemini's `tmp/`,
  OpenCode's data dir) in a folder per agent in the daemon's own area (`<workspaces
  root>/.cli-sessions/<agent>/`), so a follow-up run of that agent resumes its session;
- the person's login file itself, writable: a CLI that refreshes its OAuth token must store the
  new one where the person's next run finds it (a refresh token is single-use). A login file is
  data the CLI reads, never a program it runs.

Without the sandbox the CLI uses the person's own dirs, as the person's own runs do.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .envroot import path_component

#: How an overlay is put in place (SandboxPlan.arguments): bound read-only, bound writable, or
#: copied into the sandbox's own memory when it starts (bwrap --file: writable, gone with the run).
READ_ONLY, WRITABLE, IN_MEMORY = "read-only", "writable", "in memory"
#: (source outside, path inside, how) — SandboxPlan.overlays.
Overlay = tuple[Path, Path, str]
SESSIONS_DIR = ".cli-sessions"
COPY_DIR = "cli-config"


@dataclass(frozen=True)
class ConfigPlace:
    """One file or folder a CLI reads its configuration from."""

    name: str                          # a label for its copy and its kept sessions
    default: str                       # relative to $HOME
    variable: str | None = None        # an environment variable that moves it…
    under_variable: str = ""           # …to this path below the variable's value
    is_file: bool = False              # a file, copied into the sandbox's memory (IN_MEMORY)
    kept: tuple[str, ...] = ()         # sessions: per agent, across runs
    skipped: tuple[str, ...] = ()      # the person's own history, logs, caches: not copied (names or globs)
    locked: tuple[str, ...] = ()       # hooks, MCP servers, settings: read-only on top of the copy
    shared: tuple[str, ...] = ()       # what the CLI only reads (plugins): the person's, read-only, not copied
    login: tuple[str, ...] = ()        # the person's own file, writable (token refresh)
    all_kept: bool = False             # the whole folder is the CLI's session store

    def where(self, home: Path, env: dict[str, str]) -> Path:
        value = env.get(self.variable) if self.variable else None
        if value and os.path.isabs(value):
            return Path(value) / self.under_variable if self.under_variable else Path(value)
        return home / self.default


_CLAUDE_DIR = ConfigPlace("claude", ".claude", "CLAUDE_CONFIG_DIR", kept=("projects",),
                          skipped=("shell-snapshots", "todos", "statsig", "debug", "file-history", "logs", "ide",
                                   "session-env", "telemetry", "history.jsonl", "paste-cache", "plans", "backups"),
                          locked=("settings.json", "settings.local.json"), login=(".credentials.json",),
                          shared=("plugins", "commands", "agents", "skills", "output-styles"))
#: OpenCode's and Kilo's state: what the person typed (their prompt history and stashed drafts)
#: and the files they opened (frecency), all from their TUI.
_TUI_HISTORY = ("prompt-history.jsonl", "prompt-stash.jsonl", "frecency.jsonl")
PLACES: dict[str, tuple[ConfigPlace, ...]] = {
    "claude": (_CLAUDE_DIR, ConfigPlace("claude.json", ".claude.json", is_file=True)),
    "codex": (ConfigPlace("codex", ".codex", "CODEX_HOME", kept=("sessions",),
                          # its databases hold the person's threads, logs, memories and goals
                          skipped=("archived_sessions", "log", "history.jsonl", "tmp", ".tmp", "*.sqlite*"),
                          locked=("config.toml",), login=("auth.json",), shared=("skills", "prompts")),),
    # (cli-browser-profile: the browser its browser agent drives, with the person's cookies and logins)
    "gemini": (ConfigPlace("gemini", ".gemini", kept=("tmp",), skipped=("history", "cli-browser-profile"),
                           locked=("settings.json",), login=("oauth_creds.json",), shared=("extensions", "commands")),),
    # Qwen Code is a Gemini CLI fork: the same layout under ~/.qwen (an ACP-only agent here). Left
    # out: copies of the files the person's sessions edited (file-history), their worktrees, their
    # chat channels' sessions and credentials, their usage record, arena runs and artifacts, their
    # sessions' registry and their agent teams' state (teams, their tasks and boards).
    "qwen": (ConfigPlace("qwen", ".qwen", kept=("tmp", "projects"),
                         skipped=("history", "logs", "file-history", "worktrees", "channels", "usage_record.jsonl",
                                  "arena", "artifacts", "sessions", "teams", "tasks", "boards"),
                         locked=("settings.json",), login=("oauth_creds.json",), shared=("extensions", "commands")),),
    # Kilo is an OpenCode fork: the same layout under its own name (an ACP-only agent here).
    "kilo": (ConfigPlace("kilo-config", ".config/kilo", "XDG_CONFIG_HOME", "kilo",
                         locked=("kilo.json", "kilo.jsonc", "opencode.json", "config.json"),
                         shared=("node_modules", "plugin", "agent", "command")),
             ConfigPlace("kilo-data", ".local/share/kilo", "XDG_DATA_HOME", "kilo", all_kept=True, login=("auth.json",)),
             ConfigPlace("kilo-state", ".local/state/kilo", "XDG_STATE_HOME", "kilo", skipped=_TUI_HISTORY)),
    # GitHub Copilot CLI: ~/.copilot (or $COPILOT_HOME); its sessions in session-state.
    # (session-store.db*: the person's sessions and turns, with a search index of them;
    # command-history-state.json: every prompt the person typed)
    "copilot": (ConfigPlace("copilot", ".copilot", "COPILOT_HOME", kept=("session-state",),
                            skipped=("logs", "session-store.db*", "command-history-state.json"),
                            locked=("config.json", "mcp-config.json"), shared=("pkg",)),),
    "opencode": (ConfigPlace("opencode-config", ".config/opencode", "XDG_CONFIG_HOME", "opencode",
                             locked=("opencode.json", "opencode.jsonc", "config.json"),
                             shared=("node_modules", "plugin", "agent", "command")),
                 ConfigPlace("opencode-data", ".local/share/opencode", "XDG_DATA_HOME", "opencode",
                             all_kept=True, login=("auth.json",)),
                 ConfigPlace("opencode-state", ".local/state/opencode", "XDG_STATE_HOME", "opencode",
                             skipped=_TUI_HISTORY)),
}

# pi (an ACP agent through pi-acp): ~/.pi/agent (or $PI_CODING_AGENT_DIR) holds its settings, its
# providers (models.json), its login (auth.json) and its sessions; pi-acp keeps which ACP session is
# which pi session file in ~/.pi/pi-acp (its session-map.json, always under HOME), per agent too.
PLACES["pi"] = (ConfigPlace("pi-agent", ".pi/agent", "PI_CODING_AGENT_DIR", kept=("sessions",), skipped=("bin",),
                            locked=("settings.json", "models.json", "keybindings.json"), login=("auth.json",),
                            shared=("extensions", "prompts", "skills", "themes", "tools")),
                ConfigPlace("pi-acp", ".pi/pi-acp", all_kept=True))
# Cline: ~/.cline (or $CLINE_DIR); its settings, provider config (settings/providers.json) and
# sessions under data/ (or $CLINE_DATA_DIR): the sessions' files and their databases kept per agent.
# Left out: the reports and events of the person's scheduled runs (cron/), their agent teams'
# state (teams/) and their chat connectors' data (connectors/).
PLACES["cline"] = (ConfigPlace("cline", ".cline", "CLINE_DIR", skipped=("data", "cron")),
                   ConfigPlace("cline-data", ".cline/data", "CLINE_DATA_DIR", kept=("sessions", "db"),
                               skipped=("logs", "cache", "teams", "connectors")))

def places(provider: str, home: Path, env: dict[str, str]) -> list[Path]:
    """Where `provider` keeps its config on this machine (for what the sandbox must never bind)."""
    return [p.where(home, env) for p in PLACES.get(provider, ())]


def prepare(provider: str, home: Path, env: dict[str, str], run_dir: Path, sessions_dir: Path) -> list[Overlay]:
    """Copy the person's config of `provider` into `run_dir`; the mounts that put it in place."""
    overlays: list[Overlay] = []
    for place in PLACES.get(provider, ()):
        target = place.where(home, env)
        if place.is_file:
            if target.is_file():
                overlays.append((target, target, IN_MEMORY))  # (read once, as the sandbox starts)
            continue
        if place.all_kept:
            overlays.append((_made(sessions_dir / place.name), target, WRITABLE))
        else:
            copy = run_dir / place.name
            # The login is bound from the person's own file, never left behind in a copy.
            _copy_tree(target, copy, ignored={*place.skipped, *place.kept, *place.shared, *place.login})
            overlays.append((copy, target, WRITABLE))
            overlays += [(target / name, target / name, READ_ONLY) for name in place.shared if (target / name).is_dir()]
            overlays += [(_made(sessions_dir / place.name / k), target / k, WRITABLE) for k in place.kept]
            overlays += [(copy / name, target / name, READ_ONLY) for name in place.locked if (copy / name).is_file()]
        overlays += [(target / name, target / name, WRITABLE) for name in place.login if (target / name).is_file()]
    return overlays


def sessions_dir(workspaces_root: Path, agent_id: str) -> Path:
    """The daemon's own folder for one agent's CLI sessions (never the person's config dir)."""
    return workspaces_root / SESSIONS_DIR / path_component(agent_id)


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def _copy_tree(source: Path, copy: Path, *, ignored: set[str]) -> None:
    """`source` (the person's folder) into `copy`, top-level `ignored` names left out; what cannot
    be copied (a socket, a file that vanished) is left out too."""
    if not source.is_dir():
        copy.mkdir(parents=True, exist_ok=True)
        return

    def ignore(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if any(fnmatch.fnmatchcase(n, i) for i in ignored)] if Path(folder) == source else []
    try:
        shutil.copytree(source, copy, symlinks=True, ignore=ignore, dirs_exist_ok=True, copy_function=shutil.copy)
    except shutil.Error:
        pass  # copytree copied everything else before it reports what failed

# gptme (an ACP-only agent here): its config under XDG_CONFIG_HOME, its conversations (the
# session store, which a follow-up continues) under XDG_DATA_HOME, kept per agent.
PLACES["gptme"] = (ConfigPlace("gptme-config", ".config/gptme", "XDG_CONFIG_HOME", "gptme",
                               locked=("config.toml", "config.local.toml")),
                   ConfigPlace("gptme-data", ".local/share/gptme", "XDG_DATA_HOME", "gptme", all_kept=True),
                   # (workspace-snapshots: git copies of the person's other workspaces, their code)
                   ConfigPlace("gptme-state", ".local/state/gptme", "XDG_STATE_HOME", "gptme",
                               skipped=("workspace-snapshots",)))
# Mistral Vibe (an ACP-only agent here): ~/.vibe (or $VIBE_HOME); its sessions in logs/.
# (Left out: the person's prompt history, plans and git worktrees of their repositories.)
PLACES["vibe"] = (ConfigPlace("vibe", ".vibe", "VIBE_HOME", kept=("logs",), skipped=("vibehistory", "plans", "worktrees"),
                              locked=("config.toml", "hooks.toml")),)
