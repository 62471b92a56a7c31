"""Forge connections through real processes: `predictorx forge add --token-stdin` against a real
server, `forge test` through the real GitHub client against the GitHub stand-in, and
`predictorx server rotate-key` run while that server keeps serving — it opens the token with the
new key at once. The token is in no command line, no output and no line of the server's log."""

from __future__ import annotations

import json
import subprocess
import sys

from forgestand.fixtures import forge_standin_factory, github_standin  # noqa: F401  (fixtures)


def _px(server, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "predictorx", *args], env=server.env, input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_add_test_and_rotate_the_key_under_a_running_server(server, github_standin):  # noqa: F811
    s = github_standin
    added = _px(server, "forge", "add", "--kind", "github", "--name", "gh", "--url", s.base_url, "--token-stdin",
                "--output", "json", stdin=s.token + "\n")
    assert added.returncode == 0, added.stderr
    made = json.loads(added.stdout)
    assert made["api_url"] == s.api_url and made["webhook_url"].endswith(f"/api/forges/{made['id']}/webhook")

    tested = _px(server, "forge", "test", "gh")
    assert tested.returncode == 0 and f"acts as {s.login}" in tested.stdout, tested.stderr
    key_file = server.home / "secret.key"
    before = key_file.read_text()

    rotated = _px(server, "server", "rotate-key")
    assert rotated.returncode == 0 and "sealed 2 secret(s) again" in rotated.stdout, rotated.stderr
    assert key_file.read_text() != before and oct(key_file.stat().st_mode & 0o777) == "0o600"

    again = _px(server, "forge", "test", "gh")  # the running server reads the new key at once
    assert again.returncode == 0 and f"acts as {s.login}" in again.stdout, again.stderr

    everything = "".join(p.stdout + p.stderr for p in (added, tested, rotated, again))
    assert s.token not in everything and s.token not in server.log_path.read_text(errors="replace")
    assert s.token not in " ".join(" ".join(p.args) for p in (added, tested, rotated, again))
