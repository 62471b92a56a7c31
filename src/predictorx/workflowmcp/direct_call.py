"""A harness tool called by the stdio front itself, without the MCP SDK (issue 30).

Importing the SDK and building its server cost about 0.6 s of CPU at a run's first tool call —
more than a whole bare `claude -p` run — and a run's agent calls the harness's tools as its
prompt tells it (harness_state, classification_judge, handoff_write). The tools are plain
functions (harness_tools.py), so the front calls them and answers as the SDK server answers:
`{"content": [...], "isError": false}` with the result as the SDK's MCPServer turns it into
content, or `isError: true` with "Error executing tool <name>: <why>".

Only arguments that plainly fit the tool's listed schema are taken here (`fits`): anything else
(a missing or extra argument, a number as text, a JSON string for an object…) returns None before
the tool runs, and the front lets the SDK answer, with its own validation and its own words. The
listing is the SDK server's (mcp_tools.json, checked against it by tests), so the two agree on
what a tool takes; tests/test_harness_mcp_direct.py checks that both paths answer alike.
"""

from __future__ import annotations

from typing import Any, Callable


class ToolFailed(Exception):
    """A tool's own refusal (the SDK's ToolError under the SDK server): its text reaches the agent."""


def fits(schema: Any, arguments: Any) -> bool:
    """`arguments` match the tool's input schema in the plain subset the harness's tools use:
    required names present, no others, each value exactly of its type (no coercion)."""
    if not isinstance(schema, dict) or schema.get("type") != "object" or not isinstance(arguments, dict):
        return False
    props = schema.get("properties") or {}
    if not isinstance(props, dict) or any(name not in props for name in arguments):
        return False
    if any(name not in arguments for name in schema.get("required") or []):
        return False
    return all(_value_fits(props[name], value) and not (type(value) is str and "anyOf" in props[name]
                                                        and sdk_reads_as_json(value))
               for name, value in arguments.items())


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


def _value_fits(schema: Any, value: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    if "anyOf" in schema:
        return any(_value_fits(s, value) for s in schema["anyOf"])
    kind = schema.get("type")
    if kind == "null":
        return value is None
    if kind == "string":
        return type(value) is str
    if kind == "integer":
        return type(value) is int
    if kind == "array":
        return type(value) is list and all(_value_fits(schema.get("items", {}), v) for v in value)
    if kind == "object" and type(value) is dict and all(type(k) is str for k in value):
        extra = schema.get("additionalProperties", True)
        return extra is True or all(_value_fits(extra, v) for v in value.values())
    return False


def call(tool: dict[str, Any], fn: Callable[..., Any], arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The tools/call result of `fn` (the listed `tool`), or None when the SDK should answer (the
    arguments are not plainly of the schema, or the tool declares structured output, which the
    harness's tools do not)."""
    if "outputSchema" in tool or not fits(tool.get("inputSchema"), arguments):
        return None
    name = tool["name"]
    try:
        result = fn(**arguments)
    except ToolFailed as e:
        return _failed(f"Error executing tool {name}: {e}")
    except Exception:  # noqa: BLE001 — as the SDK: a crash's text never reaches the agent
        return _failed(f"Error executing tool {name}")
    try:
        return {"content": content_of(result), "isError": False}
    except (TypeError, ValueError, RecursionError):  # (pydantic_core's refusals are ValueErrors)
        return _failed(f"Error executing tool {name}")


def content_of(result: Any) -> list[dict[str, Any]]:
    """The SDK MCPServer's content for a tool's return value: nothing for None, a block per item of
    a list, text as it is, anything else as JSON indented by two (pydantic_core's, as the SDK)."""
    if result is None:
        return []
    if isinstance(result, (list, tuple)):
        return [block for item in result for block in content_of(item)]
    return [{"type": "text", "text": result if isinstance(result, str) else json_text(result)}]


def json_text(value: Any) -> str:
    """pydantic_core's `to_json(value, fallback=str, indent=2)`, as the SDK writes it; through the
    json module (already loaded here) where that writes the same text: JSON's own types, text keys,
    no float json would write otherwise (1e-05 against 0.00001, NaN): pydantic_core's import is
    ~13 ms of CPU, a run's first tool call's largest part after the SDK's."""
    if _same_in_json(value):
        import json

        return json.dumps(value, indent=2, ensure_ascii=False)
    import pydantic_core

    return pydantic_core.to_json(value, fallback=str, indent=2).decode()


def _same_in_json(value: Any, depth: int = 0) -> bool:
    """(Nested no deeper than pydantic_core writes; text it can write as UTF-8: no lone surrogate.)"""
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
