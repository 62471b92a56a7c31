"""`predictorx workflow stop N PROCESS --reason R` against a real server over HTTP (issue 26 §7):
the same use case as the issue page's Stop and the API's; a second stop, or one without a
reason, is one sentence on stderr with a non-zero exit."""

from __future__ import annotations

import json


def test_a_workflow_the_classifier_started_is_stopped_from_the_command_line(served_app, run_cli):
    code, out, err = run_cli("issue", "create", "--title", "The export crashes on empty files", "-o", "json")
    assert code == 0, err
    n = str(json.loads(out)["number"])
    code, out, err = run_cli("workflow", "stop", n, "bug-triage", "--reason", "not a bug")
    assert code == 0 and "bug-triage stopped: not a bug" in out, err
    code, out, _ = run_cli("workflow", "show", n, "bug-triage", "-o", "json")
    shown = json.loads(out)
    assert shown["status"] == "stopped" and shown["history"][-1]["kind"] == "stop"
    code, _, err = run_cli("workflow", "stop", n, "bug-triage", "--reason", "again")
    assert code != 0 and "only a running one" in err and "Traceback" not in err
    code, _, err = run_cli("workflow", "stop", n, "bug-triage")
    assert code != 0 and "--reason" in err
