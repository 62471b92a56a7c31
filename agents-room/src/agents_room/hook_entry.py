"""``agents-room hook``, fast to start: ``python …/agents_room/hook_entry.py [--db=X] hook --event=E …``.

Claude Code runs PreToolUse and PostToolUse hooks around every tool call and waits for them, so a
hook process's start-up is paid on every tool call of every agent. Started as this file (as
``harness_config.hooks_spec(fast=True)`` writes a run's hooks), a hook imports neither the package's
CLI nor argparse nor runpy: :mod:`agents_room.hooks` reads the usual arguments
(:func:`~agents_room.hooks.parse_args`, as the CLI's ``hook`` command does) and runs at once.
Anything unusual goes to the CLI (``agents_room.cli.main``), which answers exactly as
``python -m agents_room …`` does (a usage error fails open).
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    if not __package__:  # started as a file: its package's root, not its folder, on the path
        sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    from agents_room import hooks

    _opts = hooks.parse_args(sys.argv[1:])
    if _opts is None:
        if sys.flags.no_site:  # (started with -S: the CLI may need what site-packages hold)
            import site

            site.main()
        from agents_room.cli import main

        sys.exit(main())
    hooks.run_process(_opts)
