r"""DMN 1.3 decision tables for `decision` gateways (R-HAR-4).

Our own evaluator for a declared FEEL subset, not SpiffWorkflow's DMN engine: Spiff evaluates
cells as Python expressions with a partial FEEL translation, so a cell it cannot read is found
only when a token reaches it. Here every cell is parsed when the table is loaded (`check`), and a
table that loads evaluates every cell the same way every time.

The subset (unary tests): `-` (any), literals (numbers as FEEL writes them, `.5` too; "strings"
with FEEL's escapes `\"` `\\` `\'` `\n` `\r` `\t` `\uXXXX` `\UXXXXXX`; true, false, null),
comparisons `< <= > >=` against a literal, ranges `[a..b]` `(a..b)` `]a..b[` (any mix of
open/closed ends), comma lists of those, and `not(list)`. Output entries are literals.
Hit policies: UNIQUE, FIRST, PRIORITY (order of the output's `outputValues`), COLLECT (no
aggregation: the list of outputs, in rule order). A table where no rule matches answers null
(`evaluate` gives no row; COLLECT the empty list), as DMN says, and does not raise: a gateway
reading it has no branch to take and says so (engine.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from lxml import etree

from .facts import problems as fact_problems

DMN_NAMESPACES = (
    "https://www.omg.org/spec/DMN/20191111/MODEL/",
    "http://www.omg.org/spec/DMN/20180521/MODEL/",
    "http://www.omg.org/spec/DMN/20151101/dmn.xsd",
)
HIT_POLICIES = ("UNIQUE", "FIRST", "PRIORITY", "COLLECT")


class CellError(ValueError):
    """A cell outside the declared FEEL subset."""


class DecisionError(ValueError):
    """A table that cannot produce an answer for these facts (no rule, or UNIQUE broken)."""


_NUM = r"-?(?:\d+(?:\.\d+)?|\.\d+)"  # FEEL: digits [. digits] | . digits
_STR = r'"(?:[^"\\]|\\.)*"'
_LIT = re.compile(rf"^\s*({_NUM}|{_STR}|true|false|null)\s*$")
_CMP = re.compile(rf"^\s*(<=|>=|<|>)\s*({_NUM}|{_STR})\s*$")
_RANGE = re.compile(rf"^\s*([\[\]\(])\s*({_NUM}|{_STR})\s*\.\.\s*({_NUM}|{_STR})\s*([\[\]\)])\s*$")
_NOT = re.compile(r"^\s*not\s*\((.*)\)\s*$", re.S)


def parse_literal(text: str) -> Any:
    m = _LIT.match(text)
    if not m:
        raise CellError(f"{text.strip()!r} is not a literal (number, \"string\", true, false or null)")
    return _literal(m.group(1))


_ESCAPES = {'"': '"', "\\": "\\", "'": "'", "n": "\n", "r": "\r", "t": "\t"}
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{6}|.)", re.S)


def _unescape(body: str) -> str:
    """A FEEL string literal's body: `\\n` is a newline, `\\u0041` is `A` (a UTF-16 surrogate pair
    written as two \\u escapes is one character); any other escape is not FEEL."""
    def one(m: re.Match) -> str:
        e = m.group(1)
        if e[0] in "uU" and len(e) > 1:
            return chr(int(e[1:], 16)) if int(e[1:], 16) <= 0x10FFFF else _bad(e)
        return _ESCAPES.get(e) or _bad(e)
    text = _ESCAPE.sub(one, body)
    try:
        return text.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        raise CellError(f'"{body}" has an unpaired UTF-16 surrogate escape') from None


def _bad(escape: str) -> str:
    raise CellError(f"\\{escape} is not a FEEL string escape (\\\" \\\\ \\' \\n \\r \\t \\uXXXX \\UXXXXXX)")


def _literal(tok: str) -> Any:
    if tok.startswith('"'):
        return _unescape(tok[1:-1])
    if tok in ("true", "false"):
        return tok == "true"
    if tok == "null":
        return None
    return float(tok) if "." in tok else int(tok)


def _comparable(a: Any, b: Any) -> bool:
    num = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    return (isinstance(a, num) and isinstance(b, num)) or (isinstance(a, str) and isinstance(b, str))


def _equal(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return _comparable(a, b) and a == b


def _split_list(text: str) -> list[str]:
    """Split on commas outside strings and brackets."""
    parts, depth, buf, in_str, esc = [], 0, [], False, False
    for ch in text:
        if in_str:
            buf.append(ch)
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "[(":
            depth += 1
        elif ch in "])" and depth:
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(buf))
            buf = []
            continue
        buf.append(ch)
    parts.append("".join(buf))
    return parts


Test = Callable[[Any], bool]


def _one_test(text: str) -> Test:
    if m := _CMP.match(text):
        op, bound = m.group(1), _literal(m.group(2))
        ops = {"<": lambda v: v < bound, "<=": lambda v: v <= bound,
               ">": lambda v: v > bound, ">=": lambda v: v >= bound}[op]
        return lambda v: _comparable(v, bound) and ops(v)
    if m := _RANGE.match(text):
        lo_open = m.group(1) in "]("
        hi_open = m.group(4) in "[)"
        lo, hi = _literal(m.group(2)), _literal(m.group(3))
        if not _comparable(lo, hi):
            raise CellError(f"range {text.strip()!r} mixes a number and a string")

        def in_range(v: Any) -> bool:
            if not _comparable(v, lo):
                return False
            return (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)
        return in_range
    if _LIT.match(text):
        value = parse_literal(text)
        return lambda v: _equal(v, value)
    raise CellError(f"{text.strip()!r} is outside the FEEL subset (literal, < <= > >=, range, list, not(...))")


def parse_unary_tests(text: str | None) -> Test:
    """A whole input cell as one predicate; raises CellError for anything outside the subset."""
    body = (text or "").strip()
    if body in ("", "-"):
        return lambda v: True
    if m := _NOT.match(body):
        inner = parse_unary_tests(m.group(1))
        if m.group(1).strip() in ("", "-"):
            raise CellError("not(-) matches nothing; write the tests to exclude")
        return lambda v: not inner(v)
    tests = [_one_test(p) for p in _split_list(body)]
    if any(not p.strip() for p in _split_list(body)):
        raise CellError(f"{body!r} has an empty list entry")
    return lambda v: any(t(v) for t in tests)


@dataclass
class Rule:
    index: int
    inputs: list[Test]
    outputs: list[Any]


@dataclass
class DecisionTable:
    id: str
    name: str
    source: str
    hit_policy: str
    input_names: list[str]
    output_names: list[str]
    output_values: list[list[Any]]  # per output, allowed values in priority order ([] = any)
    rules: list[Rule] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # every cell it cannot evaluate
    unloadable: bool = False  # not a decision table the subset reads (`problems` says why)
    input_sources: dict[str, str] = field(default_factory=dict)  # `px:fact` per input (workflows/facts.py)

    def evaluate(self, facts: dict[str, Any]) -> list[dict[str, Any]]:
        """The matching rules' outputs after the hit policy: one dict, or COLLECT's list; no row when
        no rule matches (the decision is null; COLLECT's the empty list)."""
        if self.problems:
            what = "cannot be evaluated" if self.unloadable else "has cells it cannot evaluate"
            raise DecisionError(f"decision {self.id!r} {what}: {self.problems[0]}")
        values = [facts.get(name) for name in self.input_names]
        hits = [r for r in self.rules if all(t(v) for t, v in zip(r.inputs, values))]
        if not hits:
            return []
        outs = [dict(zip(self.output_names, r.outputs)) for r in hits]
        if self.hit_policy == "UNIQUE":
            if len(hits) > 1:
                raise DecisionError(f"decision {self.id!r} is UNIQUE but rules "
                                    f"{', '.join(str(r.index + 1) for r in hits)} all match")
            return outs
        if self.hit_policy == "FIRST":
            return outs[:1]
        if self.hit_policy == "PRIORITY":
            order = self.output_values[0]

            def rank(o: dict) -> int:
                v = o[self.output_names[0]]
                return order.index(v) if v in order else len(order)
            return [min(outs, key=rank)]
        return outs  # COLLECT

    def result(self, facts: dict[str, Any]) -> Any:
        """The decision's value as DMN gives it: null where no rule matches; one output's value, or
        the outputs by name when there are several; under COLLECT the list of those."""
        rows = [r[self.output_names[0]] if len(self.output_names) == 1 else r for r in self.evaluate(facts)]
        return rows if self.hit_policy == "COLLECT" else (rows[0] if rows else None)

    def no_match(self, facts: dict[str, Any]) -> str:
        shown = ", ".join(f"{n}={facts.get(n)!r}" for n in self.input_names)
        return f"no rule of decision {self.id!r} matches {shown}: the decision is null"


def _text(el: etree._Element | None) -> str:
    if el is None:
        return ""
    for child in el:
        if etree.QName(child).localname == "text":
            return child.text or ""
    return el.text or ""


def _children(el: etree._Element, name: str) -> list[etree._Element]:
    return [c for c in el if isinstance(c.tag, str) and etree.QName(c).localname == name]


def parse_table(decision: etree._Element, source: str) -> DecisionTable:
    tables = _children(decision, "decisionTable")
    did = decision.get("id") or "?"
    if len(tables) != 1:
        raise CellError(f"decision {did!r} in {source} needs exactly one decisionTable (literal "
                        "expressions and requirement graphs are outside the subset)")
    dt = tables[0]
    policy = (dt.get("hitPolicy") or "UNIQUE").upper()
    problems: list[str] = []
    if policy not in HIT_POLICIES:
        problems.append(f"hit policy {policy} (supported: {', '.join(HIT_POLICIES)})")
    if dt.get("aggregation"):
        problems.append(f"COLLECT aggregation {dt.get('aggregation')} (only plain COLLECT)")
    inputs = _children(dt, "input")
    names, sources = [], {}
    for i, inp in enumerate(inputs):
        expr = _children(inp, "inputExpression")
        name = _text(expr[0]).strip() if expr else ""
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            problems.append(f"input {i + 1} expression {name!r} is not a fact name")
        names.append(name)
        for key, value in inp.attrib.items():
            if etree.QName(key).localname == "fact":  # `px:fact="system|asserted"` (workflows/facts.py)
                sources[name] = value.strip()
    problems += fact_problems(names, sources)
    outputs = _children(dt, "output")
    out_names = [o.get("name") or f"output{i + 1}" for i, o in enumerate(outputs)]
    out_values: list[list[Any]] = []
    for o in outputs:
        allowed: list[Any] = []
        for ov in _children(o, "outputValues"):
            for part in _split_list(_text(ov)):
                try:
                    allowed.append(parse_literal(part))
                except CellError as e:
                    problems.append(f"output {o.get('name')!r} values: {e}")
        out_values.append(allowed)
    if policy == "PRIORITY" and not (out_values and out_values[0]):
        problems.append("PRIORITY needs the output's outputValues to order the outcomes")
    table = DecisionTable(did, decision.get("name") or did, source, policy, names, out_names, out_values,
                          problems=problems, input_sources=sources)
    for r_i, rule in enumerate(_children(dt, "rule")):
        ins, outs = _children(rule, "inputEntry"), _children(rule, "outputEntry")
        if len(ins) != len(names) or len(outs) != len(out_names):
            problems.append(f"rule {r_i + 1} has {len(ins)} input and {len(outs)} output cells, "
                            f"the table {len(names)} and {len(out_names)}")
            continue
        tests, values = [], []
        for c_i, cell in enumerate(ins):
            try:
                tests.append(parse_unary_tests(_text(cell)))
            except CellError as e:
                problems.append(f"rule {r_i + 1} input {names[c_i]!r}: {e}")
                tests.append(lambda v: False)
        for c_i, cell in enumerate(outs):
            try:
                value = parse_literal(_text(cell))
                if out_values[c_i] and value not in out_values[c_i]:
                    problems.append(f"rule {r_i + 1} output {value!r} is not among {out_names[c_i]!r}'s values")
                values.append(value)
            except CellError as e:
                problems.append(f"rule {r_i + 1} output {out_names[c_i]!r}: {e}")
                values.append(None)
        table.rules.append(Rule(r_i, tests, values))
    return table


def load_dmn(path: Path) -> dict[str, DecisionTable]:
    """Every decision of a DMN file by id; unreadable cells, and a decision that is no table the
    subset reads, are listed in its `problems`, not raised (CellError: the file is no DMN XML)."""
    try:
        root = etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True)).getroot()
    except (OSError, etree.XMLSyntaxError) as e:
        raise CellError(f"{path.name} is not readable DMN XML: {e}") from None
    out = {}
    for el in root.iter():
        if isinstance(el.tag, str) and etree.QName(el).localname == "decision":
            try:
                out[el.get("id")] = parse_table(el, path.name)
            except CellError as e:  # this decision only: the file's other tables still load
                did = el.get("id") or "?"
                out[did] = DecisionTable(did, el.get("name") or did, path.name, "UNIQUE", [], [], [],
                                         problems=[str(e)], unloadable=True)
    return out
