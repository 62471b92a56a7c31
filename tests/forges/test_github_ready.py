"""GitHub's mark_ready goes through GraphQL (REST cannot take a PR out of draft), which the REST
stand-in does not serve: a loopback server answering as GitHub Enterprise does checks the request
the client sends (endpoint <base>/api/graphql, the mutation, the PR's node id) and the answer's
use, including GraphQL's errors-with-200 as a refusal."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

from predictorx.forges import registry
from predictorx.forges.base import Connection, ForgeRefused, RepoRef

TOKEN = "ghp_" + "a" * 36
state: dict[str, Any] = {}


def pr_json(draft: bool) -> dict[str, Any]:
    return {"number": 5, "node_id": "PR_kwDOAbc5", "html_url": "http://ghe/acme/w/pull/5", "state": "open",
            "draft": draft, "merged": False, "head": {"ref": "agent/x", "sha": "1" * 40},
            "base": {"ref": "main", "sha": "2" * 40}, "title": "X", "merged_by": None}


class GitHubEnterprise(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        assert self.headers["Authorization"] == f"Bearer {TOKEN}"
        if self.path == "/api/v3/repos/acme/w/pulls/5":
            self.answer(200, pr_json(state["draft"]))
        else:
            self.answer(404, {"message": "Not Found"})

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        state["graphql"] = (self.path, self.headers["Authorization"], request)
        if state.get("refuse"):
            self.answer(200, {"data": None, "errors": [{"type": "FORBIDDEN", "message": "Resource not accessible by integration"}]})
            return
        state["draft"] = False
        self.answer(200, {"data": {"markPullRequestReadyForReview": {"pullRequest": {"isDraft": False}}}})


@pytest.fixture
def conn() -> Iterator[Connection]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), GitHubEnterprise)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state.clear()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    yield Connection("github", base, registry.get("github").default_api_url(base), TOKEN)
    server.shutdown()
    server.server_close()


def test_a_draft_leaves_draft_through_graphql(conn: Connection) -> None:
    github = registry.get("github")
    state["draft"] = True
    ready = github.mark_ready(conn, RepoRef("acme/w"), 5)
    assert ready.state == "open"
    path, auth, request = state["graphql"]
    assert path == "/api/graphql" and auth == f"Bearer {TOKEN}"
    assert "markPullRequestReadyForReview" in request["query"] and request["variables"] == {"id": "PR_kwDOAbc5"}
    state.pop("graphql")
    assert github.mark_ready(conn, RepoRef("acme/w"), 5).state == "open"
    assert "graphql" not in state  # not a draft: nothing sent


def test_graphql_errors_are_a_refusal(conn: Connection) -> None:
    state.update(draft=True, refuse=True)
    with pytest.raises(ForgeRefused, match="Resource not accessible by integration"):
        registry.get("github").mark_ready(conn, RepoRef("acme/w"), 5)
