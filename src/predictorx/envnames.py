"""Which environment variable names an agent's variables may have: one list for both sides of a
claim (issue 28 §2; docs/security.md "Agent secrets and variables").

Reserved names (`reserved`) Predictor X sets itself, or they change how the sandbox's own programs
(bwrap, setpriv, /bin/sh) start: never an agent's variable, whoever sets it.

Runtime settings (`runtime_setting`) change how a runtime, the loader, a shell, git, a proxy or
TLS, or an agent's CLI behaves: what code runs in the agent's process, which model answers, where
the model's API key is sent. They are the agent's configuration, which only its owner decides
(machine consent): its owner may set one as the agent's own variable, but a workspace secret, which
an admin grants, may not have such a name. The server refuses such a secret and such a grant, and
leaves out of a claim a grant made before (service/agentenv.py); the member's daemon drops any
that a claim still carries from a grant (`for_run`). A model's API key or token (`*_API_KEY`,
`*_TOKEN`) is the usual thing to grant, and stays grantable.

Names are compared upper-cased: Windows' names are case-insensitive, and curl and Python read
`http_proxy` as well as `HTTP_PROXY`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol, TypeVar

log = logging.getLogger(__name__)

RESERVED = frozenset({"PATH", "HOME", "PWD", "USER", "LOGNAME", "SHELL", "TMPDIR", "IS_SANDBOX", "ENV", "BASH_ENV",
                      "IFS", "GCONV_PATH", "HOSTALIASES", "LOCALDOMAIN", "RES_OPTIONS", "MALLOC_CHECK_"})
RESERVED_PREFIXES = ("PREDICTORX_", "AGENTS_ROOM_", "LD_", "DYLD_")

#: Runtimes, the loader, shells and the programs they start, git, ssh, proxies and TLS.
RUNTIME = frozenset({
    "GLIBC_TUNABLES", "LOCPATH", "NLSPATH", "TMP", "TEMP",
    "NODE_OPTIONS", "NODE_PATH", "NODE_TLS_REJECT_UNAUTHORIZED", "NODE_REPL_EXTERNAL_MODULE",
    "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "RUBYOPT", "RUBYLIB",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "DOTNET_STARTUP_HOOKS",
    "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "CDPATH", "GLOBIGNORE", "ZDOTDIR", "INPUTRC",
    "EDITOR", "VISUAL", "PAGER", "MANPAGER", "LESSOPEN", "LESSCLOSE", "BROWSER",
    "GNUPGHOME", "SSL_CERT_FILE", "SSL_CERT_DIR", "SSLKEYLOGFILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "CURL_HOME", "WGETRC",
})
RUNTIME_PREFIXES = ("PYTHON", "BASH_", "CORECLR_", "GIT_", "GCM_", "SSH_", "XDG_", "NPM_CONFIG_", "PIP_", "UV_")
RUNTIME_SUFFIXES = ("_PROXY", "_CA_BUNDLE", "_CA_CERTS")

#: The agent CLIs' own settings (agents/*.py, agentconfig/acp_profiles*.py, daemon/cliconfig.py):
#: their config dirs, endpoints and models. Their keys and tokens are not among them (CREDENTIALS).
AGENT_CLI = frozenset({"CLAUDECODE", "MODEL"})
AGENT_CLI_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "CODEX_", "GEMINI_", "OPENCODE_", "KILO_", "COPILOT_", "CLINE_",
                      "PI_", "GPTME_", "VIBE_", "FAST_AGENT_")
AGENT_CLI_SUFFIXES = ("_BASE_URL", "_API_BASE", "_MODEL")
CREDENTIALS = ("_API_KEY", "_TOKEN")


def reserved(name: str) -> bool:
    upper = name.upper()
    return upper in RESERVED or upper.startswith(RESERVED_PREFIXES)


def runtime_setting(name: str) -> bool:
    """Whether `name` changes what the agent runs or which model it asks where (reserved names too)."""
    upper = name.upper()
    if reserved(upper) or upper in RUNTIME or upper.startswith(RUNTIME_PREFIXES) or upper.endswith(RUNTIME_SUFFIXES):
        return True
    if upper.endswith(AGENT_CLI_SUFFIXES):
        return True
    return (upper in AGENT_CLI or upper.startswith(AGENT_CLI_PREFIXES)) and not upper.endswith(CREDENTIALS)


class Delivered(Protocol):
    """A claim's variable (protocol.EnvVar)."""

    @property
    def name(self) -> str: ...

    @property
    def scope(self) -> str | None: ...


D = TypeVar("D", bound=Delivered)


def for_run(delivered: Iterable[D], run_id: str) -> list[D]:
    """The daemon's side: a claim's variables without the reserved names, and without the runtime
    settings but those the agent's owner set as its own (`scope == "agent"`; an older server does
    not say whose a variable is, so none of its runtime settings is taken). Each one dropped is
    logged by name, never with its value."""
    kept = []
    for var in delivered:
        if reserved(var.name):
            log.warning("task %s: its claim gave the agent %s, a name Predictor X sets itself; left out",
                        run_id, var.name)
        elif var.scope != "agent" and runtime_setting(var.name):
            log.warning("task %s: its claim gave the agent %s from a workspace secret; left out: it changes how "
                        "the agent's runtime or CLI behaves, which only the agent's owner sets", run_id, var.name)
        else:
            kept.append(var)
    return kept
