"""Reading (issue 26 §8), without a browser: Markdown task lists through the safe renderer, ANSI
output as escaped spans, a run's output lines as console blocks, plurals and human times — and an
injection in Markdown or ANSI stays text."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

from predictorx import richtext
from predictorx.server.web import console
from predictorx.server.web.render import ago, iso, plural, render_template


def test_task_lists_become_read_only_checkboxes_and_nothing_else_becomes_an_input():
    html = richtext.render("- [ ] write it\n- [x] test it\n- plain\n\nnot [ ] a task")
    assert '<li class="task-item"><input type="checkbox" disabled aria-label="not done"> write it</li>' in html
    assert '<input type="checkbox" disabled checked aria-label="done"> test it' in html
    assert "<li>plain</li>" in html and html.count("<input") == 2 and "not [ ] a task" in html
    loose = richtext.render("- [x] one\n\n- [ ] two")
    assert loose.count('<li class="task-item">') == 2 and loose.count("<input") == 2


def test_markdown_injection_stays_text():
    html = richtext.render('- [ ] <input type="checkbox" onclick="alert(1)"> <script>alert(2)</script>\n\n'
                           '<li>[x] raw</li>\n\n[x](javascript:alert(3)) <img src=x onerror=alert(4)>')
    assert "<script>" not in html and "<img" not in html and "href=\"javascript" not in html
    assert html.count("<input") == 1  # the task box added by the renderer, not the one in the text
    assert "&lt;input" in html and "&lt;li&gt;[x] raw" in html


def test_ansi_colours_become_classes_and_everything_else_is_text():
    html = str(console.ansi_html("\x1b[1;31mFAIL\x1b[0m tests/x.py \x1b[32mok\x1b[39m plain"))
    assert html == '<span class="a-f1 a-bold">FAIL</span> tests/x.py <span class="a-f2">ok</span> plain'
    bright = str(console.ansi_html("\x1b[92;44mhi\x1b[38;5;208m256\x1b[38;2;1;2;3mrgb\x1b[m"))
    assert bright == '<span class="a-f10 a-b4">hi</span><span class="a-b4">256</span><span class="a-b4">rgb</span>'


def test_ansi_injection_and_terminal_tricks_stay_text():
    evil = ("\x1b[31m<script>alert(1)</script>\x1b[0m \x1b]8;;javascript:alert(2)\x07link\x1b]8;;\x07 "
            "\x1b]0;title\x07\x1b[2J\x1b[10;5H\x1b[31;\"><img src=x onerror=alert(3)>m done\x1b")
    html = str(console.ansi_html(evil))
    assert "<script" not in html and "<img" not in html and "javascript" not in html and "\x1b" not in html
    assert '<span class="a-f1">&lt;script&gt;alert(1)&lt;/script&gt;</span>' in html
    assert "link" in html and "title" not in html and "&lt;img src=x onerror=alert(3)&gt;m done" in html
    assert str(console.ansi_html("downloading 10%\rdownloading 100%")) == "downloading 100%"
    assert console.plain("\x1b[31mFAIL\x1b[0m x\x07 \x1b]0;t\x07ok") == "FAIL x ok"  # a summary's preview


def _msg(seq: int, kind: str, content: dict) -> SimpleNamespace:
    return SimpleNamespace(seq=seq, kind=kind, content=content)


def test_consecutive_output_lines_are_one_console_block():
    messages = [_msg(0, "system", {"event": "init", "model": "m"}),
                *[_msg(i, "text", {"text": f"line {i}", "stream": "stdout"}) for i in range(1, 31)],
                _msg(31, "text", {"text": "The answer."}),
                _msg(32, "system", {"event": "output", "text": "not json"}),
                _msg(33, "text", {"text": "x" * (console.LINE_MAX_CHARS + 5), "stream": "stdout"})]
    blocks = console.blocks(messages)
    assert [b.kind for b in blocks] == ["system", "console", "text", "console"]
    first = blocks[1]
    assert (first.first_seq, first.seq, len(first.lines), first.folded) == (1, 30, 30, True)
    assert blocks[3].lines[0] == "not json" and blocks[3].lines[1].endswith("(5 more characters in the run's raw log)")
    assert not blocks[3].folded


def test_the_messages_template_draws_one_console_with_a_count():
    messages = [_msg(i, "text", {"text": f"\x1b[33mline {i}\x1b[0m <b>", "stream": "stdout"}) for i in range(25)]
    html = render_template("_messages.html", {"messages": messages, "task": SimpleNamespace(id="t"), "earlier": False})
    assert html.count("<li") == 1 and 'data-seq="24"' in html and 'data-first-seq="0"' in html
    assert 'class="console folded"' in html and "Show all 25 lines" in html
    assert html.count('<span class="cl">') == 25 and '<span class="a-f3">line 7</span> &lt;b&gt;' in html


def test_plurals_and_human_times():
    assert (plural(1, "comment"), plural(2, "comment"), plural(0, "run"), plural(1200, "run")) == \
        ("1 comment", "2 comments", "0 runs", "1,200 runs")
    now = datetime.now(timezone.utc)
    assert ago(now - timedelta(minutes=3)) == "3 min ago" and ago(now - timedelta(seconds=5)) == "just now"
    assert ago((now - timedelta(hours=2)).isoformat()) == "2 h ago"  # agents-room's ISO texts too
    assert ago((now + timedelta(minutes=10, seconds=30)).isoformat().replace("+00:00", "Z")) == "in 10 min"
    assert ago("not a time") == "not a time" and iso("not a time") == "not a time"
    assert iso(datetime(2026, 12, 5, 17, 42, 1, 5)) == "2026-12-05T17:42:01+00:00"
    assert iso("2026-12-05T18:42:01+01:00") == "2026-12-05T17:42:01+00:00"
