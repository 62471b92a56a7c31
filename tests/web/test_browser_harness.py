"""The issue page's Workflows panel in Chromium (issue 12, R-HAR-3…5 on the web): it shows the
instance, its enabled step with the step's lane and role, and the history; a person takes a
people-lane step and passes a judgement gate from the page (a gate without a reason is refused
with the engine's sentence), an agent-lane step offers no form; axe-core finds no serious or
critical violation, in the light and the dark theme."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def _panel(page, n: int):
    page.goto(f"/issues/{n}")
    section = page.locator('#workflows section.workflow[data-process="feature-request"]')
    section.wait_for()
    return section


def _axe_both_themes(page, axe) -> list[str]:
    found = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        found += [f"{scheme}: {v}" for v in axe(page)]
    page.emulate_media(color_scheme="light")
    return found


def test_a_person_takes_people_lane_steps_from_the_workflows_panel(page, live, axe):
    live.register_local_daemon(capabilities=(), providers=("command",))
    live.post("/api/agents", {"name": "bot", "provider": "command", "command": ["true"]})
    n = live.post("/api/issues", {"title": "Add a CSV export command to the CLI", "assignee": "bot"})["number"]
    agent_token = live.daemon("/api/daemon/claim", {"limit": 1})["tasks"][0]["token"]

    # the agent's step: shown with its lane, no form for a person
    wf = _panel(page, n)
    step = wf.locator('li.enabled-step[data-node="capture"]')
    assert step.locator(".lane").inner_text() == "Agent" and step.locator(".role").inner_text() == "agent"
    assert "Waiting for agent" in step.inner_text() and step.locator("form").count() == 0
    assert "No steps yet." in wf.locator("table.history").inner_text()

    for node in ("capture", "requirements"):
        live.post(f"/api/issues/{n}/workflows/feature-request/steps", {"step": node}, token=agent_token)

    # the sign-off: the stakeholder lane, which the owner holds; the history shows the agent's steps
    wf = _panel(page, n)
    step = wf.locator('li.enabled-step[data-node="signoff"]')
    assert step.locator(".lane").inner_text() == "Stakeholder"
    assert step.locator(".role").inner_text() == "stakeholder" and "strict policy" in step.inner_text()
    rows = wf.locator("table.history tbody tr")
    assert [rows.nth(i).locator("td").nth(1).inner_text() for i in range(rows.count())] == ["capture", "requirements"]
    assert rows.nth(0).locator("td").nth(2).inner_text() == "bot"
    assert not (found := _axe_both_themes(page, axe)), "\n".join(found)

    step.get_by_role("button", name="Complete step signoff").click()
    gate = page.locator('#workflows li.enabled-step[data-node="approved"]')
    gate.wait_for()
    assert gate.locator(".lane").inner_text() == "Stakeholder"

    # a judgement without a reason: the engine's sentence, next to the panel, nothing taken
    gate.get_by_label("Outcome").select_option("approved")
    gate.get_by_role("button", name="Pass gate approved").click()
    alert = page.locator("#workflows [role=alert]")
    alert.wait_for()
    assert "needs a reason" in alert.inner_text()
    assert not (found := _axe_both_themes(page, axe)), "\n".join(found)

    gate = page.locator('#workflows li.enabled-step[data-node="approved"]')
    gate.get_by_label("Outcome").select_option("approved")
    gate.get_by_label("Reason (a judgement needs one)").fill("scope agreed; comma as delimiter")
    # a live event while the person types (any task's status change refreshes the panel) leaves
    # what they typed in place
    skipped = page.evaluate("""() => new Promise(resolve => {
      document.body.addEventListener('htmx:confirm', function seen(ev) {
        const trigger = ev.detail.triggeringEvent;
        if (ev.detail.elt.id !== 'workflows' || !trigger || trigger.type !== 'px-refresh') return;
        document.body.removeEventListener('htmx:confirm', seen);
        resolve(ev.defaultPrevented);  // px.js has decided by now: it listens first
      });
      htmx.trigger(document.querySelector('#runs'), 'px-refresh');
    })""")
    assert skipped, "the live refresh replaced the panel the person is filling in"
    assert gate.get_by_label("Reason (a judgement needs one)").input_value() == "scope agreed; comma as delimiter"
    gate.get_by_role("button", name="Pass gate approved").click()
    nxt = page.locator('#workflows li.enabled-step[data-node="plan-beans"]')
    nxt.wait_for()
    assert "Waiting for agent" in nxt.inner_text() and page.locator("#workflows [role=alert]").count() == 0

    shown = live.get(f"/api/issues/{n}/workflows/feature-request")
    done = [(h["node_id"], h["actor_type"], h["outcome"], h["reason"]) for h in shown["history"] if h["status"] == "done"]
    assert done == [("capture", "agent", None, None), ("requirements", "agent", None, None),
                    ("signoff", "person", None, None),
                    ("approved", "person", "approved", "scope agreed; comma as delimiter")]
    rows = page.locator("#workflows table.history tbody tr")
    assert rows.count() == 4 and "scope agreed" in rows.nth(3).inner_text()
