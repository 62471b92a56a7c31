"""jsonload.loads: json.loads for the hooks' path, without the json package (nor re, nor enum)."""

import json
import subprocess

import pytest

from agents_room import jsonload

from room_helpers import PY


@pytest.mark.parametrize("doc", [
    '{"a": [1, 2.5, -3e2, true, false, null, "x\\u00e9\\n", {"b": {}}], "c": []}', "  [1]\n", "0", '"s"', "NaN",
    '{"n": -Infinity, "m": Infinity}', '{"a": 1, "a": 2}', '"\\ud83d\\ude00"', '12345678901234567890', "1.0e400",
    # not documents: json's own error, word for word
    "", "   ", "{", '{"a": }', "[1,]", "[1] x", "\ufeff[1]", "'a'", '"\x01"', "nul", "[1] [2]", '{"a" 1}',
])
def test_jsonload_loads_as_json_loads(doc):
    def outcome(fn):
        try:
            value = fn(doc)
        except Exception as e:  # noqa: BLE001
            return type(e), str(e)
        return "ok", json.dumps(value, sort_keys=True), repr(value)

    assert outcome(jsonload.loads) == outcome(json.loads)


def test_jsonload_needs_neither_json_nor_re():
    code = "import sys; from agents_room import jsonload; print(jsonload.loads('{\"a\": [1]}'), sorted({'json', 're'} & set(sys.modules)))"
    p = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=30)
    assert p.stdout.strip() == "{'a': [1]} []", p.stderr
