"""Instances persisted on SQLite and PostgreSQL: idempotent start, refusals that change nothing,
strict policy, beans driven by steps, the history (R-HAR-3, R-HAR-5, R-HAR-6)."""

from __future__ import annotations

import pytest

from predictorx.service import beans
from predictorx.service import workflow_instances as instances
from predictorx.service.auth import bootstrap_owner
from predictorx.service.issues import create_issue
from predictorx.service.workflow_instances import Completion, StepForbidden
from predictorx.workflows.engine import Actor


@pytest.fixture
def issue_id(db):
    with db.write() as s:
        _, ws, user = bootstrap_owner(s)
        return create_issue(s, ws.id, user.id, title="Add CSV export").id


def _issue(s, issue_id):
    from predictorx.store.schema import Issue
    return s.get(Issue, issue_id)


def test_start_twice_is_one_instance_and_state_survives_a_reload(db, lib, issue_id, agent, person):
    with db.write() as s:
        inst, created = instances.start(s, lib, _issue(s, issue_id), "change")
        assert created
        beans.create(s, _issue(s, issue_id), "Export endpoint")
    with db.write() as s:
        again, created = instances.start(s, lib, _issue(s, issue_id), "change")
        assert not created and again.id == inst.id == instances.instance_id(issue_id, "change")
        instances.complete(s, lib, _issue(s, issue_id), again, agent,
                           Completion("draft", produced={"bean": "Export endpoint"}))
    with db.read() as s:
        inst = instances.get_instance(s, _issue(s, issue_id), "change")
        assert [st["node"] for st in instances.enabled_steps(lib, inst)] == ["signoff"]
        assert inst.version == 2 and inst.step_count == 1
        bean = beans.get(s, _issue(s, issue_id), "Export endpoint")
        assert bean.status == "in-progress"  # the draft step claims it


def test_refusals_change_nothing_and_say_what_is_enabled(db, lib, issue_id, agent, person):
    with db.write() as s:
        inst, _ = instances.start(s, lib, _issue(s, issue_id), "change")
        beans.create(s, _issue(s, issue_id), "b")
        before = (inst.state, inst.version)
        with pytest.raises(StepForbidden, match=r"step 'signoff' is not enabled now; enabled: step 'draft' \(Draft requirements, role agent\)"):
            instances.complete(s, lib, _issue(s, issue_id), inst, person, Completion("signoff"))
        with pytest.raises(StepForbidden, match="is for role agent; person ann holds reviewer, stakeholder"):
            instances.complete(s, lib, _issue(s, issue_id), inst, person, Completion("draft", produced={"bean": "b"}))
        assert (inst.state, inst.version) == before
        instances.complete(s, lib, _issue(s, issue_id), inst, agent, Completion("draft", produced={"bean": "b"}))
        with pytest.raises(StepForbidden, match="is for role stakeholder; agent bot holds agent"):
            instances.complete(s, lib, _issue(s, issue_id), inst, agent, Completion("signoff"))
        instances.complete(s, lib, _issue(s, issue_id), inst, person, Completion("signoff"))
        with pytest.raises(StepForbidden, match="needs a reason"):
            instances.complete(s, lib, _issue(s, issue_id), inst, person, Completion("accept", outcome="yes"))
        instances.complete(s, lib, _issue(s, issue_id), inst, person,
                           Completion("accept", outcome="yes", reason="scope agreed in the meeting"))
        with pytest.raises(StepForbidden, match="an outcome passed by hand is refused"):
            instances.complete(s, lib, _issue(s, issue_id), inst, agent, Completion("size", outcome="small"))
        row, enabled = instances.complete(s, lib, _issue(s, issue_id), inst, agent,
                                          Completion("size", facts={"files_changed": 2, "changes_api": False}))
        assert row.outcome == "small" and row.computed and [e["node"] for e in enabled] == ["implement"]
        with pytest.raises(StepForbidden, match="pass branch, commit in produced"):
            instances.complete(s, lib, _issue(s, issue_id), inst, agent, Completion("implement", produced={"bean": "b"}))
        instances.complete(s, lib, _issue(s, issue_id), inst, agent,
                           Completion("implement", produced={"bean": "b", "branch": "agent/x", "commit": "abc123"}))
        assert inst.status == "completed"
        assert beans.get(s, _issue(s, issue_id), "b").status == "resolved"  # resolve once the instance completed
        hist = instances.history(s, inst)
        assert [h.node_id for h in hist] == ["draft", "signoff", "accept", "size", "implement"]
        assert hist[2].reason == "scope agreed in the meeting" and all(h.verdict == "permit" for h in hist)


def test_strict_policy_deny_stops_the_step_and_the_attempt_is_recorded(db, lib, issue_id):
    rogue = Actor("agent", "a-9", "rogue", frozenset({"agent"}))
    with db.write() as s:
        inst, _ = instances.start(s, lib, _issue(s, issue_id), "change")
        beans.create(s, _issue(s, issue_id), "b")
        with pytest.raises(StepForbidden, match="under strict policy and denied by https://example.org/policies/team prohibition 2") as e:
            instances.complete(s, lib, _issue(s, issue_id), inst, rogue, Completion("draft", produced={"bean": "b"}))
        assert inst.version == 1
    with db.write() as s:
        instances.record_refusal(s, e.value.record)
    with db.read() as s:
        inst = instances.get_instance(s, _issue(s, issue_id), "change")
        [row] = instances.history(s, inst)
        assert (row.status, row.verdict, row.actor_name) == ("refused", "deny", "rogue")
        assert [st["node"] for st in instances.enabled_steps(lib, inst)] == ["draft"]


def test_beans_idempotent_create_and_etag(db, issue_id):
    with db.write() as s:
        a, created_a = beans.create(s, _issue(s, issue_id), "  Export   endpoint ")
        b, created_b = beans.create(s, _issue(s, issue_id), "Export endpoint")
        assert created_a and not created_b and a.id == b.id
        beans.claim(s, a, "bot", if_version=1)
        with pytest.raises(Exception, match="at version 2, not 1"):
            beans.note(s, a, "stale write", "bot", if_version=1)
        with pytest.raises(Exception, match="needs a reason"):
            beans.scrap(s, a, " ", "bot")
        beans.scrap(s, a, "superseded by #3", "ann", if_version=2)
        assert a.status == "scrapped" and a.version == 3
