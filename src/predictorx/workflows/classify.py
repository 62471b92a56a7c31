"""Request classification into the seed's eight categories (R-HAR-2).

The table is data (classify_table.py: TOML rule files, English and Russian shipped, a workspace's
own added through `predictorx classify-rules`): weighted signals per category, matched on the
request's words. The scores decide only with a margin — the best category reaches `min_score` and
leads the runner-up by `min_margin` — so a request that carries signals of two categories (the
seed's boundary: platform change or content?) is never guessed: the classification is `pending`
with a question, in the request's language, that reaches the agent's next prompt (the sweep) and
the issue page, and a judgement with its reason (by the agent or a person) decides it.

The category selects the workflow; information requests, tool invocations and work-plan
management start none (the seed: answered or done directly, then reported). Content authoring
has two workflows, one per folio type (seed 003: authoring-a-paper, authoring-a-document): the
facts read from the request (the folio type it names, from the table's [[folio]] signals) go
through the DMN table `processes/decisions/authoring-folio.dmn`. Where it answers `ask` (no folio
type, or both), the category is decided but the workflow is not: the classification stays
`pending` until a judgement names the folio.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from .classify_table import CATEGORIES, FOLIO_TYPES, Signal, Table, build, shipped_sources
from .dmn import load_dmn

__all__ = ["CATEGORIES", "FOLIO_TYPES", "PLAIN_LABELS", "Result", "classify", "shipped_table", "workflow_of"]
WORKFLOW_OF = {
    "feature_request": "feature-request",
    "bug_report": "bug-triage",
    "content_ingestion": "document-ingestion",
    "content_authoring": None,  # by the folio type: AUTHORING_OF
    "content_review": "content-lifecycle",  # seed 003: review → the content lifecycle
    "information_request": None,
    "tool_invocation": None,
    "work_plan_management": None,
}
AUTHORING_OF = {"paper": "authoring-a-paper", "document": "authoring-a-document"}
FOLIO_TABLE = Path(__file__).parent / "processes" / "decisions" / "authoring-folio.dmn"


def workflow_of(category: str | None, folio: str | None = None) -> str | None:
    """The workflow a category starts; content authoring's depends on the folio type."""
    if category == "content_authoring":
        return AUTHORING_OF.get(folio or "")
    return WORKFLOW_OF.get(category) if category else None


@dataclass(frozen=True)
class Result:
    category: str | None     # None: the table did not decide; a judgement is needed
    rule: str | None
    reason: str
    folio: str | None = None  # content authoring: the folio type the folio table decided
    question: str | None = None  # pending: what to ask, in the request's language
    candidates: tuple[str, ...] = ()  # pending: the categories the question chooses between
    scores: dict[str, int] = field(default_factory=dict, compare=False)

    @property
    def decided(self) -> bool:
        """The workflow is decided (content authoring needs its folio too)."""
        return self.category is not None and (self.category != "content_authoring" or self.folio is not None)

    @property
    def method(self) -> str:
        return "table" if self.decided else "pending"

    @property
    def workflow(self) -> str | None:
        return workflow_of(self.category, self.folio) if self.decided else None

    def as_dict(self) -> dict:
        return {"category": self.category, "rule": self.rule, "reason": self.reason, "workflow": self.workflow,
                "method": self.method, "folio": self.folio, "question": self.question,
                "candidates": list(self.candidates), "scores": {k: v for k, v in self.scores.items() if v}}




PLAIN_LABELS = {"content_authoring": "writing content", "content_review": "reviewing content",
                   "content_ingestion": "importing a source", "feature_request": "a platform change",
                   "information_request": "a question to answer", "tool_invocation": "running a tool",
                   "work_plan_management": "the work plan (beans)", "bug_report": "a bug report"}
FOLIO_QUESTION = {"en": "Which folio is this content for: the paper folio or the document folio?",
                  "ru": "Для какого фолио этот контент: фолио статьи (paper) или фолио документа (document)?"}


@lru_cache(maxsize=1)
def shipped_table() -> Table:
    """The shipped rules (classify_rules/*.toml), compiled once per process."""
    return build(shipped_sources())


@lru_cache(maxsize=1)
def _folio_table():
    return load_dmn(FOLIO_TABLE)["authoring_folio"]


def decide_folio(facts: dict[str, Any]) -> str | None:
    """The folio table over the facts: paper, document, or None where it answers `ask`."""
    route = str(_folio_table().evaluate(facts)[0]["route"])
    return route if route in FOLIO_TYPES else None


