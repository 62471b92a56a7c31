"""The classification table's file format (workflows/classify_table.py, issue 24 §6): words with
`*` prefixes, a sentence's first words after lead words, negative weights, ids that later files
override, named folios; the shipped English and Russian files load with unique ids."""

from __future__ import annotations

import tomllib

import pytest

from predictorx.workflows.classify import classify
from predictorx.workflows.classify_table import RulesError, build, shipped_sources

MINI = """
language = "xx"
lead = ["pls"]
[decision]
min_score = 3
min_margin = 2
[[signal]]
id = "xx.bug"
category = "bug_report"
weight = 4
terms = ["brok*", "falls over"]
[[signal]]
id = "xx.bug.not"
category = "bug_report"
weight = -4
terms = ["broken line"]
[[signal]]
id = "xx.tool"
category = "tool_invocation"
weight = 4
at = "start"
terms = ["go"]
"""


def test_the_shipped_files_load_and_their_ids_are_unique():
    ids = []
    for _, src in shipped_sources():
        data = tomllib.loads(src)
        ids += [s["id"] for s in data.get("signal", []) + data.get("folio", [])]
    assert len(ids) == len(set(ids)) and {n for n, _ in shipped_sources()} >= {"shipped/en.toml", "shipped/ru.toml"}


def test_prefixes_phrases_negative_weights_and_the_start_of_a_sentence():
    t = build([("mini", MINI)])
    assert classify("the page is brokken", t).category == "bug_report"  # brok* — any ending
    assert classify("it falls over", t).rule == "xx.bug"
    assert classify("draw the broken line", t).method == "pending"  # +4 −4
    assert classify("go home", t).category == "tool_invocation"
    assert classify("pls, go home", t).category == "tool_invocation"  # after a lead word
    assert classify("It is fine. Go home", t).category == "tool_invocation"  # a later sentence
    assert classify("we go home", t).method == "pending"  # not a sentence's first word


def test_a_later_file_overrides_a_signal_by_its_id():
    t = build([("mini", MINI), ("later", '[[signal]]\nid = "xx.bug"\ncategory = "bug_report"\nweight = 0\n'
                                         'terms = ["x"]\n')])
    assert classify("the page is broken", t).method == "pending"


@pytest.mark.parametrize("source, words", [
    ('[decision]\nmin_score = 0', "whole numbers from 1 to 100"),
    ('[[signal]]\nid = "a"\ncategory = "bug_report"\nweight = true\nterms = ["x"]', "weight must be"),
    ('[[signal]]\nid = "a"\ncategory = "bug_report"\nat = "end"\nterms = ["x"]', "at must be start or anywhere"),
    ('[[folio]]\nid = "a"\ntype = "poem"\nterms = ["x"]', "type must be one of"),
    ('[[question]]\nbetween = ["bug_report"]\ntext = "?"', "between = [two categories]"),
    ('[labels]\npoetry = "x"', "labels maps categories"),
])
def test_a_bad_entry_is_one_sentence_naming_the_file(source: str, words: str):
    with pytest.raises(RulesError) as e:
        build([("mine.toml", source)])
    assert words in str(e.value) and str(e.value).startswith("mine.toml")


def test_matching_ignores_case_yo_and_mentions():
    assert classify("@bot НАПИШИ введение к статье").workflow == "authoring-a-paper"
    assert classify("Почему всё ещё падает ЭКСПОРТ?").method == "pending"
