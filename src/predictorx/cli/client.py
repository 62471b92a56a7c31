"""The CLI's side of the HTTP client: the client itself is `predictorx.apiclient` (shared with the
daemon's in-task commands); here, JSON output and URL segments."""

from __future__ import annotations

import json
import sys
from typing import Any

from ..apiclient import Client, CliError, fail  # noqa: F401  (the CLI modules import them from here)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def seg(value: object) -> str:
    """One URL path segment from user input ('#12' must not become a fragment)."""
    from urllib.parse import quote

    return quote(str(value).lstrip("#") if str(value).startswith("#") else str(value), safe="")
