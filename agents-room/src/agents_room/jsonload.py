"""``json.loads`` for the hooks' path, without importing the json package.

The json package's decoder and encoder import ``re``, and ``re`` imports ``enum``: together about a
third of a hook process's start-up, paid on every tool call. The decoding itself is done by the
C scanner ``json.loads`` uses (``_json.make_scanner``), given the settings of json's default
decoder, so a document decodes to the same value. Anything else — not a str, a byte order mark,
a document that does not decode, no C scanner (another Python) — goes to ``json.loads`` itself,
so errors are json's own, word for word.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

try:
    from _json import make_scanner as _make_scanner
except ImportError:  # not CPython: json.loads does it all
    _make_scanner = None

_WS = " \t\n\r"  # json.decoder.WHITESPACE


class _Defaults:
    """What the scanner reads from ``json.JSONDecoder()`` (json's default decoder)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


_scan = _make_scanner(_Defaults()) if _make_scanner is not None else None


def loads(s: Any) -> Any:
    """``json.loads(s)``."""
    if _scan is None or not isinstance(s, str) or s.startswith("\ufeff"):
        return _json_loads(s)
    try:
        obj, end = _scan(s, len(s) - len(s.lstrip(_WS)))
    except Exception:  # noqa: BLE001 — not a document: json says why, in its own words
        return _json_loads(s)
    if s[end:].lstrip(_WS):  # extra data after the document
        return _json_loads(s)
    return obj


def _json_loads(s: Any) -> Any:
    import json

    return json.loads(s)
