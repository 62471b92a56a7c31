"""agents-room: rooms, presence, file leases, divergence and nudges for coding agents.

One SQLite file in WAL mode, no daemon. See docs/agents-room/protocol.md.
This package imports nothing from ``predictorx``.
"""

__version__ = "0.1.0"
