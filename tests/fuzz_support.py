"""What the Schemathesis fuzz tests share (R-SEC-3): strings that include lone surrogates and NUL,
a form serializer that can send them, and how many examples each operation gets.

Hypothesis never generates lone surrogates by itself (its text excludes category Cs), and an
encoder would refuse them anyway; these are the strings that took the old server down.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import schemathesis
from hypothesis import strategies as st

NASTY_FORMAT = "px-nasty-text"
#: Examples per operation (half schema-valid, half invalid). CI runs at least 50.
EXAMPLES = int(os.environ.get("PREDICTORX_FUZZ_EXAMPLES", "50"))

_SHARP = ["\ud800", "\udfff", "\x00", "a\ud800b", "\x00\ud800", "\udc80\x00end", "\ud83d", "\u2028", "\ufeff"]

NASTY_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(_SHARP),
    st.builds(lambda a, s, b: a + s + b, st.text(max_size=12), st.sampled_from(_SHARP), st.text(max_size=12)),
)

schemathesis.openapi.format(NASTY_FORMAT, NASTY_TEXT)


def _wire(value: Any) -> str:
    # What a browser does with a lone surrogate it was given is its business; we send the bytes.
    return quote_plus(str(value).encode("utf-8", "surrogatepass"))


@schemathesis.serializer("application/x-www-form-urlencoded")
def _form(ctx, value):
    if isinstance(value, dict):
        pairs = []
        for k, v in value.items():
            for item in v if isinstance(v, list) else [v]:
                pairs.append(f"{_wire(k)}={_wire(item)}")
        return {"data": "&".join(pairs).encode("ascii"),
                "headers": {"Content-Type": "application/x-www-form-urlencoded"}}
    raw = value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogatepass")
    return {"data": raw, "headers": {"Content-Type": "application/x-www-form-urlencoded"}}


def nasty_strings(schema: Any) -> Any:
    """Every free-text string in a JSON schema (no format, pattern or enum) draws nasty text."""
    if isinstance(schema, dict):
        out = {k: nasty_strings(v) for k, v in schema.items()}
        if out.get("type") == "string" and not ({"format", "pattern", "enum", "const"} & set(out)):
            out["format"] = NASTY_FORMAT
        return out
    if isinstance(schema, list):
        return [nasty_strings(v) for v in schema]
    return schema


def body_schemas(schema: dict) -> None:
    """Give the nasty format to request bodies only: paths and queries are percent-encoded, where
    a lone surrogate cannot even be written."""
    for item in schema.get("paths", {}).values():
        for op in item.values():
            if isinstance(op, dict) and "requestBody" in op:
                op["requestBody"] = nasty_strings(op["requestBody"])
    if "components" in schema:
        schema["components"] = nasty_strings(schema["components"])


def form_fields(web_dir: Path) -> list[str]:
    """The field names the web pages read from forms, found in their source: a new form is
    fuzzed without anyone listing it here."""
    names = set()
    for path in web_dir.glob("*.py"):
        names |= set(re.findall(r"form\.(?:get|optional|getlist)\(\s*\"([A-Za-z0-9_]+)\"", path.read_text()))
    return sorted(names)
