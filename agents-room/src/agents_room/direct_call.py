"""A tool called by the stdio front itself, without the MCP SDK (issue 30).

Importing the SDK and building its server cost about half a second of CPU at a session's first
tool call. Each tool is one call on the room (tool_calls.py), so the front makes it and answers
as the SDK server answers: `{"content": [...], "structuredContent": {...}, "isError": false}`, or
`isError: true` with "Error executing tool <name>: <why>".

Only arguments that plainly fit the tool's listed schema are taken here (`fits`): anything else (a
missing or extra argument, a number as text, a bool for a number…) returns None before the tool
runs, and the front lets the SDK answer, with its own validation and its own words. What the SDK
would make of a fitting value is made here too: the schema's defaults for what is not given, and
a whole number for a `number` becomes a float. The listing is the SDK server's (mcp_tools.json,
checked against it by tests), and tests/test_mcp_direct.py checks that both paths answer alike.
"""

from __future__ import annotations

from typing import Any, Callable

#: the largest whole number a float holds exactly: beyond it the SDK answers
_EXACT = 2 ** 53


class ToolFailed(Exception):
    """A tool's refusal (the SDK's ToolError under the SDK server): its text reaches the agent."""


def arguments_for(schema: Any, arguments: Any) -> dict[str, Any] | None:
    """Every argument of the tool (the schema's defaults for what is not given) as the SDK would pass
    them, or None when `arguments` are not plainly of the schema: required names present, no others,
    each value exactly of its type."""
    if not isinstance(schema, dict) or schema.get("type") != "object" or not isinstance(arguments, dict):
        return None
    props = schema.get("properties") or {}
    if not isinstance(props, dict) or any(name not in props for name in arguments):
        return None
    out: dict[str, Any] = {}
    for name, prop in props.items():
        if name in arguments:
            value = _value(prop, arguments[name])
            if value is _NO or (type(value) is str and "anyOf" in prop and sdk_reads_as_json(value)):
                return None
            out[name] = value
        elif isinstance(prop, dict) and "default" in prop and name not in (schema.get("required") or []):
            out[name] = prop["default"]
        else:
            return None
    return out


_NO = object()


def sdk_reads_as_json(text: str) -> bool:
    """The SDK reads the text value of a parameter not typed `str` (`str | None`, say) as JSON first,
    and a null, a list or an object found there replaces it (func_metadata's pre_parse_json): such
    a value is the SDK's to answer."""
    import json

    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return not isinstance(parsed, (str, int, float))


def _value(schema: Any, value: Any) -> Any:
    """`value` as the SDK's validation leaves it, or _NO when it is not plainly of `schema`."""
    if not isinstance(schema, dict):
        return _NO
    if "anyOf" in schema:
        fitting = [v for v in (_value(s, value) for s in schema["anyOf"]) if v is not _NO]
        return fitting[0] if len(fitting) == 1 else _NO  # (two readings: the SDK's union rules decide)
    kind = schema.get("type")
    if kind == "null":
        return None if value is None else _NO
    if kind == "string":
        return value if type(value) is str else _NO
    if kind == "boolean":
        return value if type(value) is bool else _NO
    if kind == "integer":
        return value if type(value) is int else _NO
    if kind == "number":
        if type(value) is float:
            return value
        return float(value) if type(value) is int and abs(value) <= _EXACT else _NO
    if kind == "array" and type(value) is list:
        items = [_value(schema.get("items", {}), v) for v in value]
        return _NO if any(v is _NO for v in items) else items
    if kind == "object" and type(value) is dict and schema.get("additionalProperties", True) is True \
            and all(type(k) is str for k in value):
        return value
    return _NO


def call(tool: dict[str, Any], fn: Callable[..., Any], tools: Any, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The tools/call result of `fn` (the listed `tool`) on `tools` (tool_calls.Tools), or None when
    the SDK should answer (arguments not plainly of the schema; an output schema other than an object)."""
    out_schema = tool.get("outputSchema")
    if not (isinstance(out_schema, dict) and out_schema.get("type") == "object"
            and out_schema.get("additionalProperties") is True and "properties" not in out_schema):
        return None
    given = arguments_for(tool.get("inputSchema"), arguments)
    if given is None:
        return None
    name = tool["name"]
    try:
        result = fn(tools, **given)
    except ToolFailed as e:
        return _failed(f"Error executing tool {name}: {e}")
    except Exception:  # noqa: BLE001 — as the SDK: a crash's text never reaches the agent
        return _failed(f"Error executing tool {name}")
    if not isinstance(result, dict):
        return _failed(f"Error executing tool {name}")
    if _same_in_json(result):  # (pydantic_core's import is ~13 ms of CPU; json writes these alike)
        import json

        text, structured = json.dumps(result, indent=2, ensure_ascii=False), result
    else:
        import pydantic_core

        try:
            text = pydantic_core.to_json(result, fallback=str, indent=2).decode()
            structured = pydantic_core.to_jsonable_python(result)
        except (TypeError, ValueError, RecursionError):  # (pydantic_core's refusals are ValueErrors)
            return _failed(f"Error executing tool {name}")
    return {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}


def _same_in_json(value: Any, depth: int = 0) -> bool:
    """json writes `value` as pydantic_core does (the SDK's `to_json(…, indent=2)`), and it is its own
    JSON form: JSON's own types, text keys, text it can write as UTF-8 (no lone surrogate), no float
    json writes otherwise (1e-05 against 0.00001, NaN), nested no deeper than pydantic_core writes."""
    kind = type(value)
    if value is None or kind in (int, bool):
        return True
    if kind is str:
        return _utf8(value)
    if kind is float:
        text = repr(value)
        return "e" not in text and "n" not in text  # (exponent form, inf, nan)
    if depth >= _DEPTH:
        return False
    if kind is list:
        return all(_same_in_json(v, depth + 1) for v in value)
    if kind is dict:
        return all(type(k) is str and _utf8(k) and _same_in_json(v, depth + 1) for k, v in value.items())
    return False


#: Containers nested deeper than this pydantic_core refuses to write (and the SDK answers an error)
_DEPTH = 253


def _utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _failed(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}
