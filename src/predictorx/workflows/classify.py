"""Request classification into the seed's eight categories (R-HAR-2).

A decision table first: ordered rules over the request's words, first hit wins, every rule
named so the record says which one decided. The seed's boundary rule comes before the content
rules — a request that would change the platform rather than the content is a feature request.
Where no rule hits, or the platform and content rules both hit with no clear platform verb, the
table does not decide: the answer is `pending`, and a judgement with its reason (by the agent or
a person) must be recorded — never a silent guess.

The category selects the workflow; information requests, tool invocations and work-plan
management start none (the seed: answered or done directly, then reported). Content authoring
has two workflows, one per folio type (seed 003: authoring-a-paper, authoring-a-document): the
facts read from the request (the folio type it names) go through the DMN table
`processes/decisions/authoring-folio.dmn` — the same table the harness diagram's `folio`
gateway computes. Where it answers `ask` (no folio type, or both), the category is decided but
the workflow is not: the classification stays `pending` until a judgement names the folio.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from .dmn import load_dmn

CATEGORIES = ("content_authoring", "content_review", "content_ingestion", "feature_request",
              "information_request", "tool_invocation", "work_plan_management", "bug_report")
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
FOLIO_TYPES = ("paper", "document")
AUTHORING_OF = {"paper": "authoring-a-paper", "document": "authoring-a-document"}
FOLIO_TABLE = Path(__file__).parent / "processes" / "decisions" / "authoring-folio.dmn"


def workflow_of(category: str | None, folio: str | None = None) -> str | None:
    """The workflow a category starts; content authoring's depends on the folio type."""
    if category == "content_authoring":
        return AUTHORING_OF.get(folio or "")
    return WORKFLOW_OF.get(category) if category else None


def _any(*words: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])(?:" + "|".join(words) + r")(?![\w-])", re.I)


BUG = _any(r"bug", r"broken", r"crash(?:es|ed)?", r"fails?", r"failing", r"regression", r"traceback", r"exception",
           r"error(?:s)?", r"doesn't work", r"does not work", r"no longer works?", r"wrong(?:ly)?", r"500")
PLATFORM = _any(r"feature", r"support for", r"new (?:command|endpoint|option|flag|page|screen|setting|api|integration)",
                r"ability to", r"should be able to", r"allow (?:users|us|me|people) to", r"let (?:users|us|me) ",
                r"add (?:a |an )?(?:command|endpoint|option|flag|button|page|api|integration|setting|mode)",
                r"the platform", r"integrate with", r"implement", r"cli", r"api", r"ui")
PLATFORM_VERB = _any(r"add", r"implement", r"build", r"support", r"integrate", r"allow", r"enable", r"introduce")
INGEST = _any(r"import", r"ingest", r"upload(?:ed|s)?", r"attached", r"attachment",
              r"[\w-]+\.(?:pdf|docx?|xlsx?|csv|pptx?)", r"uploads/")
TOOL = _any(r"run", r"execute", r"invoke", r"regenerate", r"rebuild", r"re-run", r"rerun", r"trigger")
PLAN = _any(r"beans?", r"work ?plan", r"backlog", r"todo list", r"to-do list", r"work items?")
AUTHOR = _any(r"write", r"draft", r"edit", r"rewrite", r"expand", r"document", r"chapter", r"section", r"paper",
              r"docs?", r"readme", r"article", r"prose", r"paragraph")
REVIEW = _any(r"review", r"proofread", r"validate", r"feedback", r"critique", r"check (?:the|my|this)")
QUESTION = re.compile(r"^\s*(?:what|why|how|where|when|which|who|is|are|can|could|does|do|should)\b|\?\s*$", re.I)
# The folio type a request names: explicitly ("the paper folio", "folio: document") or by what it
# is about (a paper's mathematics and citations; a document's guides, manuals, reports).
FOLIO_NAMED = re.compile(r"\b(paper|document)\s+folio\b|\bfolio(?:\s+type)?\s*[:=]?\s*(paper|document)\b", re.I)
PAPER = _any(r"papers?", r"article", r"preprint", r"theorems?", r"lemmas?", r"proofs?", r"equations?", r"math(?:s|ematics)?",
             r"abstract", r"latex", r"bibliography")
