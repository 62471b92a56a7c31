"""DMN decision tables: the FEEL subset, hit policies, the static cell check, and a property test
against a table oracle built from the same rules as Python predicates (R-HAR-4)."""

from __future__ import annotations

from xml.sax.saxutils import escape

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from predictorx.workflows.dmn import (
    CellError,
    DecisionError,
    parse_table,
    parse_unary_tests,
)


@pytest.mark.parametrize("cell, yes, no", [
    ("-", [1, "x", None], []),
    ("< 5", [4, 4.9], [5, "a", None, True]),
    (">= 2.5", [2.5, 9], [2, "2.5"]),
    ("[1..3]", [1, 2, 3], [0, 4]),
    ("]1..3[", [2], [1, 3]),
    ("(1..3]", [2, 3], [1]),
    ('"a", "b"', ["a", "b"], ["c", 1]),
    ('not("a", "b")', ["c", 1], ["a"]),
    ("1, [5..7]", [1, 6], [2, 8]),
    ("true", [True], [1, False]),
    ("null", [None], [0]),
    ('"x\\"y"', ['x"y'], ["x"]),
])
def test_unary_tests(cell, yes, no):
    test = parse_unary_tests(cell)
    assert all(test(v) for v in yes) and not any(test(v) for v in no)


@pytest.mark.parametrize("cell", ["x > 3", "date(\"2020-01-01\")", "[1..\"a\"]", "1,,2", "not(-)", "contains(x)"])
def test_cells_outside_the_subset_are_refused(cell):
    with pytest.raises(CellError):
        parse_unary_tests(cell)


def _table(policy: str, rows: list[tuple[list[str], str]], inputs=("a",), values: str | None = None) -> str:
    ins = "".join(f'<input><inputExpression><text>{n}</text></inputExpression></input>' for n in inputs)
    out = '<output name="r">' + (f"<outputValues><text>{values}</text></outputValues>" if values else "") + "</output>"
    rules = "".join("<rule>" + "".join(f"<inputEntry><text>{escape(c)}</text></inputEntry>" for c in cells)
                    + f"<outputEntry><text>{o}</text></outputEntry></rule>" for cells, o in rows)
    return (f'<definitions xmlns="https://www.omg.org/spec/DMN/20191111/MODEL/"><decision id="d">'
            f'<decisionTable hitPolicy="{policy}">{ins}{out}{rules}</decisionTable></decision></definitions>')


def _load(xml: str):
    root = etree.fromstring(xml.encode())
    return parse_table(root[0], "t.dmn")


def test_hit_policies():
    rows = [(["< 10"], '"low"'), (["< 5"], '"tiny"'), (["-"], '"any"')]
    assert _load(_table("FIRST", rows)).evaluate({"a": 3}) == [{"r": "low"}]
    assert [r["r"] for r in _load(_table("COLLECT", rows)).evaluate({"a": 3})] == ["low", "tiny", "any"]
    assert _load(_table("PRIORITY", rows, values='"tiny","low","any"')).evaluate({"a": 3}) == [{"r": "tiny"}]
    with pytest.raises(DecisionError, match="UNIQUE but rules 1, 2, 3"):
        _load(_table("UNIQUE", rows)).evaluate({"a": 3})
    for policy in ("UNIQUE", "FIRST", "PRIORITY"):  # no rule matches: null, not an error (issue 24 item 9)
        table = _load(_table(policy, [(["< 0"], '"neg"')], values='"neg"'))
        assert table.evaluate({"a": 3}) == [] and table.result({"a": 3}) is None
    assert _load(_table("COLLECT", [(["< 0"], '"neg"')])).result({"a": 3}) == []


def test_static_check_lists_every_cell_it_cannot_evaluate():
    t = _load(_table("UNIQUE", [(["a > 1"], '"x"'), (["1"], "y"), (["-"], '"z"')]))
    assert len(t.problems) == 2 and "rule 1 input 'a'" in t.problems[0] and "rule 2 output" in t.problems[1]
    with pytest.raises(DecisionError, match="cannot evaluate"):
        t.evaluate({"a": 1})
    assert "PRIORITY needs" in _load(_table("PRIORITY", [(["-"], '"x"')])).problems[0]


# --- property: the evaluator agrees with an oracle that never parses text ---------------------------

_num = st.integers(-20, 20)


@st.composite
def _cell(draw):
    kind = draw(st.sampled_from(["any", "lit", "cmp", "range", "list", "not"]))
    if kind == "any":
        return "-", lambda v: True
    if kind == "lit":
        n = draw(_num)
        return str(n), lambda v, n=n: v == n
    if kind == "cmp":
        op, n = draw(st.sampled_from(["<", "<=", ">", ">="])), draw(_num)
        f = {"<": lambda v: v < n, "<=": lambda v: v <= n, ">": lambda v: v > n, ">=": lambda v: v >= n}[op]
        return f"{op} {n}", f
    if kind == "range":
        lo, hi = sorted([draw(_num), draw(_num)])
        lo_open, hi_open = draw(st.booleans()), draw(st.booleans())
        text = ("(" if lo_open else "[") + f"{lo}..{hi}" + (")" if hi_open else "]")
        return text, lambda v: (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)
    if kind == "list":
        ns = draw(st.lists(_num, min_size=1, max_size=3))
        return ", ".join(map(str, ns)), lambda v: v in ns
    ns = draw(st.lists(_num, min_size=1, max_size=3))
    return "not(" + ", ".join(map(str, ns)) + ")", lambda v: v not in ns


@settings(max_examples=100, deadline=None)
@given(policy=st.sampled_from(["UNIQUE", "FIRST", "PRIORITY", "COLLECT"]),
       rules=st.lists(st.tuples(_cell(), _cell(), st.sampled_from(["x", "y", "z"])), min_size=1, max_size=6),
       a=_num, b=_num)
def test_evaluation_matches_the_table_oracle(policy, rules, a, b):
    order = ["z", "x", "y"]
    xml = _table(policy, [([c1[0], c2[0]], f'"{o}"') for c1, c2, o in rules], inputs=("a", "b"),
                 values='"z","x","y"' if policy == "PRIORITY" else None)
    table = _load(xml)
    assert not table.problems
    hits = [o for c1, c2, o in rules if c1[1](a) and c2[1](b)]
    try:
        got = [r["r"] for r in table.evaluate({"a": a, "b": b})]
    except DecisionError:
        assert not hits or (policy == "UNIQUE" and len(hits) > 1)
        return
    expected = {"UNIQUE": hits, "FIRST": hits[:1], "COLLECT": hits,
                "PRIORITY": [min(hits, key=order.index)] if hits else []}[policy]
    assert got == expected
