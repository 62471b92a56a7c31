"""Beans as hmans/beans Markdown files (R-HAR-6, R-HAR-11): read and written as beans itself does.

The format, from hmans/beans' own code (pkg/bean/bean.go, id.go; pkg/beancore/core.go):
- a file `<id>--<slug>.md` anywhere under `.beans/` (dot-folders skipped); the id is the file
  name's, never the `# <id>` comment, which beans writes and ignores;
- a YAML front-matter block between `---` lines (leading blank lines skipped, delimiters trimmed),
  read into title, status, type, priority, tags, created_at, updated_at, order, parent, blocking,
  blocked_by; other keys are ignored (reported here as a warning);
- the body: the rest, one trailing newline dropped. Beans writes `---`, `# <id>`, the fields in
  that order with yaml.v3 (omitempty for all but title and status, four-space sequences, strings
  double-quoted when YAML would read them as something else), `---`, a blank line, the body.

This module reads the YAML with PyYAML's safe loader, composed only (every scalar its text, as
beans' Go structs read them; no object constructed) and writes it through PyYAML's emitter with yaml.v3's choices, so
a file beans wrote comes back byte for byte. Statuses map todo/draft→created, in-progress,
completed→resolved, scrapped; `draft` is kept as a flag so it round-trips.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import yaml

TO_BEANS = {"created": "todo", "in-progress": "in-progress", "resolved": "completed", "scrapped": "scrapped"}
FROM_BEANS = {"todo": "created", "draft": "created", "in-progress": "in-progress", "completed": "resolved",
              "scrapped": "scrapped"}
FIELDS = ("title", "status", "type", "priority", "tags", "created_at", "updated_at", "order", "parent",
          "blocking", "blocked_by")
LISTS = ("tags", "blocking", "blocked_by")
ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_OLD_ISSUE_PARENT = re.compile(r"^issue-\d+$")  # what Predictor X's exports wrote before: not a bean id
JOURNAL_START, JOURNAL_END = "<!-- predictorx:journal -->", "<!-- /predictorx:journal -->"
_JOURNAL = re.compile(r"\n*" + re.escape(JOURNAL_START) + r".*?" + re.escape(JOURNAL_END) + r"\n?\Z", re.S)


class BeanFileError(ValueError):
    pass


@dataclass
class BeanFile:
    """One file as beans reads it; `status` is Predictor X's, `draft` says beans' was draft."""

    key: str
    path: str
    title: str
    status: str
    draft: bool = False
    type: str | None = None
    priority: str | None = None
    tags: list[str] = field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    order: str | None = None
    parent: str | None = None
    blocking: list[str] = field(default_factory=list)
    blocked_by: list[str] = field(default_factory=list)
    body: str = ""
    warnings: list[str] = field(default_factory=list)


# --- names -------------------------------------------------------------------------------------

def parse_filename(name: str) -> str:
    """The bean id of a file name (beans' ParseFilename: `id--slug.md`, `id.slug.md`, `id-slug.md`)."""
    stem = name.rsplit("/", 1)[-1].removesuffix(".md")
    if (i := stem.find("--")) > 0:
        return stem[:i]
    if (i := stem.find(".")) > 0:
        return stem[:i]
    return stem.split("-", 1)[0]


def slugify(title: str) -> str:
    """beans' Slugify: lower case, spaces and underscores to dashes, letters/digits/dashes kept, 50 bytes."""
    s = title.lower().replace(" ", "-").replace("_", "-")
    s = "".join(c for c in s if c == "-" or unicodedata.category(c)[0] == "L" or unicodedata.category(c) == "Nd")
    s = re.sub(r"-+", "-", s).strip("-")
    if len(s.encode()) > 50:
        s = s.encode()[:50].decode(errors="ignore").rstrip("-")
    return s


def filename(key: str, title: str) -> str:
    slug = slugify(title)
    return f"{key}--{slug}.md" if slug else f"{key}.md"


def check_path(name: str) -> str:
    """A file name under `.beans/` as sent for import: relative, no `..`, no dot-folder, `.md`."""
    parts = name.split("/")
    if (not name.endswith(".md") or name.startswith("/") or "\\" in name or "\0" in name
            or any(p in ("", ".", "..") or p.startswith(".") for p in parts[:-1]) or parts[-1] in ("", ".md")
            or len(name) > 500):
        raise BeanFileError("is not a bean file name (a relative path ending in .md, no '..' or dot-folder)")
    return name


# --- reading -----------------------------------------------------------------------------------

_NULLS = ("", "~", "null", "Null", "NULL")
_DEPTH = 20  # bean fields nest two deep; unknown ones may nest a little


def _plain(node: yaml.Node) -> Any:
    """A field's node as beans' Go structs read it: a scalar is its text (`order: 07` is "07", `title:
    yes` is "yes"), a list of scalars a list of texts; deeper values are kept out (unknown fields
    only), so an alias bomb costs nothing."""
    if isinstance(node, yaml.ScalarNode):
        return None if node.style is None and node.value in _NULLS else node.value  # Go: a null is ""
    if isinstance(node, yaml.SequenceNode) and all(isinstance(n, yaml.ScalarNode) for n in node.value):
        return [n.value for n in node.value]
    return node  # not a string nor a list of strings: refused if it is a field beans knows


def _yaml_fields(head: str) -> dict[str, Any]:
    """The front matter through PyYAML's safe loader, composed only: no object is constructed."""
    try:
        depth = 0
        for event in yaml.parse(head, Loader=yaml.SafeLoader):  # the parser is flat; the composer recurses
            depth += isinstance(event, yaml.CollectionStartEvent) - isinstance(event, yaml.CollectionEndEvent)
            if depth > _DEPTH:
                raise RecursionError
        root = yaml.compose(head, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        line = f" (line {where.line + 2})" if where is not None else ""
        raise BeanFileError(f"front matter is not valid YAML{line}: {getattr(e, 'problem', None) or e}") from None
    except RecursionError:
        raise BeanFileError("front matter nests too deep to be bean fields") from None
    if root is None:
        return {}
    if not isinstance(root, yaml.MappingNode) or not all(isinstance(k, yaml.ScalarNode) for k, _ in root.value):
        raise BeanFileError("front matter is not a YAML mapping of fields")
    return {k.value: _plain(v) for k, v in root.value}


def _front_matter(text: str) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i == len(lines) or lines[i].strip() != "---":
        raise BeanFileError("has no front matter: a bean file starts with a '---' block holding its title")
    for j in range(i + 1, len(lines)):
        if lines[j].strip() == "---":
            return "".join(lines[i + 1:j]), "".join(lines[j + 1:])
    raise BeanFileError("has no closing '---' after its front matter")


def _time(meta: dict, key: str) -> datetime | None:
    value = meta.get(key)
    if value in (None, ""):
        return None
    try:
        t = datetime.fromisoformat(str(value).replace("z", "Z").replace("t", "T"))
    except ValueError:
        raise BeanFileError(f"{key} {value!r} is not an RFC 3339 time") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc)


_MAX = {"type": 40, "priority": 40, "order": 100, "parent": 100, "status": 40}  # the bean table's columns


def _str(meta: dict, key: str) -> str | None:
    value = meta.get(key)
    if value is None or value == "":
        return None
    limit = _MAX.get(key, 500)
    if not isinstance(value, str) or len(value) > limit:
        raise BeanFileError(f"{key} must be a string of up to {limit} characters")
    return value


def _list(meta: dict, key: str) -> list[str]:
    value = meta.get(key)
    if value in (None, "", []):
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and 0 < len(v) <= 200 for v in value):
        raise BeanFileError(f"{key} must be a list of strings")
    return list(value)


