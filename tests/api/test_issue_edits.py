"""Editing an issue over the API (issue 26 §1, §4): each field on its own with the version the
editor saw — a field someone changed since answers 409 with a sentence, the value now stored and
who stored it, and nothing is saved —; assigning people as well as agents; deleting (owners and
admins, never under a running run, audited, what went with it in words)."""

from __future__ import annotations

from predictorx.store.schema import AuditEvent, Comment, Issue, Task


def _ws(api) -> str:
    return api.get("/api/workspaces").json()[0]["id"]


def _issue(api, **kw) -> dict:
    r = api.post("/api/issues", json={"title": "Fix the cart", **kw})
    assert r.status_code == 201, r.text
    return r.json()


def test_a_patch_changes_only_its_field_and_a_stale_one_is_refused_with_who_and_what(api, db):
    issue = _issue(api, status="todo", priority="none")
    seen = issue["version"]  # both tabs loaded the issue at this version
    a = api.patch(f"/api/issues/{issue['number']}", json={"status": "done", "version": seen})
    assert a.status_code == 200 and a.json()["status"] == "done" and a.json()["version"] == seen + 1

    # Tab B, still at the old version, changes another field: saved, and the status stays done.
    b = api.patch(f"/api/issues/{issue['number']}", json={"priority": "high", "version": seen})
    assert b.status_code == 200, b.text
    assert b.json()["status"] == "done" and b.json()["priority"] == "high" and b.json()["version"] == seen + 2

    # Tab B changes the status it saw as "todo": refused, with the other value and who set it.
    c = api.patch(f"/api/issues/{issue['number']}", json={"status": "in_progress", "version": seen})
    assert c.status_code == 409
    answer = c.json()
    assert answer["field"] == "status" and answer["current"] == "done" and answer["by"] == "owner"
    assert answer["version"] == seen + 2
    assert "owner changed the status to “done” after you loaded this issue" in answer["detail"]
    with db.read() as s:  # nothing changed
        stored = s.get(Issue, issue["id"])
        assert (stored.status, stored.priority, stored.version) == ("done", "high", seen + 2)

    # The same value twice is no conflict; the current version replaces it on purpose.
    assert api.patch(f"/api/issues/{issue['number']}", json={"status": "done", "version": seen}).status_code == 200
    again = api.patch(f"/api/issues/{issue['number']}", json={"status": "in_progress", "version": answer["version"]})
    assert again.status_code == 200 and again.json()["status"] == "in_progress"
    # Without a version (the CLI's `issue status`, older clients) the change is made as before.
    assert api.patch(f"/api/issues/{issue['number']}", json={"status": "todo"}).json()["status"] == "todo"


def test_title_and_description_are_edited_and_checked_like_the_other_fields(api):
    issue = _issue(api, body="first")
    n, seen = issue["number"], issue["version"]
    r = api.patch(f"/api/issues/{n}", json={"title": "Fix the cart totals", "body": "# Steps\n\n- one", "version": seen})
    assert r.status_code == 200 and r.json()["title"] == "Fix the cart totals" and r.json()["body"].startswith("# Steps")
    stale = api.patch(f"/api/issues/{n}", json={"body": "mine", "version": seen})
    assert stale.status_code == 409 and stale.json()["field"] == "body" and "a new text" in stale.json()["detail"]
    assert api.patch(f"/api/issues/{n}", json={"title": "   "}).status_code == 422
    assert api.patch(f"/api/issues/{n}", json={"version": 0}).status_code == 422


def test_members_are_assigned_as_well_as_agents_and_a_stale_assignment_is_refused(api):
    ws = _ws(api)
    mia = api.post(f"/api/workspaces/{ws}/members", json={"name": "mia", "role": "member"}).json()
    api.post("/api/agents", json={"name": "claude-1", "provider": "claude"})
    issue = _issue(api)
    seen = issue["version"]
    person = api.post(f"/api/issues/{issue['number']}/assign", json={"assignee": mia["user_id"], "version": seen})
    assert person.status_code == 200, person.text
    assert person.json()["assignee_type"] == "member" and person.json()["assignee_name"] == "mia"
    assert person.json()["task"] is None  # a person gets no run
    stale = api.post(f"/api/issues/{issue['number']}/assign", json={"assignee": "claude-1", "version": seen})
    assert stale.status_code == 409
    assert stale.json()["field"] == "assignee" and stale.json()["current"] == "mia"
    assert "owner changed the assignee to “mia”" in stale.json()["detail"]
    fresh = api.post(f"/api/issues/{issue['number']}/assign", json={"assignee": "claude-1", "version": stale.json()["version"]})
    assert fresh.status_code == 200 and fresh.json()["task"]["status"] == "queued"


def test_only_owners_and_admins_delete_never_under_a_running_run_and_it_is_audited(api, db):
    ws = _ws(api)
    member = api.as_(api.post(f"/api/workspaces/{ws}/members", json={"name": "mia", "role": "member"}).json()["token"])
    admin = api.as_(api.post(f"/api/workspaces/{ws}/members", json={"name": "ada", "role": "admin"}).json()["token"])
    api.post("/api/agents", json={"name": "claude-1", "provider": "claude"})
    issue = _issue(api, assignee="claude-1")
    n = issue["number"]
    api.post(f"/api/issues/{n}/comments", json={"body": "one"})
    api.post(f"/api/issues/{n}/comments", json={"body": "two"})

    refused = member.delete(f"/api/issues/{n}")
    assert refused.status_code == 403 and "admin or owner" in refused.json()["detail"]
    busy = admin.delete(f"/api/issues/{n}")
    assert busy.status_code == 409 and "cancel it first" in busy.json()["detail"]

    with db.write() as s:  # the run ends (cancelled): the issue may go now
        for t in s.query(Task).filter(Task.issue_id == issue["id"]):
            t.status, t.active_key = "cancelled", None
    done = admin.delete(f"/api/issues/{n}")
    assert done.status_code == 200, done.text
    assert done.json()["deleted"] == {"comments": 2, "runs": 1, "pull_requests": 0, "workflows": 0}
    assert done.json()["what"] == "2 comments and 1 run and its messages"
    assert api.get(f"/api/issues/{n}").status_code == 404
    with db.read() as s:
        assert s.query(Comment).count() == 0 and s.query(Task).count() == 0
        event = s.query(AuditEvent).filter(AuditEvent.action == "issue.delete").one()
        assert event.target == f"#{n} Fix the cart" and event.detail["comments"] == 2


def test_the_apis_404_keeps_its_cli_advice(api):
    r = api.get("/api/issues/999")
    assert r.status_code == 404 and "`predictorx issue list`" in r.json()["detail"]
