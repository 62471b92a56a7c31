"""Reading in Chromium (issue 26 §8): Markdown in the issue and project descriptions and the run's
result, styled as content (bullets, read-only task boxes, tables in their own box, headings that
are not panel titles); command output as one console per stream, ANSI colours shown, folded with
a count and joined live; the diff's number columns narrow; the workflow diagram's labels readable
(contrast ≥ 4.5:1) in the light and the dark theme; times said the human way."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from predictorx.daemon.review import branch_review

pytestmark = pytest.mark.browser

BODY = ("## Plan\n\n- keep the API\n- [x] measure first\n- [ ] ship\n\n"
        "| step | owner |\n|---|---|\n| " + "measure-the-checkout-latency-" * 4 + " | claude |\n")


def test_descriptions_and_results_read_as_markdown_scoped_to_content(page, live):
    project = live.post("/api/projects", {"title": "Storefront", "description": "The **shop**.\n\n- web\n- api"})
    issue = live.post("/api/issues", {"title": "Make checkout faster", "project_id": project["id"], "body": BODY})
    live.post(f"/api/issues/{issue['number']}/comments", {"body": "One comment."})
    page.goto(f"/issues/{issue['number']}")
    body = page.locator("#issue-body")
    expect(body.locator("h2")).to_have_text("Plan")
    heading, panel_title = (page.evaluate("el => getComputedStyle(el).textTransform", el)
                            for el in (body.locator("h2").element_handle(), page.locator("#comments h2").element_handle()))
    assert heading == "none" and panel_title == "uppercase"  # an agent's heading is no panel title
    assert body.locator("ul").first.evaluate("el => getComputedStyle(el).listStyleType") == "disc"
    boxes = body.locator("li.task-item input[type=checkbox]")
    expect(boxes).to_have_count(2)
    expect(boxes.first).to_be_checked()
    expect(boxes.first).to_be_disabled()
    table = body.locator("table")
    assert table.evaluate("el => getComputedStyle(el).overflowX") == "auto"
    expect(page.locator("#comments .panel-head")).to_contain_text("1 comment")
    assert "1 comments" not in page.locator("#comments .panel-head").inner_text()

    page.goto(f"/projects/{project['id']}")
    expect(page.locator("#project-description strong")).to_have_text("shop")
    expect(page.locator("#project-description li")).to_have_count(2)


def _run(live, provider: str = "command") -> dict:
    live.register_local_daemon(providers=(provider,))
    live.post("/api/agents", {"name": "bot", "provider": provider, "command": ["true"]})
    live.post("/api/issues", {"title": "Run the tests", "assignee": "bot"})
    return live.daemon("/api/daemon/claim", {"limit": 1})["tasks"][0]["task"]


def _lines(live, task_id: str, seqs: range, text: str = "line {i} \x1b[32mok\x1b[0m") -> None:
    live.daemon(f"/api/tasks/{task_id}/messages", {"messages": [
        {"seq": i, "kind": "text", "content": {"text": text.format(i=i), "stream": "stdout"}} for i in seqs]})


def test_command_output_reads_as_one_console_folded_with_a_count_and_joined_live(page, live):
    task = _run(live)
    live.daemon(f"/api/tasks/{task['id']}/messages", {"messages": [
        {"seq": 0, "kind": "system", "content": {"event": "init", "model": "m"}}]})
    _lines(live, task["id"], range(1, 41))  # the page opens on the latest 50 messages
    page.goto(f"/tasks/{task['id']}")
    consoles = page.locator("#messages li.msg-console")
    expect(consoles).to_have_count(1)
    block = consoles.first
    assert block.bounding_box()["height"] < 500  # 40 lines were 40 boxes of ~64 px
    green = block.locator(".a-f2").last
    expect(green).to_have_text("ok")
    assert green.evaluate("el => getComputedStyle(el).color") != block.evaluate("el => getComputedStyle(el).color")
    button = block.locator("button.console-all")
    expect(button).to_have_text("Show all 40 lines")
    expect(button).to_have_attribute("aria-expanded", "false")
    expect(block.get_by_text("line 40 ", exact=False)).to_be_visible()
    expect(block.get_by_text("line 1 ", exact=False).first).to_be_hidden()
    button.click()
    expect(button).to_have_attribute("aria-expanded", "true")
    expect(button).to_have_text("Show the last 20 lines")
    expect(block.locator(".cl").first).to_be_visible()
    button.click()
    expect(block.locator(".cl").first).to_be_hidden()

    # Lines that arrive while the page is open join the same block; an injection stays text.
    page.wait_for_function("document.body.classList.contains('live-on')")
    _lines(live, task["id"], range(41, 51), "late {i} <img src=x onerror=window.pwned=1>")
    expect(button).to_have_text("Show all 50 lines")
    expect(consoles).to_have_count(1)
    assert block.get_attribute("data-seq") == "50"
    expect(block).to_contain_text("late 50 <img src=x onerror=window.pwned=1>")
    assert page.evaluate("window.pwned === undefined")

    live.daemon(f"/api/daemon/tasks/{task['id']}/finish", {"status": "completed", "result": "Done:\n\n- 50 lines\n- all **green**"})
    expect(page.locator("#run-result li")).to_have_count(2)
    expect(page.locator("#run-result strong")).to_have_text("green")


def test_diff_number_columns_stay_narrow(page, live, branch_repo):
    live.register_local_daemon()
    live.post("/api/agents", {"name": "claude", "provider": "claude"})
    live.post("/api/issues", {"title": "Add tax", "assignee": "claude"})
    task = live.daemon("/api/daemon/claim", {"limit": 1})["tasks"][0]["task"]
    repo, base, branch = branch_repo
    review = branch_review(repo, base, branch, mode="worktree", repo_label=str(repo))
    review["head"] = base
    live.daemon(f"/api/daemon/tasks/{task['id']}/finish", {"status": "completed", "branch_name": branch, "review": review})
    for view in ("unified", "split"):
        page.goto(f"/tasks/{task['id']}?view={view}")
        table = page.locator("table.diff").first
        width = table.bounding_box()["width"]
        numbers = table.locator("tr:not(.hunk) td.ln").first.bounding_box()["width"]
        code = table.locator("tr:not(.hunk) td.code").first.bounding_box()["width"]
        assert numbers < 70, (view, numbers)
        assert code > width * (0.8 if view == "unified" else 0.4), (view, code, width)


CONTRAST = """() => {
  const rgb = c => { const m = c.match(/[\\d.]+/g).map(Number); return m.slice(0, 3); };
  const lum = c => { const [r, g, b] = rgb(c).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
                     return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const svg = document.querySelector('#workflows svg.bpmn');
  const shapes = [...svg.querySelectorAll('rect, circle, polygon')].filter(s => getComputedStyle(s).fill !== 'none');
  const out = [];
  const labels = [...svg.querySelectorAll('text'), ...svg.querySelectorAll('foreignObject div')];
  for (const el of labels) {
    // the label's centre in the drawing's coordinates, and the topmost filled shape under it
    const box = (el.tagName === 'text' ? el : el.closest('foreignObject')).getBBox();
    const x = box.x + box.width / 2, y = box.y + box.height / 2;
    const under = shapes.filter(s => { const b = s.getBBox(); return x >= b.x && x <= b.x + b.width && y >= b.y && y <= b.y + b.height; });
    const behind = under[under.length - 1];
    const ink = el.tagName === 'text' ? getComputedStyle(el).fill : getComputedStyle(el).color;
    if (!behind) { out.push({text: el.textContent, ratio: 0, ink, fill: 'nothing'}); continue; }
    out.push({text: el.textContent, ratio: ratio(ink, getComputedStyle(behind).fill), ink, fill: getComputedStyle(behind).fill});
  }
  return out;
}"""


def test_the_workflow_diagram_is_readable_in_both_themes(page, live, axe):
    live.register_local_daemon(capabilities=(), providers=("command",))
    live.post("/api/agents", {"name": "bot", "provider": "command", "command": ["true"]})
    n = live.post("/api/issues", {"title": "Add a CSV export command to the CLI", "assignee": "bot"})["number"]
    page.goto(f"/issues/{n}")
    page.locator("#workflows svg.bpmn").wait_for()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        labels = page.evaluate(CONTRAST)
        assert len(labels) > 10
        low = [f"{x['text']!r}: {x['ratio']:.2f} ({x.get('ink')} on {x.get('fill')})" for x in labels if x["ratio"] < 4.5]
        assert not low, f"{scheme}: " + "; ".join(low)
        background = page.evaluate("getComputedStyle(document.querySelector('#workflows svg.bpmn .lane')).fill")
        dark = sum(map(float, re.findall(r"[\d.]+", background)[:3])) < 200
        assert dark == (scheme == "dark"), background
        assert not (found := axe(page)), found
    # On a phone the diagram and the history scroll in their own boxes, not the page
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    page.locator("#workflows svg.bpmn").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