def load(text: str, path: str) -> BeanFile:
    """One file (its path under `.beans/`, which names its id); BeanFileError with a sentence."""
    key = parse_filename(check_path(path))
    if not ID.match(key):
        raise BeanFileError(f"its name gives the bean id {key!r}, which is not an id (letters, digits, '-_.')")
    head, rest = _front_matter(text)
    meta = _yaml_fields(head)
    title = _str(meta, "title") or ""  # as written: a round trip keeps it byte for byte
    if not title.strip():
        raise BeanFileError("has no title")
    status = _str(meta, "status") or "todo"
    if status not in FROM_BEANS:
        raise BeanFileError(f"status {status!r} is not one of {', '.join(FROM_BEANS)}")
    bean = BeanFile(key=key, path=path, title=title, status=FROM_BEANS[status], draft=status == "draft",
                    type=_str(meta, "type"), priority=_str(meta, "priority"), order=_str(meta, "order"),
                    tags=_list(meta, "tags"), blocking=_list(meta, "blocking"), blocked_by=_list(meta, "blocked_by"),
                    created_at=_time(meta, "created_at"), updated_at=_time(meta, "updated_at"))
    unknown = sorted(str(k) for k in meta if k not in FIELDS)
    if unknown:
        bean.warnings.append(f"fields beans does not know were left out: {', '.join(unknown)}")
    parent = _str(meta, "parent")
    if parent and _OLD_ISSUE_PARENT.match(parent):
        bean.warnings.append(f"parent {parent!r} is an issue, not a bean: left out")
    elif parent:
        if not ID.match(parent):
            raise BeanFileError(f"parent {parent!r} is not a bean id")
        bean.parent = parent
    body = rest.removesuffix("\n")  # beans drops one trailing newline …
    body = body.removeprefix("\n")  # … and writes a blank line before the body: stored without it
    bean.body = _JOURNAL.sub("", body) if JOURNAL_START in body else body
    return bean


