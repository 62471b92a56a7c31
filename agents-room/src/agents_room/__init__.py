"""agents-room: rooms, presence, file leases, divergence and nudges for coding agents.

One SQLite file in WAL mode, no daemon. See docs/protocol.md in the agents-room distribution.
Licensed GPL-3.0-or-later (see LICENSE).
This package imports nothing from ``predictorx``.
"""

__version__ = "0.2.0"
