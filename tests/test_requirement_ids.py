"""Every requirement id is findable at its code and at its test (issue 10 §9, issue 23 item 7).

docs/requirements.md is the index inside the repository: each R-id with a one-line statement, the
files of its code and of its tests. The check runs in any clone against that index: every id the
code or tests cite is in it, every file it names cites the id, and an id it does not mark as not
cited yet is cited at code and at test. Where the spec is beside the checkout (../shared/SPEC.md,
or $PREDICTORX_SPEC), the index holds exactly the spec's ids too.

After citing an id, or when the spec gains one:

    .venv/bin/python tests/test_requirement_ids.py --update-index

rewrites the Code and Tests columns from today's citations (statements are kept; a new id's comes
from the spec) — then read the diff.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INDEX = ROOT / "docs" / "requirements.md"
_CANDIDATES = [ROOT.parent / "shared" / "SPEC.md", ROOT.parent.parent / "shared" / "SPEC.md"]  # checkout, worktree
SPEC = Path(os.environ.get("PREDICTORX_SPEC") or next((p for p in _CANDIDATES if p.exists()), _CANDIDATES[0]))
CODE = ["src/**/*.py", "src/**/*.html", "src/**/*.js", "agents-room/src/**/*.py"]
TESTS = ["tests/**/*.py", "agents-room/tests/**/*.py"]
RID = re.compile(r"\bR-[A-Z]+-\d+\b")
NOT_CITED = "not cited yet"
SHOWN = 3  # files per column: the ones citing the id most


@dataclass
class Row:
    rid: str
    statement: str
    code: list[str]
    tests: list[str]


def _files(patterns: list[str]) -> dict[str, str]:
    out = {}
    for pattern in patterns:
        for path in sorted(ROOT.glob(pattern)):
            if "node_modules" not in path.parts and path.resolve() != Path(__file__).resolve():
                out[str(path.relative_to(ROOT))] = path.read_text(errors="replace")
    return out


def cited(rid: str, files: dict[str, str]) -> list[str]:
    """The files citing `rid`, those citing it most first."""
    pattern = re.compile(re.escape(rid) + r"(?!\d)")
    counts = Counter({path: len(pattern.findall(text)) for path, text in files.items()})
    return [path for path, n in counts.most_common() if n]


def read_index() -> list[Row]:
    rows = []
    for line in INDEX.read_text().splitlines():
        if line.startswith("| R-"):
            cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            rid, statement, code, tests = cells
            rows.append(Row(rid, statement, re.findall(r"`([^`]+)`", code), re.findall(r"`([^`]+)`", tests)))
    return rows


def spec_statements() -> dict[str, tuple[str, str]]:
    """id -> (its spec section, the first sentence of its statement)."""
    out, section, text = {}, "", SPEC.read_text()
    for block in re.split(r"\n(?=- R-|## )", text):
        if block.startswith("## "):
            section = block.splitlines()[0][3:].strip()
            continue
        m = re.match(r"- (R-[A-Z]+-\d+) (.*)", block, re.S)
        if m:
            flat = " ".join(m.group(2).split())
            sentence = re.split(r"(?<!\bincl\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<=\.)\s+(?=[A-Z`(])", flat)[0]
            out[m.group(1)] = (section, sentence)
    return out


def problems() -> list[str]:
    rows = read_index()
    code, tests = _files(CODE), _files(TESTS)
    indexed = {r.rid for r in rows}
    found = [f"{rid} appears twice in docs/requirements.md" for rid, n in Counter(r.rid for r in rows).items() if n > 1]
    everywhere = {rid for text in (*code.values(), *tests.values()) for rid in RID.findall(text)}
    found += [f"{rid} is cited but not in docs/requirements.md" for rid in sorted(everywhere - indexed)]
    for r in rows:
        for kind, listed, files in (("code", r.code, code), ("tests", r.tests, tests)):
            found += [f"{r.rid}: {path} (its {kind}) does not cite it" for path in listed if path not in cited(r.rid, files)]
            if not listed and NOT_CITED not in r.statement:
                found.append(f"{r.rid} names no {kind}: cite it there, or mark it '{NOT_CITED}'")
    if SPEC.exists():
        spec = set(spec_statements())
        found += [f"{rid} is in the spec but not in docs/requirements.md" for rid in sorted(spec - indexed)]
        found += [f"{rid} is in docs/requirements.md but not in the spec" for rid in sorted(indexed - spec)]
    return found


def test_the_requirements_index_is_true() -> None:
    found = problems()
    assert not found, ("docs/requirements.md is out of date (`.venv/bin/python tests/test_requirement_ids.py "
                       "--update-index` rewrites its Code and Tests columns):\n" + "\n".join(found))


def test_the_index_cites_the_spec_when_it_is_beside_the_checkout() -> None:
    if not SPEC.exists():
        pytest.skip("the spec is not beside this checkout; docs/requirements.md stands for it")
    statements = spec_statements()
    assert statements and {r.rid for r in read_index()} == set(statements)


def _cell(paths: list[str]) -> str:
    return " ".join(f"`{p}`" for p in paths[:SHOWN]) or "—"


def write_index() -> None:
    old = {r.rid: r.statement for r in read_index()} if INDEX.exists() else {}
    spec = spec_statements() if SPEC.exists() else {}
    ids = sorted(set(old) | set(spec), key=lambda rid: (list(spec).index(rid) if rid in spec else len(spec), rid))
    code, tests = _files(CODE), _files(TESTS)
    out = [INTRO]
    section = None
    for rid in ids:
        if rid in spec and spec[rid][0] != section:
            section = spec[rid][0]
            out += ["", f"## {section}", "", "| Id | Requirement | Code | Tests |", "|---|---|---|---|"]
        statement = old.get(rid) or spec[rid][1]
        in_code, in_tests = cited(rid, code), cited(rid, tests)
        built = bool(in_code and in_tests)
        statement = statement.replace(f" ({NOT_CITED})", "") + ("" if built else f" ({NOT_CITED})")
        out.append(f"| {rid} | {statement.replace('|', chr(92) + '|')} | {_cell(in_code)} | {_cell(in_tests)} |")
    INDEX.write_text("\n".join(out) + "\n")


INTRO = """# Requirements index

Each requirement of the spec (its R-id), in one line, with the files of its code and of its tests —
those citing the id most (search the id for the rest: `grep -rn R-LD-4 src tests`). The spec itself
lives beside the repository; this index stands for it in any clone. `tests/test_requirement_ids.py`
keeps it true: an id cited anywhere is here, every file named here cites its id, and an id not
marked "not cited yet" is cited at code and at test.
Regenerate the Code and Tests columns with `.venv/bin/python tests/test_requirement_ids.py --update-index`."""


if __name__ == "__main__":
    if sys.argv[1:] == ["--update-index"]:
        write_index()
        print(f"wrote {INDEX.relative_to(ROOT)}")
    for problem in problems():
        print(problem)
