"""A request the forge's description refuses fails the test that made it, at the fixture's
teardown, even when the test itself passed (run in a child pytest so this test can watch it fail)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_a_violation_fails_the_test_at_teardown(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(TESTS)!r})
        from forgestand.fixtures import forge_standin_factory, github_standin  # noqa: F401
    """))
    (tmp_path / "test_child.py").write_text(textwrap.dedent("""
        import httpx2 as httpx

        def test_sends_a_typo(github_standin):
            s = github_standin
            s.create_repo("acme/w")
            answer = httpx.get(s.api_url + "/repos/acme/w/pulls", params={"stat": "all"},
                               headers={"Authorization": f"Bearer {s.token}"}, timeout=10)
            assert answer.status_code == 422  # the test itself passes

        def test_a_valid_request_passes(github_standin):
            s = github_standin
            s.create_repo("acme/w")
            answer = httpx.get(s.api_url + "/repos/acme/w/pulls", params={"state": "all"},
                               headers={"Authorization": f"Bearer {s.token}"}, timeout=10)
            assert answer.status_code == 200
    """))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 passed, 1 error" in done.stdout  # both calls pass; the typo fails at teardown
    assert "ERROR at teardown of test_sends_a_typo" in done.stdout
    assert "query parameter 'stat' is not in GitHub's REST description" in done.stdout