# --- writing -----------------------------------------------------------------------------------

_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_INT = re.compile(r"^([-+]?[0-9]+|0[xX][0-9a-fA-F]+|[-+]?0[oO][0-7]+|[-+]?0[bB][01]+)$")
_BASE60 = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
_STAMP = re.compile(r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]*)?"
                    r"(Z|[-+][0-9]{1,2}(:[0-9]{2})?)?)?$")
_NOT_STRINGS = {"", "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE", "<<",
                ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN",
                "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF"}


def _go_quotes(s: str) -> bool:
    """yaml.v3 double-quotes a string YAML would read as null, bool, number or time."""
    plain = s.replace("_", "")
    return (s in _NOT_STRINGS or bool(_INT.match(plain)) or bool(_FLOAT.match(plain)) or bool(_BASE60.match(s))
            or bool(_STAMP.match(s)))


def _scalar(s: str) -> yaml.ScalarEvent:
    style = "|" if "\n" in s else '"' if _go_quotes(s) else None
    return yaml.ScalarEvent(None, None, (True, True), s, style=style)


class _GoDumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)  # yaml.v3 indents a sequence under its key


def go_time(t: datetime) -> str:
    """Go's RFC3339Nano in UTC: fraction without trailing zeros, `Z`."""
    t = t.astimezone(timezone.utc)
    frac = f".{t.microsecond:06d}".rstrip("0") if t.microsecond else ""
    return t.strftime("%Y-%m-%dT%H:%M:%S") + frac + "Z"


def _front_matter_yaml(fields: dict[str, Any]) -> str:
    events: list[Any] = [yaml.StreamStartEvent(), yaml.DocumentStartEvent(explicit=False),
                         yaml.MappingStartEvent(None, None, True)]
    for key in FIELDS:
        value = fields.get(key)
        if key not in ("title", "status") and not value:
            continue
        events.append(_scalar(key))
        if key in LISTS:
            events.append(yaml.SequenceStartEvent(None, None, True))
            events.extend(_scalar(v) for v in value or [])
            events.append(yaml.SequenceEndEvent())
        else:
            events.append(yaml.ScalarEvent(None, None, (True, True), go_time(value)) if isinstance(value, datetime)
                          else _scalar(str(value or "")))
    events += [yaml.MappingEndEvent(), yaml.DocumentEndEvent(explicit=False), yaml.StreamEndEvent()]
    return yaml.emit(events, Dumper=_GoDumper, indent=4, width=1 << 30, allow_unicode=True)


def journal(notes: list[dict[str, Any]]) -> str:
    """A bean's notes as a block the next import leaves out of the body (so they travel, readable)."""
    lines = [f"- {n['at']} {n.get('by') or ''}: {n['text']}".replace("  ", " ") for n in notes]
    return "\n".join([JOURNAL_START, "## Journal (Predictor X; not imported back)", "", *lines, JOURNAL_END])


def dump(bean: dict[str, Any], notes: list[dict[str, Any]] | None = None) -> str:
    """The file beans would write for the bean (as_dict of service/beans.py); `notes` add a journal."""
    fields = dict(bean)
    fields["status"] = "draft" if bean.get("draft") and bean["status"] == "created" else TO_BEANS[bean["status"]]
    for key in ("created_at", "updated_at"):
        if isinstance(fields.get(key), str):
            fields[key] = datetime.fromisoformat(fields[key])
    body = bean.get("body") or ""
    if notes:
        body = (body.rstrip("\n") + "\n\n" if body.strip() else "") + journal(notes)
    out = "---\n" + f"# {bean['key']}\n" + _front_matter_yaml(fields) + "---\n"
    if not body:
        return out + "\n"
    return out + "\n" + body + ("" if body.endswith("\n") else "\n")
