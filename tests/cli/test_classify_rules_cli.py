"""`predictorx classify-rules …` and `predictorx classify` against a real server over HTTP (served
in this process): a workspace adds its own language as a TOML file, the table uses it at once, a
broken file is one sentence on stderr with a non-zero exit, and a pending classification is
answered with `classify --issue … --classification …` (issue 24 §6)."""

from __future__ import annotations

import json

import pytest



SPANISH = """
language = "es"
lead = ["por favor"]
[[signal]]
id = "es.bug.roto"
category = "bug_report"
weight = 5
terms = ["roto", "se cuelga", "no funciona"]
"""


@pytest.fixture
def px(served_app, run_cli):
    return run_cli


def test_a_workspace_adds_a_language_from_the_command_line(px, tmp_path):
    code, out, _ = px("classify", "La exportación no funciona", "-o", "json")
    assert code == 0 and json.loads(out)["method"] == "pending"
    f = tmp_path / "spanish.toml"
    f.write_text(SPANISH, encoding="utf-8")
    code, out, err = px("classify-rules", "add", str(f))
    assert code == 0 and "spanish" in out, err
    code, out, _ = px("classify-rules", "list", "-o", "json")
    assert [r["name"] for r in json.loads(out)] == ["spanish"]
    code, out, _ = px("classify-rules", "show", "spanish")
    assert out == SPANISH
    code, out, _ = px("classify", "La exportación no funciona", "-o", "json")
    got = json.loads(out)
    assert (got["category"], got["workflow"], got["rule"]) == ("bug_report", "bug-triage", "es.bug.roto")
    assert px("classify-rules", "remove", "spanish")[0] == 0
    code, _, err = px("classify-rules", "remove", "spanish")
    assert code != 0 and "no classification rules named 'spanish'" in err and "Traceback" not in err


def test_a_broken_file_is_one_sentence(px, tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('[[signal]]\nid = "x"\ncategory = "bug_report"\nweight = 1.5\nterms = ["a"]\n', encoding="utf-8")
    code, _, err = px("classify-rules", "add", str(f))
    assert code != 0 and "weight must be a whole number" in err and "Traceback" not in err
    code, _, err = px("classify-rules", "add", str(tmp_path / "missing.toml"))
    assert code != 0 and "cannot read" in err


def test_a_pending_classification_is_answered_by_id(px):
    code, out, _ = px("issue", "create", "--title", "Edit the API docs page of the platform", "-o", "json")
    assert code == 0, out
    n = json.loads(out)["number"]
    code, out, _ = px("classify", "x", "--issue", str(n), "--category", "feature_request", "--reason",
                      "the platform's API pages live in the platform repository", "--classification", "nope")
    assert code != 0
    code, out, err = px("classify", "x", "--issue", str(n), "--category", "feature_request", "--reason",
                        "the platform's API pages live in the platform repository", "-o", "json")
    assert code == 0 and json.loads(out)["workflow"] == "feature-request", err
