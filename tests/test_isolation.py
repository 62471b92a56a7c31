"""The suite never touches the person's own state (issue 23, item 8): the root conftest.py points
HOME, the XDG dirs and every Predictor X / agents-room location at a temporary dir before any
fixture exists, and fails the run if the real state dir, workspaces root or store changed."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from predictorx import config

ROOT = Path(__file__).resolve().parents[1]
PERSON_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)


@pytest.fixture(scope="module")
def seen_by_a_module_fixture() -> dict[str, Path]:
    """A fixture wider than a test runs before the autouse per-test isolation: it once wrote the
    app's config.json into ~/.local/share/predictorx."""
    return {"home": Path.home(), "state dir": config.state_dir(), "workspaces root": config.workspaces_root(),
            "lock dir": config.lock_dir(), "agents-room store": Path(os.environ["AGENTS_ROOM_DB"])}


def test_a_module_fixture_already_sees_temporary_dirs_only(seen_by_a_module_fixture: dict[str, Path]) -> None:
    for name, path in seen_by_a_module_fixture.items():
        assert not path.resolve().is_relative_to(PERSON_HOME), f"the {name} of a module fixture is {path}"


def _inner_run(tmp_path: Path, body: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """A pytest session with this repository's root conftest, for a person whose home is tmp_path/person."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(body))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("XDG_", "PREDICTORX_", "AGENTS_ROOM_", "PYTEST_"))}
    env.update(HOME=str(tmp_path / "person"), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider",
                           *args, "test_inner.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout)


def test_a_session_that_writes_the_real_state_dir_fails(tmp_path: Path) -> None:
    leak = tmp_path / "person" / ".local" / "share" / "predictorx"
    leak.mkdir(parents=True)
    done = _inner_run(tmp_path, f"""
        from pathlib import Path

        def test_leaks():
            Path({str(leak)!r}, "config.json").write_text('{{"server_url": "http://testserver"}}')
    """)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed" in done.stdout and "person's state changed" in done.stdout
    assert f"state dir: created {leak / 'config.json'}" in done.stdout


def test_a_session_that_stays_in_its_dirs_passes(tmp_path: Path) -> None:
    done = _inner_run(tmp_path, """
        from predictorx import config

        def test_writes_where_it_may():
            config.write_config(server_url="http://testserver", token="t")  # into the session's temp dir
    """)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "person's state changed" not in done.stdout


@pytest.mark.long  # make test-long (CI) runs it; the single-process guard tests above stay in make test
@pytest.mark.timeout(600)  # three pytest processes start; minutes on a loaded machine
def test_a_leak_from_a_parallel_worker_fails_the_run(tmp_path: Path) -> None:
    """`make test` runs the suite in pytest-xdist workers: a worker's write into the person's state
    dir is caught by the controller, which alone fingerprints it (a worker inherits isolated dirs)."""
    leak = tmp_path / "person" / ".local" / "share" / "predictorx"
    leak.mkdir(parents=True)
    done = _inner_run(tmp_path, f"""
        import os
        from pathlib import Path

        def test_leaks():
            assert os.environ["PYTEST_XDIST_WORKER"].startswith("gw")
            Path({str(leak)!r}, "config.json").write_text("{{}}")

        def test_stays():
            assert not Path(os.environ["PREDICTORX_HOME"]).is_relative_to({str(tmp_path / "person")!r})
    """, "-p", "xdist", "-n", "2", timeout=500)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 passed" in done.stdout and "person's state changed" in done.stdout
    assert f"state dir: created {leak / 'config.json'}" in done.stdout


def test_the_real_clis_install_scripts_write_nothing_into_the_persons_home(tmp_path: Path) -> None:
    """`make test` runs the real CLIs' install scripts (`npm rebuild`); OpenCode's and Kilo's made
    their data and cache folders in the person's home. The Makefile's rule, run in a copy of the
    repository's layout with an `npm` that does what those scripts do: the person's home stays empty."""
    import shutil

    work, person, bin_dir = tmp_path / "repo", tmp_path / "person", tmp_path / "bin"
    (work / "tests" / "realcli" / "node_modules").mkdir(parents=True)
    person.mkdir()
    bin_dir.mkdir()
    shutil.copy(ROOT / "Makefile", work / "Makefile")
    shutil.copy(ROOT / "tests" / "realcli" / "package-lock.json", work / "tests" / "realcli" / "package-lock.json")
    npm = bin_dir / "npm"  # `ci` does nothing; `rebuild` writes where the scripts write (XDG dirs, else HOME)
    npm.write_text(textwrap.dedent("""\
        #!/bin/sh
        [ "$1" = rebuild ] || exit 0
        mkdir -p "${XDG_DATA_HOME:-$HOME/.local/share}/opencode/log" "${XDG_CACHE_HOME:-$HOME/.cache}/kilo/bin"
        echo "$HOME" > "$0.home"
        """))
    npm.chmod(0o755)
    # (no MAKEFLAGS or MAKELEVEL of a `make test` around this: a nested make prints its directory)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(person), "LANG": "C.UTF-8"}
    cli_stamp = subprocess.run(["make", "-s", "--no-print-directory", "-f", "Makefile",
                                "--eval", "cli-stamp: ; @echo $(CLI_STAMP)", "cli-stamp"],
                               cwd=work, env=env, capture_output=True, text=True, timeout=120).stdout.strip()
    assert cli_stamp.startswith("tests/realcli/node_modules/.installed-"), cli_stamp
    done = subprocess.run(["make", "-f", "Makefile", cli_stamp], cwd=work, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    rebuilt_in = Path((bin_dir / "npm.home").read_text().strip())
    assert rebuilt_in != person and not rebuilt_in.exists()  # a throwaway HOME, removed afterwards
    assert list(person.iterdir()) == []
    assert (work / cli_stamp).exists()
