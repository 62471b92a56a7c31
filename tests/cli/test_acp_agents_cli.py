"""`predictorx agent create --provider acp`: a command or a shipped profile is stored as the agent's
command line; without one, or with both, a sentence on stderr and nothing created."""

from __future__ import annotations

import json

from predictorx.agentconfig import acp_profiles
from predictorx.cli import small

from cli.test_predictorx_cli import _ok, px, server  # noqa: F401 — the fixtures



def _agents(px):  # noqa: F811
    return {a["name"]: a for a in json.loads(_ok(px("agent", "list", "--output", "json")))}


def test_an_acp_agent_from_a_command_or_a_profile(px):  # noqa: F811
    _ok(px("agent", "create", "--name", "mine", "--provider", "acp", "--acp-command", "my-agent --acp --x 'a b'"))
    _ok(px("agent", "create", "--name", "gem", "--provider", "acp", "--acp-profile", "gemini"))
    agents = _agents(px)
    assert agents["mine"]["command"] == ["my-agent", "--acp", "--x", "a b"]
    assert agents["gem"]["provider"] == "acp" and agents["gem"]["command"] == ["gemini", "--experimental-acp"]
    _ok(px("agent", "update", "gem", "--acp-profile", "opencode"))
    assert _agents(px)["gem"]["command"] == ["opencode", "acp"]


def test_bad_acp_agents_are_refused_with_a_sentence(px):  # noqa: F811
    code, _, err = px("agent", "create", "--name", "nocmd", "--provider", "acp")
    assert code != 0 and "needs the command that starts its ACP server" in err
    code, _, err = px("agent", "create", "--name", "two", "--provider", "acp", "--acp-profile", "gemini",
                      "--acp-command", "x")
    assert code == 2 and "not both" in err
    code, _, err = px("agent", "create", "--name", "bad", "--provider", "acp", "--acp-profile", "nope")
    assert code == 2 and "unknown ACP profile 'nope'" in err
    assert not {"nocmd", "two", "bad"} & set(_agents(px))


def test_the_help_names_every_shipped_profile():
    assert small.ACP_PROFILE_HELP.endswith("(" + ", ".join(acp_profiles.PROFILES) + ").")
