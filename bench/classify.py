"""Issue 24 §6: classification latency in process — a run of 50 requests (25 English, 25 Russian,
from the labelled set in tests/fixtures/classification), each classified by the shipped table and
by a workspace table (the shipped files plus one of the workspace's own), plus the one-time build
of each table. Prints one JSON object.

    .venv/bin/python bench/classify.py [--rounds 100]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import emit, log, machine, summary_ms

from predictorx.workflows.classify import classify, shipped_table
from predictorx.workflows.classify_table import build, shipped_sources

FIXTURE = Path(__file__).parent.parent / "tests" / "fixtures" / "classification" / "requests.jsonl"
WORKSPACE_RULES = """
language = "de"
lead = ["bitte"]
[labels]
bug_report = "ein Fehlerbericht"
[[signal]]
id = "de.bug.kaputt"
category = "bug_report"
weight = 5
terms = ["kaputt", "stürzt ab", "funktioniert nicht"]
[[signal]]
id = "de.author.schreib"
category = "content_authoring"
weight = 5
at = "start"
terms = ["schreib*", "entwirf", "überarbeite"]
"""


def fifty() -> list[str]:
    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
    en = [r["text"] for r in rows if r["lang"] == "en"][::4][:25]
    ru = [r["text"] for r in rows if r["lang"] == "ru"][::3][:25]
    return [t for pair in zip(en, ru) for t in pair]


def run(texts: list[str], table, rounds: int) -> dict:
    times, cpu, runs = [], [], []
    for _ in range(rounds):
        r0 = time.perf_counter()
        for t in texts:
            c0, t0 = time.thread_time(), time.perf_counter()
            classify(t, table)
            times.append(time.perf_counter() - t0)
            cpu.append(time.thread_time() - c0)
        runs.append(time.perf_counter() - r0)
    # wall time includes the scheduler's preemptions on a loaded machine; CPU time is the table's own cost
    return {"per_request": summary_ms(times), "per_request_cpu": summary_ms(cpu), "run_of_50": summary_ms(runs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=100, help="how many times the run of 50 is repeated")
    args = ap.parse_args()
    texts = fifty()
    out: dict = {"machine_at_start": machine(), "requests": len(texts)}
    t0 = time.perf_counter()
    shipped = shipped_table()
    out["build_shipped_table_ms"] = round((time.perf_counter() - t0) * 1000, 2)
    t0 = time.perf_counter()
    workspace = build(shipped_sources() + [("workspace/de", WORKSPACE_RULES)])
    out["build_workspace_table_ms"] = round((time.perf_counter() - t0) * 1000, 2)
    out["signals"] = len(shipped.signals)
    decided = sum(classify(t, shipped).decided for t in texts)
    out["decided_of_50"] = decided
    log("shipped table…")
    out["shipped"] = run(texts, shipped, args.rounds)
    log("workspace table…")
    out["workspace"] = run(texts, workspace, args.rounds)
    out["targets"] = {"per_request_p99_ms": 5.0}
    out["machine"] = machine()
    emit(out)


if __name__ == "__main__":
    main()
