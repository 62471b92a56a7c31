"""States that tell the truth and messages a person can read (issue 13 §3, §5), over HTTP:
an issue goes back where it was when its only run fails or is cancelled; a finished task has no
wait reason; a task on an unknown daemon says "unknown machine"; Markdown is rendered and
sanitised; tool calls show their shell command or JSON; the init line is short; long output folds."""

from __future__ import annotations

import uuid

from predictorx.store.schema import Task

def _setup(client, token: str) -> tuple[dict, dict, str]:
    auth = {"Authorization": f"Bearer {token}"}
    daemon_id = str(uuid.uuid4())
    r = client.post("/api/daemon/register", headers=auth, json={
        "daemon_id": daemon_id, "name": "box", "runtimes": [{"provider": "claude"}]})
    dauth = {"Authorization": f"Bearer {r.json()['token']}"}
    client.post("/api/agents", json={"name": "claude", "provider": "claude"}, headers=auth)
    issue = client.post("/api/issues", json={"title": "T", "assignee": "claude"}, headers=auth).json()
    client.patch(f"/api/issues/{issue['number']}", json={"status": "todo"}, headers=auth)
    task = client.post("/api/daemon/claim", json={"limit": 1}, headers=dauth).json()["tasks"][0]["task"]
    return auth, dauth, task["id"]


def _issue_status(client, auth, number: int) -> str:
    return client.get(f"/api/issues/{number}", headers=auth).json()["status"]


def test_an_issue_goes_back_when_its_only_run_fails_or_is_cancelled(client, token):
    auth, dauth, task_id = _setup(client, token)
    client.post(f"/api/daemon/tasks/{task_id}/status", json={"status": "running"}, headers=dauth)
    assert _issue_status(client, auth, 1) == "in_progress"
    client.post(f"/api/daemon/tasks/{task_id}/finish", json={"status": "failed", "failure_reason": "boom"},
                headers=dauth)
    assert _issue_status(client, auth, 1) == "todo"

    # Run again from the page, start it, cancel it: back to todo again.
    r = client.post(f"/tasks/{task_id}/rerun")
    assert r.status_code == 303
    again = r.headers["location"].rsplit("/", 1)[-1]
    assert again != task_id
    client.post("/api/daemon/claim", json={"limit": 1}, headers=dauth)
    client.post(f"/api/daemon/tasks/{again}/status", json={"status": "running"}, headers=dauth)
    assert _issue_status(client, auth, 1) == "in_progress"
    assert client.post(f"/tasks/{again}/cancel").status_code in (200, 303)
    assert _issue_status(client, auth, 1) == "todo"


def test_a_person_s_own_status_change_is_kept(client, token):
    auth, dauth, task_id = _setup(client, token)
    client.post(f"/api/daemon/tasks/{task_id}/status", json={"status": "running"}, headers=dauth)
    client.patch("/api/issues/1", json={"status": "in_review"}, headers=auth)
    client.post(f"/api/daemon/tasks/{task_id}/finish", json={"status": "failed"}, headers=dauth)
    assert _issue_status(client, auth, 1) == "in_review"


def test_a_cancelled_waiting_task_shows_no_wait_reason(client, token, web_db):
    auth, dauth, task_id = _setup(client, token)
    client.post(f"/api/daemon/tasks/{task_id}/status", headers=dauth,
                json={"status": "waiting_local_directory", "wait_reason": "the folder is busy with run 1"})
    assert "the folder is busy" in client.get(f"/tasks/{task_id}").text
    client.post(f"/api/tasks/{task_id}/cancel", headers=auth)
    assert client.get(f"/api/tasks/{task_id}", headers=auth).json().get("wait_reason") in (None, "")
    assert "the folder is busy" not in client.get(f"/tasks/{task_id}").text


def test_a_task_on_an_unknown_daemon_says_unknown_machine(client, token, web_db):
    _, _, task_id = _setup(client, token)
    with web_db.write() as s:
        s.get(Task, task_id).daemon_id = str(uuid.uuid4())
    page = client.get(f"/tasks/{task_id}").text
    assert 'id="unknown-daemon"' in page and "unknown machine" in page