DOCUMENT = _any(r"documents?", r"report", r"guide", r"manual", r"handbook", r"readme", r"docs", r"documentation",
                r"runbook")
TOOL_AT_START = re.compile(r"^\s*(?:please\s+)?(?:run|execute|invoke|regenerate|rebuild|rerun|re-run|trigger)\b"
                           r"|`[^`]+`", re.I)


@dataclass(frozen=True)
class Result:
    category: str | None     # None: the table did not decide; a judgement is needed
    rule: str | None
    reason: str
    folio: str | None = None  # content authoring: the folio type the folio table decided

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
                "method": self.method, "folio": self.folio}


def folio_facts(text: str) -> dict[str, Any]:
    """What the request says about its folio: `folio_type` paper, document, or None (not said, or both)."""
    named = {(m.group(1) or m.group(2)).lower() for m in FOLIO_NAMED.finditer(text)}
    if not named:
        named = {f for f, words in (("paper", PAPER), ("document", DOCUMENT)) if words.search(text)}
    return {"folio_type": named.pop() if len(named) == 1 else None}


@lru_cache(maxsize=1)
def _folio_table():
    return load_dmn(FOLIO_TABLE)["authoring_folio"]


def decide_folio(facts: dict[str, Any]) -> str | None:
    """The folio table over the facts: paper, document, or None where it answers `ask`."""
    route = str(_folio_table().evaluate(facts)[0]["route"])
    return route if route in FOLIO_TYPES else None


def _authoring(t: str, rule: str, why: str) -> Result:
    facts = folio_facts(t)
    folio = decide_folio(facts)
    if folio:
        return Result("content_authoring", f"{rule}/{folio}",
                      f"{why}; the folio table decides {folio} (folio_type={facts['folio_type']!r})", folio)
    return Result("content_authoring", rule, f"{why}; the folio table cannot decide paper or document "
                  "(the request names neither, or both): ask which folio the content is for and record it as a "
                  "judgement")


def classify(text: str) -> Result:
    t = " ".join((text or "").split())
    if not t:
        return Result(None, None, "the request is empty")
    bug, platform, author = BUG.search(t), PLATFORM.search(t), AUTHOR.search(t)
    if bug and not (platform and PLATFORM_VERB.search(t) and not re.search(r"\b(fix|bug|broken|crash)", t, re.I)):
        return Result("bug_report", "R1-bug", f"reports misbehaviour ({bug.group(0)!r})")
    if PLAN.search(t) and not platform:
        return Result("work_plan_management", "R2-plan", f"is about the work plan ({PLAN.search(t).group(0)!r})")
    if TOOL_AT_START.search(t) and not platform:
        return Result("tool_invocation", "R3-tool", "asks to run a tool")
    if platform and PLATFORM_VERB.search(t):
        return Result("feature_request", "R4-platform",
                      f"would change the platform, not the content ({platform.group(0)!r}) — the seed's rule")
    if platform and author:
        return Result(None, None, f"mentions the platform ({platform.group(0)!r}) and content ({author.group(0)!r}) "
                                  "without saying which changes; ask: platform change, or within the content model?")
    if INGEST.search(t):
        return Result("content_ingestion", "R5-ingest", f"brings a source to import ({INGEST.search(t).group(0)!r})")
    if QUESTION.search(t) and not author:
        return Result("information_request", "R6-question", "asks a question")
    if REVIEW.search(t):
        return Result("content_review", "R7-review", f"asks for review ({REVIEW.search(t).group(0)!r})")
    if author:
        return _authoring(t, "R8-author", f"asks for content ({author.group(0)!r})")
    if platform:
        return Result("feature_request", "R9-platform-noun", f"names a platform part ({platform.group(0)!r})")
    if TOOL.search(t):
        return Result("tool_invocation", "R10-tool-word", f"asks to {TOOL.search(t).group(0)!r} something")
    if QUESTION.search(t):
        return Result("information_request", "R11-question", "asks a question")
    return Result(None, None, "no rule of the classification table matches; a judgement with a reason is needed")
