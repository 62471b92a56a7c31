"""What a beans folder costs (issue 24 item 4): hmans/beans' own `.beans/` (254 files,
tests/fixtures/hmans-beans) read and written by workflows/beanfile.py, per file; and the service's
import (all new), re-import (all unchanged) and export of the whole folder under one issue, on
SQLite, in process, as the API's routes call them.

    .venv/bin/python bench/beans.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import emit, log, machine, summary_ms, tempdir

FOLDER = Path(__file__).parents[1] / "tests" / "fixtures" / "hmans-beans" / ".beans"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    from predictorx.workflows import beanfile

    files = {p.relative_to(FOLDER).as_posix(): p.read_text(encoding="utf-8") for p in sorted(FOLDER.rglob("*.md"))}
    load_s, dump_s = [], []
    for _ in range(args.rounds):
        for name, text in files.items():
            t0 = time.perf_counter()
            bean = beanfile.load(text, name)
            t1 = time.perf_counter()
            out = beanfile.dump(dict(bean.__dict__))
            dump_s.append(time.perf_counter() - t1)
            load_s.append(t1 - t0)
            assert out == text, name
    log(f"read and wrote {len(files)} files {args.rounds} times")

    with tempdir("beans") as root:
        os.environ["PREDICTORX_HOME"] = str(root / "state")
        from predictorx.service import bean_files
        from predictorx.service.issues import create_issue
        from predictorx.store.db import Database
        from predictorx.store.schema import Issue, Workspace

        db = Database(f"sqlite:///{root / 'px.db'}")
        db.migrate()
        phases: dict[str, list[float]] = {"import_new": [], "import_unchanged": [], "export": []}
        for i in range(args.rounds):
            with db.write() as s:
                ws = Workspace(name=f"W{i}", slug=f"w{i}")
                s.add(ws)
                s.flush()
                issue_id = create_issue(s, ws.id, None, title="beans").id
            for phase in ("import_new", "import_unchanged"):
                t0 = time.perf_counter()
                with db.write() as s:
                    r = bean_files.import_files(s, s.get(Issue, issue_id), files, "person bench")
                phases[phase].append(time.perf_counter() - t0)
                assert r["counts"]["refused"] == 0
            t0 = time.perf_counter()
            with db.read() as s:
                out = bean_files.export(s, s.get(Issue, issue_id))["files"]
            phases["export"].append(time.perf_counter() - t0)
            assert out == files
        db.dispose()
    emit({"bench": "beans", "files": len(files), "rounds": args.rounds, "machine": machine(),
          "load_per_file": summary_ms(load_s), "dump_per_file": summary_ms(dump_s),
          **{f"{k}_folder": summary_ms(v) for k, v in phases.items()}})


if __name__ == "__main__":
    main()