def test_messages_read_like_a_conversation(client, token):
    _, dauth, task_id = _setup(client, token)
    long_output = "\n".join(f"line {i}" for i in range(40))
    msgs = [
        {"seq": 0, "kind": "system", "content": {"event": "init", "session_id": "s1", "model": None, "cwd": None}},
        {"seq": 1, "kind": "text", "content": {"text": "**Done**: see [docs](https://example.com) <script>alert(1)</script>"
                                                        " [x](javascript:alert(2))\n\n- one\n- two"}},
        {"seq": 2, "kind": "tool_use", "content": {"id": "t1", "name": "Bash", "input": {"command": "pytest -q tests/"}}},
        {"seq": 3, "kind": "tool_use", "content": {"id": "t2", "name": "Edit", "input": {"file_path": "a.py", "old": "x"}}},
        {"seq": 4, "kind": "tool_result", "content": {"tool_use_id": "t1", "output": long_output, "is_error": False}},
    ]
    client.post(f"/api/tasks/{task_id}/messages", json={"messages": msgs}, headers=dauth)
    page = client.get(f"/tasks/{task_id}").text
    assert "Session started" in page and "model: null" not in page and "session_id" not in page
    assert "<strong>Done</strong>" in page and '<a href="https://example.com"' in page and "<li>one</li>" in page
    assert "<script>alert(1)" not in page and 'href="javascript' not in page
    assert '<span class="prompt" aria-hidden="true">$ </span>pytest -q tests/' in page
    assert "&#34;file_path&#34;: &#34;a.py&#34;" in page or '"file_path": "a.py"' in page.replace("&#34;", '"')
    # The 40-line output starts folded (no `open`), with its line count and its first lines only;
    # the whole comes when the fold is opened.
    result = page.split('data-kind="tool_result"', 1)[1].split("</li>", 1)[0]
    assert '<details class="result" data-full>' in result and "40 lines" in result
    assert "line 11</pre>" in result and "line 12" not in result
    whole = client.get(f"/tasks/{task_id}/messages/4/full")
    assert whole.status_code == 200 and whole.text.count("line ") == 40 and "line 39</pre>" in whole.text
    assert client.get(f"/tasks/{task_id}/messages/99/full").status_code == 404
    assert client.get(f"/tasks/{task_id}/messages/-1/full").status_code in (400, 422)


def test_a_local_folder_of_an_unknown_daemon_says_unknown_machine(client, token, web_db):
    from predictorx.store.schema import ProjectResource

    auth = {"Authorization": f"Bearer {token}"}
    project = client.post("/api/projects", json={"title": "P"}, headers=auth).json()
    daemon_id = str(uuid.uuid4())
    r = client.post("/api/daemon/register", headers=auth, json={"daemon_id": daemon_id, "name": "laptop",
                                                                "runtimes": [{"provider": "claude"}]})
    assert r.status_code == 200
    with web_db.write() as s:
        s.add(ProjectResource(project_id=project["id"], resource_type="local_directory", position=0, label="mine",
                              resource_ref={"local_path": "/srv/a", "daemon_id": daemon_id, "execution_mode": "in_place"}))
        s.add(ProjectResource(project_id=project["id"], resource_type="local_directory", position=1, label="ghost",
                              resource_ref={"local_path": "/srv/b", "daemon_id": str(uuid.uuid4()),
                                            "execution_mode": "in_place"}))
    page = client.get(f"/projects/{project['id']}").text
    assert "on laptop" in page and "on unknown machine" in page


def test_long_runs_open_on_their_latest_messages_and_load_earlier_ones(client, token):
    _, dauth, task_id = _setup(client, token)
    msgs = [{"seq": i, "kind": "text", "content": {"text": f"message {i}"}} for i in range(250)]
    client.post(f"/api/tasks/{task_id}/messages", json={"messages": msgs}, headers=dauth)
    page = client.get(f"/tasks/{task_id}").text
    assert page.count('class="msg msg-text"') == 50 and "message 249" in page and "message 199<" not in page
    assert f"/tasks/{task_id}/messages/earlier?before=200" in page
    earlier = client.get(f"/tasks/{task_id}/messages/earlier?before=200").text
    assert earlier.count('class="msg msg-text"') == 100 and "message 100<" in earlier and "message 99<" not in earlier
    assert "before=100" in earlier  # and a button for the 100 before those
    last = client.get(f"/tasks/{task_id}/messages/earlier?before=100").text
    assert last.count('class="msg msg-text"') == 100 and "Show earlier" not in last
