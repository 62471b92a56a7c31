"""predictorx/steptimes.py: the bench's step times (issue 22, run ended → PR opened), written by the
daemon and the server only when PREDICTORX_STEP_TIMES names a file."""

from __future__ import annotations

from pathlib import Path

from predictorx import steptimes


def test_steps_are_appended_only_when_the_variable_names_a_file(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "steps.txt"
    monkeypatch.delenv("PREDICTORX_STEP_TIMES", raising=False)
    steptimes.mark("t1", "agent_exited")
    assert not path.exists()
    monkeypatch.setenv("PREDICTORX_STEP_TIMES", str(path))
    steptimes.mark("t1", "agent_exited")
    steptimes.mark("t1", "s_report_in")
    lines = [line.split(" ") for line in path.read_text().splitlines()]
    assert [(task, step) for task, step, _ in lines] == [("t1", "agent_exited"), ("t1", "s_report_in")]
    assert float(lines[1][2]) >= float(lines[0][2]) > 0
