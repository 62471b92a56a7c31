"""The server loads what it serves (issue 23, protocol): not the agent adapters — importing
anything of predictorx.agents registers every adapter — and not the daemon."""

from __future__ import annotations

import subprocess
import sys


def test_the_server_app_imports_no_adapter_and_no_daemon_module() -> None:
    code = ("import sys, predictorx.server.app; "
            "print('\\n'.join(m for m in sys.modules if m.startswith(('predictorx.agents', 'predictorx.daemon'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == []
