"""The classification table as data (R-HAR-2): TOML rule files, one per language, merged into one
compiled table. Pure: it imports nothing of the platform.

A rule file (the shipped ones are `classify_rules/en.toml` and `classify_rules/ru.toml`; a
workspace adds its own with `predictorx classify-rules add FILE`, docs/workflows.md):

    language = "de"                      # a label only
    lead = ["bitte", "kannst du"]        # politeness words skipped before a sentence's first word
    [labels]                             # how the questions name the categories
    bug_report = "ein Fehlerbericht"
    [[signal]]
    id = "de.bug.kaputt"                 # unique over all files; shown in the record and the tooltip
    category = "bug_report"              # one of the eight
    weight = 4                           # negative: counts against the category
    terms = ["kaputt", "stürzt ab", "fehler*"]   # words in order; `*` ends a word prefix
    regex = ['\\bhttp 5\\d\\d\\b']       # shipped files only (a workspace's are refused): Python regexes
    at = "start"                         # optional: only as a sentence's first words (after `lead`)
    [[folio]]                            # which folio a content-authoring request is for
    id = "de.folio.paper"
    type = "paper"                       # paper | document
    terms = ["artikel*", "beweis*"]
    named = false                        # true: names the folio outright (beats the topic words)
    [[question]]                         # what to ask when two categories are close
    between = ["feature_request", "content_authoring"]
    text = "…"
    [decision]                           # optional; the last file that sets a value wins
    min_score = 3                        # the best category scores at least this
    min_margin = 3                       # and leads the runner-up by this
    conflict_score = 5                   # and no other category scores this (a conflicting signal)

A signal's id given again replaces the earlier signal of that id (a workspace can re-weigh or
silence a shipped signal: `weight = 0`).
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CATEGORIES = ("content_authoring", "content_review", "content_ingestion", "feature_request",
              "information_request", "tool_invocation", "work_plan_management", "bug_report")
FOLIO_TYPES = ("paper", "document")
SHIPPED_DIR = Path(__file__).parent / "classify_rules"
MAX_TERMS = 2000
DECISION_KEYS = ("min_score", "min_margin", "conflict_score")
MAX_TEXT = 8000  # characters of a request the table reads (title and the start of the body)
_ID = re.compile(r"^[\w.-]{1,100}$")


class RulesError(ValueError):
    """A rule file that does not load; the message is one sentence naming the file and the entry."""


def normalise(text: str) -> str:
    """What the rules match against: NFKC, case-folded, ё as е, @-mentions dropped, spaces collapsed
    (new lines kept: they end a sentence)."""
    t = unicodedata.normalize("NFKC", text or "").casefold().replace("ё", "е").replace("’", "'")
    t = re.sub(r"(?<![\w.])@[\w.-]+", " ", t)
    return "\n".join(" ".join(line.split()) for line in t.splitlines() if line.strip())


_TOKEN = re.compile(r"[\w'-]+|[.!?;\n]")
_WORD = re.compile(r"^[\w'-]+\*?$")
Word = tuple[str, bool]  # (text, is a prefix)


def _term(term: str, where: str) -> str:
    """A term as a regular expression: the fallback for terms that are not plain words (`uploads/`)."""
    words = normalise(term).split()
    if not words:
        raise RulesError(f"{where}: an empty term")
    parts = []
    for w in words:
        prefix = w.endswith("*") and len(w) > 1
        w = w[:-1] if prefix else w
        parts.append(re.escape(w) + (r"[\w'-]*" if prefix else ""))
    body = r"[\s,:;]+".join(parts)  # disjoint from a prefix's `[\w'-]*`: no backtracking between them
    return r"(?<![\w-])" + body + (r"(?![\w])" if not words[-1].endswith("*") else "")


def _words(term: str) -> tuple[Word, ...] | None:
    """A term as words to match on the request's tokens, or None where it is not plain words."""
    words = [w.strip(",:;") for w in normalise(term).split()]
    if not words or not all(w and _WORD.match(w) and w != "*" for w in words):
        return None
    return tuple((w[:-1], True) if w.endswith("*") else (w, False) for w in words)


def _at(tokens: list[str], i: int, words: tuple[Word, ...]) -> bool:
    if i + len(words) > len(tokens):
        return False
    for k, (w, prefix) in enumerate(words):
        tok = tokens[i + k]
        if not (tok.startswith(w) if prefix else tok == w):
            return False
    return True


@dataclass(frozen=True)
class Signal:
    id: str
    target: str          # a category, or a folio type for folio signals
    weight: int
    pattern: re.Pattern[str] | None  # its regex entries and non-word terms, if any
    named: bool = False  # folio signals: names the folio outright
    source: str = ""     # the file it came from
    language: str = ""   # its file's `language`
    words: tuple[tuple[Word, ...], ...] = ()  # its plain-word terms
    at_start: bool = False


@dataclass
class Tokens:
    """A request as words, and the positions where a sentence's own words start (after lead words)."""
    text: str
    words: list[str]
    starts: set[int]


@dataclass
class Table:
    signals: dict[str, Signal] = field(default_factory=dict)
    folios: dict[str, Signal] = field(default_factory=dict)
    questions: dict[tuple[str, frozenset[str]], str] = field(default_factory=dict)  # (language, pair)
    labels: dict[str, dict[str, str]] = field(default_factory=dict)  # language → category → label
    lead: list[str] = field(default_factory=list)
    decision: dict[str, int] = field(default_factory=lambda: {"min_score": 3, "min_margin": 3, "conflict_score": 5})
    languages: list[str] = field(default_factory=list)
    _start: str = ""
    _leads: list[tuple[Word, ...]] | None = None
    _index: dict[str, dict[str, list[tuple[Signal, tuple[Word, ...]]]]] = field(default_factory=dict)

    def start_anchor(self) -> str:
        """A sentence's start, after any lead words (politeness, addressing), for regex entries."""
        if not self._start:
            lead = "|".join(sorted((_term(x, "lead")[len(r"(?<![\w-])"):] for x in self.lead), key=len, reverse=True))
            start = r"(?:^|(?<=[.!?;]\s))"
            self._start = start + (r"(?:(?:" + lead + r")[\s,!]+)*" if lead else "")
        return self._start

    def tokens(self, text: str) -> Tokens:
        t = normalise((text or "")[:MAX_TEXT])  # a request's gist is at its start; the cost stays bounded
        words: list[str] = []
        starts = {0}
        for m in _TOKEN.finditer(t):
            tok = m.group(0)
            if tok in ".!?;\n":
                starts.add(len(words))
            else:
                words.append(tok)
        if self._leads is None:
            self._leads = [w for w in (_words(x) for x in self.lead) if w]
        leads = self._leads
        todo = list(starts)
        while todo:  # a sentence's own words start after any run of lead words
            i = todo.pop()
            for lw in leads:
                if _at(words, i, lw) and i + len(lw) not in starts:
                    starts.add(i + len(lw))
                    todo.append(i + len(lw))
        return Tokens(t, words, starts)

    def _lookup(self, kind: str) -> dict[str, list[tuple[Signal, tuple[Word, ...]]]]:
        """First word → the terms starting with it: exact words by themselves, prefixes by their first
        two letters (one-letter prefixes by one)."""
        index = self._index.get(kind)
        if index is None:
            index = {}
            for sig in (self.signals if kind == "signal" else self.folios).values():
                for words in sig.words:
                    w, prefix = words[0]
                    key = ("*" + w[:2]) if prefix else w
                    index.setdefault(key, []).append((sig, words))
            self._index[kind] = index
        return index

    def hits(self, tokens: Tokens, kind: str = "signal") -> dict[str, str]:
        """Signal id → the text it matched (its first match), for the signals (or folio signals) that match."""
        index, found = self._lookup(kind), {}
        toks = tokens.words
        for i, tok in enumerate(toks):
            for key in (tok, "*" + tok[:2], "*" + tok[:1]):
                for sig, words in index.get(key, ()):
                    if sig.id not in found and (not sig.at_start or i in tokens.starts) and _at(toks, i, words):
                        found[sig.id] = " ".join(toks[i:i + len(words)])
        for sig in (self.signals if kind == "signal" else self.folios).values():
            if sig.pattern is not None and sig.id not in found:
                m = sig.pattern.search(tokens.text)
                if m:
                    found[sig.id] = m.group(0).strip()
        return found


def _strs(v: Any, where: str) -> list[str]:
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise RulesError(f"{where} must be a list of strings")
    return v


def _compile(entry: dict, table: Table, where: str, kind: str) -> Signal:
    sid = entry.get("id")
    if not isinstance(sid, str) or not _ID.match(sid):
        raise RulesError(f"{where}: each {kind} needs an id (letters, digits, . _ -)")
    where = f"{where} {kind} {sid}"
    target = entry.get("category") if kind == "signal" else entry.get("type")
    allowed = CATEGORIES if kind == "signal" else FOLIO_TYPES
    if target not in allowed:
        raise RulesError(f"{where}: {'category' if kind == 'signal' else 'type'} must be one of {', '.join(allowed)}")
    weight = entry.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, int) or not -100 <= weight <= 100:
        raise RulesError(f"{where}: weight must be a whole number from -100 to 100")
    terms = _strs(entry.get("terms"), f"{where}: terms")
    regexes = _strs(entry.get("regex"), f"{where}: regex")
    if not terms and not regexes:
        raise RulesError(f"{where}: needs terms or regex")
    if len(terms) + len(regexes) > MAX_TERMS:
        raise RulesError(f"{where}: more than {MAX_TERMS} terms")
    words, alts = [], []
    for t in terms:
        w = _words(t)
        if w:
            words.append(w)
        else:
            alts.append(_term(t, where))
    for rx in regexes:
        try:
            re.compile(rx)
        except re.error as e:
            raise RulesError(f"{where}: the regex {rx!r} does not compile ({e})") from None
        alts.append(rx)
    at = entry.get("at")
    if at not in (None, "start", "anywhere"):
        raise RulesError(f"{where}: at must be start or anywhere")
    pattern = None
    if alts:
        body = "(?:" + "|".join(alts) + ")"
        pattern = re.compile((table.start_anchor() + body) if at == "start" else body, re.I | re.M)
    return Signal(sid, str(target), weight, pattern, bool(entry.get("named", False)), where.split(" ")[0],
                  "", tuple(words), at == "start")


def _merge(table: Table, data: dict, name: str) -> None:
    unknown = set(data) - {"language", "lead", "labels", "signal", "folio", "question", "decision"}
    if unknown:
        raise RulesError(f"{name}: unknown key {sorted(unknown)[0]!r}")
    lang = data.get("language", "")
    if not isinstance(lang, str) or not re.match(r"^[\w-]{0,20}$", lang):
        raise RulesError(f"{name}: language is a short code such as en or ru")
    if lang and lang not in table.languages:
        table.languages.append(lang)
    labels = data.get("labels", {})
    if not isinstance(labels, dict) or set(labels) - set(CATEGORIES) or not all(isinstance(v, str) for v in labels.values()):
        raise RulesError(f"{name}: labels maps categories ({', '.join(CATEGORIES)}) to text")
    table.labels.setdefault(lang, {}).update(labels)
    for kind, into in (("signal", table.signals), ("folio", table.folios)):
        for entry in data.get(kind, []):
            if not isinstance(entry, dict):
                raise RulesError(f"{name}: each [[{kind}]] is a table")
            sig = _compile(entry, table, name, kind)
            into[sig.id] = dataclasses.replace(sig, source=name, language=lang)
    for q in data.get("question", []):
        between = q.get("between") if isinstance(q, dict) else None
        if (not isinstance(between, list) or len(between) != 2 or not set(between) <= set(CATEGORIES)
                or not isinstance(q.get("text"), str)):
            raise RulesError(f"{name}: a [[question]] has between = [two categories] and text")
        table.questions[(lang, frozenset(between))] = q["text"]
    decision = data.get("decision", {})
    for k, v in decision.items():
        if k not in DECISION_KEYS or isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 100:
            raise RulesError(f"{name}: [decision] takes {', '.join(DECISION_KEYS)}, whole numbers from 1 to 100")
        table.decision[k] = v


def parse(source: str, name: str) -> dict:
    try:
        return tomllib.loads(source)
    except tomllib.TOMLDecodeError as e:
        raise RulesError(f"{name} is not valid TOML ({e})") from None


def build(sources: list[tuple[str, str]]) -> Table:
    """A table from (name, TOML text) pairs, later ones extending and overriding earlier ones. The
    start anchor depends on every file's lead words, so signals compile after all files are read."""
    datas = [(name, parse(src, name)) for name, src in sources]
    table = Table()
    for name, data in datas:  # lead words first: every `at = "start"` signal uses all of them
        table.lead += _strs(data.get("lead"), f"{name}: lead")
    for name, data in datas:
        _merge(table, data, name)
    return table


def shipped_sources() -> list[tuple[str, str]]:
    return [(f"shipped/{p.name}", p.read_text(encoding="utf-8")) for p in sorted(SHIPPED_DIR.glob("*.toml"))]
