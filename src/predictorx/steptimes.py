"""Where the time goes between a run's end and its PR (issue 22's bench: run ended → PR opened).
With `PREDICTORX_STEP_TIMES=<file>` in the environment of the daemon, the server or both, each step
of a task's end is appended to that file as one line `<task id> <step> <epoch seconds>`: on the
daemon's side the agent's exit, the push target's answer, the delivery onto the branch, the push,
the finish; on the server's side (steps named `s_…`) the push report's arrival and commit, the PR's
open on the forge and its number written. Unset (always, outside benches): nothing is written and
nothing is looked up but the one environment variable. The lines name no secret: task ids and step
names only. It imports nothing of Predictor X, so both sides use it.
"""

from __future__ import annotations

import os
import threading
import time

_lock = threading.Lock()


def mark(task_id: str, step: str) -> None:
    path = os.environ.get("PREDICTORX_STEP_TIMES")
    if not path:
        return
    line = f"{task_id} {step} {time.time():.6f}\n"
    with _lock, open(path, "a", encoding="utf-8") as f:
        f.write(line)
