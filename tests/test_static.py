"""The static gate (issue 23, item 5): ruff and mypy, run by the suite so `make test` and CI gate on them.

ruff's rules are in pyproject.toml ([tool.ruff]): pyflakes, bugbear, blind excepts, late imports,
and no `# noqa` a configured rule does not need. mypy checks src/ and agents-room/src against
tests/static/mypy-baseline.txt, today's errors counted per file and error code: a new error fails,
and so does a fixed one still counted there — the baseline only shrinks. After fixing errors:

    .venv/bin/python tests/test_static.py --shrink-mypy-baseline

(`--accept-new-mypy-errors` takes in the errors of work written before this gate, at its merge.)
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "tests" / "static" / "mypy-baseline.txt"
ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):(?P<line>\d+): error: .*\[(?P<code>[a-z0-9-]+)\]$")


def mypy_errors() -> tuple[Counter[tuple[str, str]], list[str]]:
    """(error count per (file, code), the error lines) of mypy as configured in pyproject.toml."""
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty", "--show-error-codes"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    if done.returncode not in (0, 1) or done.stderr.strip():
        raise RuntimeError(f"mypy did not run (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    lines = [line for line in done.stdout.splitlines() if ERROR.match(line)]
    counts = Counter((m["path"], m["code"]) for m in map(ERROR.match, lines) if m)
    return counts, lines


def read_baseline() -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    for line in BASELINE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            path, code, count = line.split()
            counts[(path, code)] = int(count)
    return counts


def write_baseline(counts: Counter[tuple[str, str]]) -> None:
    rows = [f"{path} {code} {n}" for (path, code), n in sorted(counts.items()) if n]
    BASELINE.write_text("# mypy errors allowed per file and code (tests/test_static.py); this file only shrinks\n"
                        + "\n".join(rows) + "\n")


def test_ruff_finds_nothing() -> None:
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"ruff check (rules in pyproject.toml [tool.ruff]):\n{done.stdout}{done.stderr}"


@pytest.mark.timeout(900)  # a cold mypy cache on a loaded machine
def test_mypy_errors_only_shrink() -> None:
    now, lines = mypy_errors()
    allowed = read_baseline()
    grown = sorted(k for k in now if now[k] > allowed[k])
    assert not grown, ("new mypy errors (fix them; tests/static/mypy-baseline.txt only shrinks):\n"
                       + "\n".join(line for line in lines if any(line.startswith(f"{p}:") and line.endswith(f"[{c}]")
                                                                for p, c in grown)))
    shrunk = sorted(f"{p} {c}: {allowed[(p, c)]} → {now[(p, c)]}" for p, c in allowed if now[(p, c)] < allowed[(p, c)])
    assert not shrunk, ("fewer mypy errors than tests/static/mypy-baseline.txt counts — well done; lower it with "
                        "`.venv/bin/python tests/test_static.py --shrink-mypy-baseline`:\n" + "\n".join(shrunk))


if __name__ == "__main__":
    # --accept-new-mypy-errors is for merging work written before the gate existed, nothing else:
    # the commit that uses it says whose errors it accepted.
    if sys.argv[1:] not in (["--shrink-mypy-baseline"], ["--accept-new-mypy-errors"]):
        sys.exit("usage: tests/test_static.py --shrink-mypy-baseline | --accept-new-mypy-errors")
    current, _ = mypy_errors()
    old = read_baseline() if BASELINE.exists() else current
    if sys.argv[1] == "--shrink-mypy-baseline" and any(current[k] > old[k] for k in current):
        sys.exit("mypy finds errors the baseline does not allow: fix them first (the baseline only shrinks)")
    write_baseline(current)
    print(f"{BASELINE.relative_to(ROOT)}: {sum(current.values())} errors (was {sum(old.values())})")
