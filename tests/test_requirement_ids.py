"""Every requirement id of the spec is findable at its code and at its test (issue 10 §9).

The spec lives outside the repository (../shared/SPEC.md, or $PREDICTORX_SPEC); without it the
check has nothing to compare against and is skipped. `python tests/test_requirement_ids.py` prints
where each id is missing. KNOWN_GAPS are ids not yet cited (take one out when you cite it); a new
gap fails."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_CANDIDATES = [ROOT.parent / "shared" / "SPEC.md", ROOT.parent.parent / "shared" / "SPEC.md"]  # checkout, worktree
SPEC = Path(os.environ.get("PREDICTORX_SPEC") or next((p for p in _CANDIDATES if p.exists()), _CANDIDATES[0]))
CODE = ["src/**/*.py", "src/**/*.html", "agents-room/src/**/*.py"]
TESTS = ["tests/**/*.py", "agents-room/tests/**/*.py"]

# id -> where it is not cited yet ("code", "test" or both)
KNOWN_GAPS: dict[str, set[str]] = {}


def _text(patterns: list[str]) -> str:
    out = []
    for pattern in patterns:
        for path in ROOT.glob(pattern):
            if "node_modules" not in path.parts and path.resolve() != Path(__file__).resolve():
                out.append(path.read_text(errors="replace"))
    return "\n".join(out)


def gaps() -> dict[str, set[str]]:
    ids = sorted(set(re.findall(r"\bR-[A-Z]+-\d+\b", SPEC.read_text())))
    code, tests = _text(CODE), _text(TESTS)
    found: dict[str, set[str]] = {}
    for rid in ids:
        cited = re.compile(re.escape(rid) + r"(?!\d)")
        missing = {where for where, text in (("code", code), ("test", tests)) if not cited.search(text)}
        if missing:
            found[rid] = missing
    return found


@pytest.mark.skipif(not SPEC.exists(), reason="the spec is not beside this checkout")
def test_requirement_ids_are_cited_at_code_and_test():
    now = gaps()
    new = {k: v for k, v in now.items() if not v <= KNOWN_GAPS.get(k, set())}
    assert not new, f"cite these ids at their code/test: {new}"


if __name__ == "__main__":
    for rid, where in gaps().items():
        print(rid, "missing in", " and ".join(sorted(where)))
