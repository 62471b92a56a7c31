"""`predictorx agent secret|env …`, `predictorx secret …` and `predictorx audit` against a real
server over HTTP (served in this process): a secret's value comes from stdin or a named variable,
never argv, and is never printed; the audit log prints as a table, JSON or JSON Lines."""

from __future__ import annotations

import json
import uuid

import pytest



SECRET = "sk-cli-" + uuid.uuid4().hex


@pytest.fixture
def px(served_app, run_cli):
    return run_cli


def test_secrets_from_stdin_or_a_variable_never_printed(px, monkeypatch):
    assert px("agent", "create", "--name", "bot", "--provider", "command", "--command", "true")[0] == 0
    code, out, err = px("agent", "secret", "set", "bot", "API_KEY", "--value-stdin", stdin=SECRET + "\n")
    assert code == 0 and SECRET not in out + err and SECRET[-4:] in out, err
    code, _, err = px("agent", "secret", "set", "bot", "API_KEY")  # not a tty: no prompt, no argv
    assert code == 2 and "--value-stdin" in err
    monkeypatch.setenv("MY_DB", "pg-" + SECRET)
    assert px("secret", "set", "DB_PASSWORD", "--value-env", "MY_DB")[0] == 0
    assert px("agent", "secret", "grant", "bot", "DB_PASSWORD")[0] == 0
    assert px("agent", "env", "set", "bot", "COLOR=blue")[0] == 0
    code, out, _ = px("agent", "secret", "list", "bot", "--output", "json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert code == 0 and SECRET not in out and set(rows) == {"API_KEY", "COLOR", "DB_PASSWORD"}
    assert rows["COLOR"]["value"] == "blue" and rows["DB_PASSWORD"]["granted"]
    code, out, _ = px("agent", "env", "list", "bot")
    assert code == 0 and "…" + SECRET[-4:] in out and "blue" in out and SECRET not in out
    code, _, err = px("agent", "secret", "set", "bot", "PATH", "--value-stdin", stdin="/evil-path\n")
    assert code != 0 and "PATH" in err and "/evil-path" not in err
    assert px("agent", "secret", "revoke", "bot", "DB_PASSWORD")[0] == 0
    assert px("agent", "secret", "unset", "bot", "API_KEY")[0] == 0
    assert px("secret", "unset", "DB_PASSWORD")[0] == 0

    code, out, _ = px("audit", "--output", "jsonl", "--all")
    events = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and SECRET not in out
    assert [e["action"] for e in events][:3] == ["secret.unset", "secret.unset", "secret.revoke"]
    code, out, _ = px("audit", "--action", "secret", "--limit", "2", "--output", "json")
    assert code == 0 and len(json.loads(out)) == 2
    code, out, _ = px("audit", "--actor", "owner")
    assert code == 0 and "secret.set" in out


def test_a_runtime_setting_is_no_workspace_secret_and_is_not_granted(px):
    """envnames.py: what an agent runs is its owner's to set, as its own variable; never a grant."""
    assert px("agent", "create", "--name", "bot", "--provider", "command", "--command", "true")[0] == 0
    evil = "--require=/tmp/evil-" + uuid.uuid4().hex + ".js"
    code, out, err = px("secret", "set", "NODE_OPTIONS", "--value-stdin", stdin=evil + "\n")
    assert code == 1 and "NODE_OPTIONS" in err and "only its owner" in err and evil not in out + err, err
    code, _, err = px("agent", "secret", "grant", "bot", "ANTHROPIC_BASE_URL")
    assert code == 1 and "ANTHROPIC_BASE_URL" in err and "only its owner" in err, err
    assert px("agent", "env", "set", "bot", "ANTHROPIC_BASE_URL=https://gw.example")[0] == 0  # the owner's own
    assert px("secret", "set", "ANTHROPIC_API_KEY", "--value-stdin", stdin=SECRET + "\n")[0] == 0  # a key is granted
    assert px("agent", "secret", "grant", "bot", "ANTHROPIC_API_KEY")[0] == 0


def test_the_retention_is_shown_and_set_from_the_cli(px):
    code, out, err = px("audit", "retention")
    assert code == 0 and "kept 365 days (the server's default" in out, err
    code, out, err = px("audit", "retention", "5")
    assert code != 0 and "at least 30 days" in err
    code, out, _ = px("audit", "retention", "45")
    assert code == 0 and "kept 45 days (this workspace's setting" in out
    code, out, _ = px("audit", "--action", "audit")
    assert code == 0 and "audit.retention" in out
    code, out, _ = px("audit", "retention", "--server-default")
    assert code == 0 and "the server's default" in out
    code, _, err = px("audit", "retention", "45", "--server-default")
    assert code == 2 and "not both" in err