def folio_facts(text: str, table: Table | None = None) -> dict[str, Any]:
    """What the request says about its folio: `folio_type` paper, document, or None (not said, or both).
    A folio named outright ("the document folio") beats the topic words (a theorem, a user guide)."""
    table = table or shipped_table()
    found = table.hits(table.tokens(text), "folio")
    hits = [table.folios[k] for k in found if table.folios[k].weight > 0]
    named = {f.target for f in hits if f.named} or {f.target for f in hits}
    return {"folio_type": named.pop() if len(named) == 1 else None}


def _language(hits: list[Signal], table: Table) -> str:
    weight: dict[str, int] = {}
    for h in hits:
        weight[h.language] = weight.get(h.language, 0) + abs(h.weight)
    return max(weight, key=lambda k: weight[k]) if weight else (table.languages or ["en"])[0]


def _label(table: Table, lang: str, category: str) -> str:
    return (table.labels.get(lang, {}).get(category) or table.labels.get("en", {}).get(category)
            or PLAIN_LABELS[category])


def _question(table: Table, lang: str, pair: tuple[str, ...]) -> str:
    if len(pair) == 2:
        for key in ((lang, frozenset(pair)), ("en", frozenset(pair))):
            if key in table.questions:
                return table.questions[key]
    labels = [_label(table, lang, c) for c in pair]
    if lang == "ru":
        return ("Что это за запрос: " + " или ".join(labels) + "?") if labels else \
            "К какой категории относится этот запрос, и почему?"
    return ("Which is this request: " + ", or ".join(labels) + "?") if labels else \
        "Which kind of request is this, and why?"


def _explain(hits: list[Signal], found: dict[str, str]) -> str:
    return ", ".join(f"{found[h.id]!r} {h.weight:+d}" for h in hits)


def _authoring(text: str, table: Table, result: Result, lang: str) -> Result:
    facts = folio_facts(text, table)
    folio = decide_folio(facts)
    if folio:
        return Result("content_authoring", f"{result.rule}/{folio}", f"{result.reason}; the folio table decides {folio} "
                      f"(folio_type={facts['folio_type']!r})", folio, scores=result.scores)
    return Result("content_authoring", result.rule, f"{result.reason}; the folio table cannot decide paper or "
                  "document (the request names neither, or both): ask which folio the content is for and record "
                  "it as a judgement", None, FOLIO_QUESTION.get(lang, FOLIO_QUESTION["en"]),
                  ("content_authoring",), result.scores)


def classify(text: str, table: Table | None = None) -> Result:
    """The table's decision with its margin, or `pending` with the question to ask."""
    table = table or shipped_table()
    tokens = table.tokens(text)
    if not tokens.text:
        return Result(None, None, "the request is empty", question=_question(table, "en", ()))
    scores = dict.fromkeys(CATEGORIES, 0)
    hits: dict[str, list[Signal]] = {c: [] for c in CATEGORIES}
    found = table.hits(tokens)
    for sid in found:
        sig = table.signals[sid]
        scores[sig.target] += sig.weight
        hits[sig.target].append(sig)
    lang = _language([h for hs in hits.values() for h in hs], table)
    ranked = sorted(CATEGORIES, key=lambda c: -scores[c])
    best, second = ranked[0], ranked[1]
    top, runner = scores[best], max(scores[second], 0)
    if top < table.decision["min_score"]:
        near = tuple(c for c in ranked[:2] if scores[c] > 0)
        return Result(None, None, f"no category reaches the table's threshold {table.decision['min_score']} "
                      f"(best: {best} {top})", question=_question(table, lang, near), candidates=near, scores=scores)
    if top - runner < table.decision["min_margin"] or runner >= table.decision["conflict_score"]:
        pair = (best, second)
        return Result(None, None, f"{best} ({top}: {_explain(hits[best], found)}) and {second} ({runner}: "
                      f"{_explain(hits[second], found)}) are too close to decide (margin "
                      f"{table.decision['min_margin']}, or a conflicting signal of "
                      f"{table.decision['conflict_score']}); a judgement with a reason is needed",
                      question=_question(table, lang, pair), candidates=pair, scores=scores)
    positive = sorted((h for h in hits[best] if h.weight > 0), key=lambda h: -h.weight)
    rule = "+".join(h.id for h in positive)[:90]
    why = f"{best} {top} over {second} {runner} ({_explain(hits[best], found)})"
    result = Result(best, rule, why, scores=scores)
    return _authoring(text, table, result, lang) if best == "content_authoring" else result
