"""`predictorx forge …` and `predictorx project update`'s forge policy flags against a real server
over HTTP (served in this process, so the test-only forge kind is registered in it): the token
comes from stdin or a named environment variable, never argv; it is never printed; a forge's
refusal is one sentence on stderr with a non-zero exit."""

from __future__ import annotations

import json

import pytest


from forge_testkit import GOOD_TOKEN, KIND, REFUSAL, REFUSED_TOKEN, registered_kit_forge


@pytest.fixture
def server(served_app):
    with registered_kit_forge():
        yield served_app


@pytest.fixture
def px(server, run_cli):
    return run_cli


def test_forge_commands_never_take_or_print_the_token(px, server, monkeypatch):
    code, out, err = px("forge", "add", "--kind", KIND, "--name", "gh", "--url", "https://forge.test",
                        "--token-stdin", stdin=GOOD_TOKEN + "\n")
    assert code == 0, err
    assert "shown only once" in out and "/api/forges/" in out and GOOD_TOKEN not in out + err
    secret = out.split("secret: ", 1)[1].split()[0]
    assert len(secret) >= 40

    code, out, err = px("forge", "list")
    assert code == 0 and "gh" in out and f"••••{GOOD_TOKEN[-4:]}" in out and GOOD_TOKEN not in out
    assert secret not in out
    code, out, _ = px("forge", "list", "--output", "json")
    [row] = json.loads(out)
    assert row["credential"] == f"set, ••••{GOOD_TOKEN[-4:]}" and "webhook_secret" in row and row["webhook_secret"] == "set"

    code, out, err = px("forge", "test", "gh")
    assert code == 0 and "acts as octo-bot" in out, err

    monkeypatch.setenv("GL_TOKEN", REFUSED_TOKEN)
    code, out, err = px("forge", "update", "gh", "--token-env", "GL_TOKEN")
    assert code == 0 and f"••••{REFUSED_TOKEN[-4:]}" in out and REFUSED_TOKEN not in out, err
    code, out, err = px("forge", "test", "gh")
    assert code == 1 and REFUSAL in err and "Traceback" not in err and REFUSED_TOKEN not in err

    code, out, err = px("forge", "rotate-webhook-secret", "gh", "--output", "json")
    assert code == 0 and json.loads(out)["webhook_secret"] not in (secret, "set")

    code, out, err = px("forge", "remove", "gh")
    assert code == 0 and "removed forge connection gh" in out
    code, out, err = px("forge", "get", "gh")
    assert code == 1 and "not found" in err


def test_a_token_is_never_an_argument(px):
    code, _, err = px("forge", "add", "--kind", KIND, "--name", "gh", "--url", "https://forge.test",
                      "--token", GOOD_TOKEN)
    assert code == 2 and "No such option" in err
    code, _, err = px("forge", "add", "--kind", KIND, "--name", "gh", "--url", "https://forge.test")
    assert code == 2 and "--token-stdin" in err and "never an argument" in err  # stdin is no terminal here
    code, _, err = px("forge", "add", "--kind", KIND, "--name", "gh", "--url", "https://forge.test",
                      "--token-env", "NOT_SET_ANYWHERE")
    assert code == 2 and "NOT_SET_ANYWHERE is not set" in err
    code, _, err = px("forge", "add", "--kind", "svn", "--name", "gh", "--url", "https://forge.test",
                      "--token-stdin", stdin=GOOD_TOKEN)
    assert code == 1 and "unknown forge kind 'svn'" in err and GOOD_TOKEN not in err


def test_project_update_sets_the_forge_policy(px):
    code, out, err = px("project", "create", "--title", "Shop", "--output", "json")
    pid = json.loads(out)["id"]
    code, out, err = px("project", "update", pid, "--no-auto-pr", "--max-followups", "2", "--on-merge", "in_review",
                        "--output", "json")
    assert code == 0, err
    assert json.loads(out)["forge_policy"] == {"auto_push": True, "auto_pr": False, "draft": True,
                                               "max_followups": 2, "on_merge": "in_review"}
    code, out, err = px("project", "update", pid, "--on-merge", "closed")
    assert code == 1 and "on_merge must be one of done, in_review" in err
    code, out, err = px("project", "update", pid)
    assert code == 2 and "nothing to change" in err
