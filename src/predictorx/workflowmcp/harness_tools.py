"""The harness's tools for the agent of a task (R-HAR-7, issue 12 §10), as plain functions.

Authenticated by the task token in its environment (PREDICTORX_TOKEN, PREDICTORX_SERVER_URL,
PREDICTORX_ISSUE, PREDICTORX_TASK_ID — the daemon sets them for every run): every tool is one
HTTP call the server checks like any other; a refused step comes back as the server's sentence
(which step is enabled, who may take it). Nothing here can do what the token cannot.

The SDK server registers them (mcp_server.py: their signatures and docstrings are the listing);
the stdio front calls them itself (direct_call.py) without importing the SDK, which costs about
half a second of CPU at a run's first tool call (issue 30). So this module imports neither the
SDK nor httpx at import (`Api` imports httpx only for a server it cannot call over a socket).
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable
from urllib.parse import quote

from . import plain_call

INSTRUCTIONS = """Predictor X harness: your issue's workflows, beans and handoff.
Start with harness_state (the sweep: enabled steps, beans, suspended stack, last handoff, and any
classification waiting for your judgement: answer it with classification_judge first).
Take only enabled steps of your role: workflow_complete for a task, workflow_pass_gate for a gate
(a decision gate takes the facts you assert, never the ones Predictor X computes; a judgement gate
an outcome and a reason). Each reply says which bean you are on and what is next. Before you stop,
call handoff_write. You never close the issue; a person does."""

TIMEOUT_S = 30.0


class Api:
    """The task's server, with its token. `failure`: what a tool raises to tell the agent why it failed
    (the SDK's ToolError under the SDK server; direct_call's own exception in the front). A server
    httpx would reach directly over plain http is called over a socket (plain_call.py: no httpx
    import, ~70 ms of CPU, in the front's one process of a run); any other through httpx."""

    def __init__(self, failure: type[Exception]) -> None:
        self.failure = failure
        self.url = os.environ.get("PREDICTORX_SERVER_URL", "").rstrip("/")
        self.token = os.environ.get("PREDICTORX_TOKEN", "")
        self.issue = os.environ.get("PREDICTORX_ISSUE", "")
        self.task = os.environ.get("PREDICTORX_TASK_ID", "")
        self.plain = bool(self.url) and plain_call.direct_to(self.url, self.token)
        self._http: Any = None

    def call(self, method: str, path: str, body: Any = None, params: dict | None = None) -> Any:
        if not (self.url and self.token and self.issue):
            raise self.failure("this MCP server runs inside a Predictor X task: PREDICTORX_SERVER_URL, "
                               "PREDICTORX_TOKEN and PREDICTORX_ISSUE are not set")
        status, content = self._plain(method, path, body) if self.plain and not params else \
            self._httpx(method, path, body, params)
        if status >= 400:
            try:
                detail = json.loads(content).get("detail")
            except ValueError:
                detail = content.decode("utf-8", errors="replace")[:300]
            raise self.failure(str(detail))
        return json.loads(content) if content else None

    def _plain(self, method: str, path: str, body: Any) -> tuple[int, bytes]:
        # (encoded as httpx encodes `json=`)
        data = None if body is None else \
            json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        try:
            return plain_call.request(self.url, method, path, {"Authorization": f"Bearer {self.token}"}, data)
        except plain_call.CallFailed as e:
            raise self.failure(f"the Predictor X server did not answer ({e}); try again") from None

    def _httpx(self, method: str, path: str, body: Any, params: dict | None) -> tuple[int, bytes]:
        import httpx2 as httpx

        if self._http is None:
            self._http = httpx.Client(base_url=self.url, timeout=TIMEOUT_S,
                                      headers={"Authorization": f"Bearer {self.token}"})
        try:
            r = self._http.request(method, path, json=body, params=params)
        except httpx.HTTPError as e:
            raise self.failure(f"the Predictor X server did not answer ({type(e).__name__}); try again") from None
        return r.status_code, r.content

    def issue_path(self, tail: str = "") -> str:
        return f"/api/issues/{quote(self.issue, safe='')}{tail}"


def _classification_tools(api: Api) -> list[Callable[..., Any]]:
    """The request's classification: try the table; see and answer what it left pending."""

    def classify(text: str) -> dict:
        """Classify a request with the workspace's decision table (category, rule, workflow it selects;
        or `pending` with the question to ask). Records nothing."""
        return api.call("POST", "/api/classify", {"text": text})

    def classification_pending() -> list:
        """The issue's classifications waiting for a judgement: each with its question, the categories
        it chooses between and its id (no workflow was started for them)."""
        rows = api.call("GET", api.issue_path("/classifications"))
        return [{"id": r["id"], "question": r.get("question"), "candidates": r.get("candidates") or [],
                 "category": r["category"], "reason": r["reason"]} for r in rows if r["method"] == "pending"]

    def classification_judge(category: str, reason: str, folio: str | None = None,
                             classification: str | None = None) -> dict:
        """Answer a pending classification by judgement (reason mandatory; content authoring also names
        its folio, paper or document); starts the workflow its category selects. `classification`:
        the id from classification_pending or the session start (default: the latest pending one)."""
        body = ({"category": category, "reason": reason} | ({"folio": folio} if folio else {})
                | ({"classification": classification} if classification else {}))
        return api.call("POST", api.issue_path("/classifications"), body)

    return [classify, classification_pending, classification_judge]


def functions(api: Api) -> list[Callable[..., Any]]:
    """The tools, in the order they are listed: each a function of its arguments (their names, types
    and docstring are the tool's schema and description) that makes its one call through `api`."""
    q = lambda v: quote(str(v), safe="")

    def harness_state() -> dict:
        """The sweep: workflow instances and enabled steps, interaction state and suspended stack, beans,
        sibling branches and the previous task's handoff."""
        return api.call("GET", f"/api/tasks/{q(api.task)}/harness/sweep")

    def workflow_enabled(process: str | None = None) -> list:
        """Enabled steps (node, kind, role, skills, outcomes, what to produce) of one or all instances."""
        rows = api.call("GET", api.issue_path("/workflows"))
        return [{"process": r["process_id"], "status": r["status"], "version": r["version"], "enabled": r["enabled"]}
                for r in rows if process in (None, r["process_id"])]

    def workflow_start(process: str) -> dict:
        """Start a process on the issue (idempotent); it becomes your active workflow."""
        return api.call("POST", api.issue_path("/workflows"), {"process": process})

    def workflow_complete(process: str, step: str, produced: dict[str, str] | None = None,
                          facts: dict[str, Any] | None = None, note: str | None = None) -> dict:
        """Complete an enabled step of your active workflow (idle: it becomes active). `produced`: bean, branch…"""
        return api.call("POST", api.issue_path(f"/workflows/{q(process)}/steps"),
                        {"step": step, "produced": produced or {}, "facts": facts or {}, "reason": note})

    def workflow_pass_gate(process: str, gate: str, facts: dict[str, Any] | None = None,
                           outcome: str | None = None, reason: str | None = None) -> dict:
        """Pass a gate: a decision gate computes its branch from facts Predictor X computes now (never pass those)
        and the `facts` you assert with this pass (none carried over); a judgement takes `outcome` and `reason`."""
        return api.call("POST", api.issue_path(f"/workflows/{q(process)}/steps"),
                        {"step": gate, "facts": facts or {}, "outcome": outcome, "reason": reason})

    def workflow_suspend() -> dict:
        """Suspend the active workflow (switching context); where it was is recorded on the stack."""
        return api.call("POST", api.issue_path("/workflow-state/suspend"), {})

    def workflow_resume() -> dict:
        """Resume the most recently suspended workflow."""
        return api.call("POST", api.issue_path("/workflow-state/resume"), {})

    classification = _classification_tools(api)

    def bean_list() -> list:
        """The issue's beans with status and etag."""
        return api.call("GET", api.issue_path("/beans"))

    def bean_create(title: str, body: str = "") -> dict:
        """Create a PR-sized bean (the same title returns the existing one)."""
        return api.call("POST", api.issue_path("/beans"), {"title": title, "body": body})

    def bean_update(bean: str, op: str, text: str | None = None, etag: int | None = None) -> dict:
        """op: claim | note | resolve | scrap (note and scrap take text). Pass the etag you read.
        A bean your workflow's step named changes status only through that workflow's steps
        (workflow_complete) while it runs; a note is always open."""
        if op not in ("claim", "note", "resolve", "scrap"):
            raise api.failure("op must be claim, note, resolve or scrap")
        return api.call("POST", api.issue_path(f"/beans/{q(bean)}/{op}"), {"text": text, "if_version": etag})

    def handoff_write(done: str, next_step: str, open_questions: list[str] | None = None) -> dict:
        """Leave the handoff for the next task on this issue: what you did, the next step, open questions.
        Branch, commits, beans and the workflow position are added for you."""
        return api.call("POST", f"/api/tasks/{q(api.task)}/harness/handoff",
                        {"done": done, "next_step": next_step, "open_questions": open_questions or []})

    return [harness_state, workflow_enabled, workflow_start, workflow_complete, workflow_pass_gate, workflow_suspend,
            workflow_resume, *classification, bean_list, bean_create, bean_update, handoff_write]
