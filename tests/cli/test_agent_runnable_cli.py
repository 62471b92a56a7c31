"""`predictorx agent create` saves an agent no daemon of yours can run, and says so on stderr with
the way to get its CLI (issue 26 §2); one that can run gets no note."""

from __future__ import annotations

import pytest


@pytest.fixture
def px(served_app, run_cli):
    return run_cli


def test_creating_an_agent_nobody_can_run_says_how_to_fix_it(px):
    code, out, err = px("agent", "create", "--name", "c1", "--provider", "codex")
    assert code == 0 and "Created agent c1" in out
    assert "note: c1 cannot run yet" in err and "npm install -g @openai/codex" in err
    assert "predictorx daemon start" in err
