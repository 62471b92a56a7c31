"""`predictorx issue list` with filters and search, `predictorx issue label` and `predictorx label …`
(issue 26 §3): the CLI sends the issue list's query to `GET /api/issues`; bad input exits
non-zero with a sentence on stderr."""

from __future__ import annotations

import json


def test_issue_list_filters_searches_and_labels(served_app, run_cli):
    for args in (("--title", "Flaky payment tests", "--priority", "high"), ("--title", "Dark mode contrast"),
                 ("--title", "Slow search", "--status", "backlog")):
        assert run_cli("issue", "create", *args)[0] == 0

    def numbers(*args: str) -> list[int]:
        code, out, err = run_cli("issue", "list", "-o", "json", *args)
        assert code == 0, err
        return [i["number"] for i in json.loads(out)]

    assert numbers() == [3, 2, 1]
    assert numbers("--status", "backlog") == [3]
    assert numbers("--status", "backlog", "--status", "todo", "--sort", "oldest") == [1, 2, 3]
    assert numbers("--search", "flaky") == [1]
    assert numbers("--search", "dark", "--priority", "high") == []

    code, out, _ = run_cli("issue", "label", "1", "bug", "payments")
    assert code == 0 and "bug, payments" in out
    assert numbers("--label", "payments") == [1]
    code, out, _ = run_cli("issue", "list", "--label", "bug")
    assert "Flaky payment tests" in out and "bug, payments" in out
    code, out, _ = run_cli("issue", "label", "1", "payments", "--remove")
    assert code == 0 and "Issue 1: bug." in out
    code, out, _ = run_cli("label", "list")
    assert code == 0 and "bug" in out and "payments" in out
    assert run_cli("label", "create", "ui", "--color", "#175cd3")[0] == 0
    assert run_cli("label", "update", "ui", "--name", "web")[0] == 0
    assert run_cli("label", "delete", "web")[0] == 0

    code, _, err = run_cli("issue", "list", "--status", "open")
    assert code != 0 and "status must be one of" in err
    code, _, err = run_cli("label", "create", "bug")
    assert code != 0 and "already exists" in err
    code, _, err = run_cli("issue", "label", "1", "nothing", "--remove")
    assert code != 0 and "no label named" in err
