"""Request classification into the seed's eight categories (R-HAR-2).

A decision table first: ordered rules over the request's words, first hit wins, every rule
named so the record says which one decided. The seed's boundary rule comes before the content
rules — a request that would change the platform rather than the content is a feature request.
Where no rule hits, or the platform and content rules both hit with no clear platform verb, the
table does not decide: the answer is `pending`, and a judgement with its reason (by the agent or
a person) must be recorded — never a silent guess.

The category selects the workflow; information requests, tool invocations and work-plan
management start none (the seed: answered or done directly, then reported).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CATEGORIES = ("content_authoring", "content_review", "content_ingestion", "feature_request",
              "information_request", "tool_invocation", "work_plan_management", "bug_report")
WORKFLOW_OF = {
    "feature_request": "feature-request",
    "bug_report": "bug-triage",
    "content_ingestion": "document-ingestion",
    "content_authoring": "draft-to-publication",
    "content_review": "draft-to-publication",
    "information_request": None,
    "tool_invocation": None,
    "work_plan_management": None,
}


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
TOOL_AT_START = re.compile(r"^\s*(?:please\s+)?(?:run|execute|invoke|regenerate|rebuild|rerun|re-run|trigger)\b"
                           r"|`[^`]+`", re.I)


@dataclass(frozen=True)
class Result:
    category: str | None     # None: the table did not decide; a judgement is needed
    rule: str | None
    reason: str

    @property
    def workflow(self) -> str | None:
        return WORKFLOW_OF.get(self.category) if self.category else None

    def as_dict(self) -> dict:
        return {"category": self.category, "rule": self.rule, "reason": self.reason, "workflow": self.workflow,
                "method": "table" if self.category else "pending"}


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
        return Result("content_authoring", "R8-author", f"asks for content ({author.group(0)!r})")
    if platform:
        return Result("feature_request", "R9-platform-noun", f"names a platform part ({platform.group(0)!r})")
    if TOOL.search(t):
        return Result("tool_invocation", "R10-tool-word", f"asks to {TOOL.search(t).group(0)!r} something")
    if QUESTION.search(t):
        return Result("information_request", "R11-question", "asks a question")
    return Result(None, None, "no rule of the classification table matches; a judgement with a reason is needed")
