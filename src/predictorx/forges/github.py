"""GitHub (github.com and GitHub Enterprise Server) through its REST API, version 2022-11-28.

A thin client over `httpclient` (docs/forges.md, "Clients", says why not githubkit). Webhooks are
authenticated by `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping
from urllib.parse import urlsplit

from .base import (
    Check,
    CheckState,
    Connection,
    Forge,
    ForgeEvent,
    ForgeRefused,
    Merged,
    MergeMethod,
    PRState,
    PullRequest,
    RepoInfo,
    RepoRef,
    Review,
    ReviewComment,
    ReviewState,
    WebhookRejected,
)
from .httpclient import ForgeApi, mapping, readable, segment
from .registry import register
from .repourl import two_part
from .webhookauth import header, json_object, readable_webhook, require_hmac

API = ForgeApi("GitHub", lambda token: {"Authorization": f"Bearer {token}"},
               {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"})

_REVIEW_STATES: dict[str, ReviewState] = {
    "APPROVED": "approved", "CHANGES_REQUESTED": "changes_requested", "COMMENTED": "commented",
    "DISMISSED": "none",
}
_MERGE_FLAGS: tuple[tuple[MergeMethod, str], ...] = (
    ("merge", "allow_merge_commit"), ("squash", "allow_squash_merge"), ("rebase", "allow_rebase_merge"))
_WRITE_ROLES = {"admin", "maintain", "write"}
_FAILED_CONCLUSIONS = {"failure", "timed_out", "cancelled", "action_required", "startup_failure", "stale"}
_STATUS_STATES: dict[str, CheckState] = {"success": "success", "pending": "pending", "failure": "failure",
                                         "error": "failure"}


def _repo(repo: RepoRef) -> str:
    owner, name = repo.path.split("/", 1)
    return f"/repos/{segment(owner)}/{segment(name)}"


def read_pr(data: Mapping[str, Any]) -> PullRequest:
    """A pull-request object (REST answer or webhook payload) → PullRequest."""
    merged = bool(data.get("merged") or data.get("merged_at"))
    state: PRState = "merged" if merged else "closed" if data["state"] == "closed" else (
        "draft" if data.get("draft") else "open")
    return PullRequest(
        number=int(data["number"]), url=data.get("html_url") or "", state=state,
        head_branch=data["head"]["ref"], head_sha=data["head"]["sha"], base_branch=data["base"]["ref"],
        title=data.get("title") or "", merged_by=mapping(data.get("merged_by")).get("login"),
        mergeable=data.get("mergeable_state") or "")


def read_comment(data: Mapping[str, Any]) -> ReviewComment:
    """An inline review comment or an issue comment → ReviewComment."""
    line = data.get("line") or data.get("original_line")
    return ReviewComment(author=mapping(data.get("user")).get("login") or "", body=data.get("body") or "",
                         path=data.get("path"), line=int(line) if line else None,
                         url=data.get("html_url") or "", id=str(data.get("id") or ""),
                         created_at=data.get("created_at") or "")


def read_check_run(run: Mapping[str, Any]) -> Check:
    if run.get("status") != "completed":
        state: CheckState = "pending"
    elif run.get("conclusion") in _FAILED_CONCLUSIONS:
        state = "failure"
    else:  # success, neutral, skipped
        state = "success"
    output = mapping(run.get("output"))
    excerpt = "\n".join(p for p in (output.get("title"), output.get("summary"), output.get("text")) if p)
    return Check(name=run.get("name") or "check", state=state,
                 url=run.get("html_url") or run.get("details_url") or "", excerpt=excerpt[-4000:])


def read_status(status: Mapping[str, Any]) -> Check:
    return Check(name=status.get("context") or "status", state=_STATUS_STATES.get(status.get("state") or "", "pending"),
                 url=status.get("target_url") or "", excerpt=status.get("description") or "")


class GitHubForge(Forge):
    kind = "github"
    webhook_auth = "X-Hub-Signature-256 (HMAC-SHA256 of the body with the webhook secret)"

    def default_api_url(self, base_url: str) -> str:
        host = (urlsplit(base_url).hostname or "").lower()
        if host in ("github.com", "www.github.com"):
            return "https://api.github.com"
        return base_url.rstrip("/") + "/api/v3"  # GitHub Enterprise Server

    def repo_from_url(self, base_url: str, url: str) -> RepoRef | None:
        return two_part(base_url, url)

    def whoami(self, conn: Connection) -> str:
        with readable("GitHub", "GET /user"):
            return str(API.json(conn, "GET", "/user")["login"])

    def repo(self, conn: Connection, repo: RepoRef) -> RepoInfo:
        data = API.json(conn, "GET", _repo(repo))
        with readable("GitHub", "the repository"):
            # Absent flags (a token without push access is not told) count as allowed.
            allowed: list[MergeMethod] = [m for m, flag in _MERGE_FLAGS if data.get(flag, True)]
            methods: tuple[MergeMethod, ...] = tuple(allowed) or ("merge",)
            return RepoInfo(path=data.get("full_name") or repo.path, default_branch=data["default_branch"],
                            merge_methods=methods, web_url=data.get("html_url") or "",
                            clone_url=data.get("clone_url") or "")

    def find_pr(self, conn: Connection, repo: RepoRef, head_branch: str) -> PullRequest | None:
        owner = repo.path.split("/", 1)[0]
        found = API.json(conn, "GET", _repo(repo) + "/pulls", params={
            "head": f"{owner}:{head_branch}", "state": "all", "sort": "created", "direction": "desc",
            "per_page": 1})
        with readable("GitHub", "the pull-request list"):
            return read_pr(found[0]) if found else None

    def open_pr(self, conn: Connection, repo: RepoRef, *, head_branch: str, base_branch: str,
                title: str, body: str, draft: bool) -> PullRequest:
        request = {"title": title, "head": head_branch, "base": base_branch, "body": body, "draft": draft}
        try:
            data = API.json(conn, "POST", _repo(repo) + "/pulls", body=request)
        except ForgeRefused as e:
            # Private repositories on some plans refuse drafts; the pull request still matters more.
            if not (draft and e.status == 422 and "draft" in str(e).lower()):
                raise
            data = API.json(conn, "POST", _repo(repo) + "/pulls", body={**request, "draft": False})
        with readable("GitHub", "the new pull request"):
            return read_pr(data)

    def get_pr(self, conn: Connection, repo: RepoRef, number: int) -> PullRequest:
        with readable("GitHub", "the pull request"):
            return read_pr(API.json(conn, "GET", f"{_repo(repo)}/pulls/{number}"))

    def mark_ready(self, conn: Connection, repo: RepoRef, number: int) -> PullRequest:
        """REST cannot leave draft; GraphQL's markPullRequestReadyForReview can."""
        data = API.json(conn, "GET", f"{_repo(repo)}/pulls/{number}")
        with readable("GitHub", "the pull request"):
            if not data.get("draft"):
                return read_pr(data)
            node_id = data["node_id"]
        graphql = replace(conn, api_url=_graphql_root(conn.api_url))
        answer = API.json(graphql, "POST", "", body={
            "query": "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) "
                     "{ pullRequest { isDraft } } }", "variables": {"id": node_id}})
        errors = mapping(answer).get("errors")
        if errors:
            raise ForgeRefused("GitHub refused: " + "; ".join(str(mapping(e).get("message") or e) for e in errors), 422)
        return self.get_pr(conn, repo, number)

    def get_pr_if_changed(self, conn: Connection, repo: RepoRef, number: int,
                          validators: Mapping[str, str]) -> tuple[PullRequest | None, dict[str, str]]:
        answer = API.call(conn, "GET", f"{_repo(repo)}/pulls/{number}", validators=validators)
        if answer.status == 304:
            return None, dict(validators)
        with readable("GitHub", "the pull request"):
            return read_pr(answer.body), answer.validators

    def reviews(self, conn: Connection, repo: RepoRef, number: int) -> list[Review]:
        raw = API.get_list(conn, f"{_repo(repo)}/pulls/{number}/reviews")
        inline = API.get_list(conn, f"{_repo(repo)}/pulls/{number}/comments")
        with readable("GitHub", "the reviews"):
            by_review: dict[str, list[ReviewComment]] = {}
            for c in inline:
                by_review.setdefault(str(c.get("pull_request_review_id")), []).append(read_comment(c))
            return [Review(id=str(r["id"]), author=mapping(r.get("user")).get("login") or "",
                           state=_REVIEW_STATES.get(r.get("state") or "", "commented"), body=r.get("body") or "",
                           comments=tuple(by_review.get(str(r["id"]), ())), submitted_at=r.get("submitted_at") or "")
                    for r in raw if r.get("state") != "PENDING"]

    def comments(self, conn: Connection, repo: RepoRef, number: int, since: str = "") -> list[ReviewComment]:
        raw = API.get_list(conn, f"{_repo(repo)}/issues/{number}/comments", params={"since": since or None})
        with readable("GitHub", "the comments"):
            # `since` filters on updated_at; a comment edited later would come again.
            return [read_comment(c) for c in raw if not since or (c.get("created_at") or "") > since]

    def checks(self, conn: Connection, repo: RepoRef, sha: str) -> list[Check]:
        checks, _ = self._checks(conn, repo, sha, {})
        return checks or []

    def checks_if_changed(self, conn: Connection, repo: RepoRef, sha: str,
                          validators: Mapping[str, str]) -> tuple[list[Check] | None, dict[str, str]]:
        return self._checks(conn, repo, sha, validators)

    def _checks(self, conn: Connection, repo: RepoRef, sha: str,
                validators: Mapping[str, str]) -> tuple[list[Check] | None, dict[str, str]]:
        """Check runs and the combined commit status, one list. Validators are kept per endpoint
        ("runs.etag", "status.etag"); when one changed the other is read in full again."""
        base = f"{_repo(repo)}/commits/{segment(sha)}"
        runs = API.call(conn, "GET", base + "/check-runs", params={"per_page": 100},
                        validators=_sub(validators, "runs"))
        status = API.call(conn, "GET", base + "/status", params={"per_page": 100},
                          validators=_sub(validators, "status"))
        if runs.status == 304 and status.status == 304:
            return None, dict(validators)
        if runs.status == 304:
            runs = API.call(conn, "GET", base + "/check-runs", params={"per_page": 100})
        if status.status == 304:
            status = API.call(conn, "GET", base + "/status", params={"per_page": 100})
        with readable("GitHub", "the checks"):
            out = [read_check_run(r) for r in runs.body["check_runs"]]
            out += [read_status(s) for s in status.body.get("statuses") or []]
        new = {f"runs.{k}": v for k, v in runs.validators.items()}
        new.update({f"status.{k}": v for k, v in status.validators.items()})
        return out, new

    def merge(self, conn: Connection, repo: RepoRef, number: int, *, method: MergeMethod,
              head_sha: str) -> Merged:
        data = API.json(conn, "PUT", f"{_repo(repo)}/pulls/{number}/merge",
                        body={"merge_method": method, **({"sha": head_sha} if head_sha else {})})
        with readable("GitHub", "the merge"):
            if not data.get("merged", True):
                raise ForgeRefused(f"GitHub refused: {data.get('message') or 'not merged'}", 405)
            return Merged(sha=data["sha"], method=method)

    def close_pr(self, conn: Connection, repo: RepoRef, number: int) -> None:
        API.call(conn, "PATCH", f"{_repo(repo)}/pulls/{number}", body={"state": "closed"})

    def author_may_write(self, conn: Connection, repo: RepoRef, author: str, author_id: str = "") -> bool:
        """`role_name` is the role (admin, maintain, write, triage, read, or a custom one);
        `permission` folds maintain into write, so a custom role based on write counts too."""
        if not author:
            return False
        try:
            data = API.json(conn, "GET", f"{_repo(repo)}/collaborators/{segment(author)}/permission")
        except ForgeRefused as e:
            if e.status == 404:  # no such user
                return False
            raise
        return (mapping(data).get("role_name") in _WRITE_ROLES
                or mapping(data).get("permission") in _WRITE_ROLES)

    def delete_branch(self, conn: Connection, repo: RepoRef, branch: str) -> None:
        try:
            API.call(conn, "DELETE", f"{_repo(repo)}/git/refs/heads/{segment(branch)}", accept_missing=True)
        except ForgeRefused as e:
            if not (e.status == 422 and "does not exist" in str(e)):  # already gone: done
                raise

    def verify_webhook(self, headers: Mapping[str, str], body: bytes, secret: str) -> None:
        require_hmac(header(headers, "X-Hub-Signature-256"), secret, body, prefix="sha256=",
                     what="X-Hub-Signature-256")

    def parse_webhook(self, headers: Mapping[str, str], body: bytes) -> ForgeEvent:
        event, delivery = header(headers, "X-GitHub-Event"), header(headers, "X-GitHub-Delivery")
        if not event or not delivery:
            raise WebhookRejected("the delivery has no X-GitHub-Event or X-GitHub-Delivery header")
        payload = json_object(body)
        with readable_webhook(event):
            return _event(event, delivery, payload)


def _event(event: str, delivery: str, payload: dict[str, Any]) -> ForgeEvent:
    """One GitHub delivery → ForgeEvent: pull_request, pull_request_review,
    pull_request_review_comment, issue_comment on a PR, check_run, check_suite, status, ping."""
    repo_path = mapping(payload.get("repository")).get("full_name") or ""
    action = payload.get("action") or ""
    base: dict[str, Any] = {"delivery_id": delivery, "repo_path": repo_path, "raw_event": f"{event}.{action}" if action else event}
    pr_data = mapping(payload.get("pull_request"))
    pr = read_pr(pr_data) if pr_data else None
    on_pr: dict[str, Any] = ({"pr_number": pr.number, "head_branch": pr.head_branch, "head_sha": pr.head_sha, "pr": pr}
             if pr else {})
    if event == "ping":
        return ForgeEvent(kind="ping", **base)
    if event == "pull_request":
        if pr is None:
            raise KeyError("pull_request")
        return ForgeEvent(kind="pr", **base, **on_pr)
    if event == "pull_request_review" and action in ("submitted", "dismissed"):
        r = payload["review"]
        state = "none" if action == "dismissed" else _REVIEW_STATES.get(str(r.get("state")).upper(), "commented")
        review = Review(id=str(r["id"]), author=mapping(r.get("user")).get("login") or "", state=state,
                        body=r.get("body") or "", submitted_at=r.get("submitted_at") or "")
        return ForgeEvent(kind="review", review=review, **base, **on_pr)
    if event == "pull_request_review_comment" and action == "created":
        return ForgeEvent(kind="comment", comment=read_comment(payload["comment"]), **base, **on_pr)
    if event == "issue_comment" and action == "created" and mapping(payload.get("issue")).get("pull_request"):
        return ForgeEvent(kind="comment", comment=read_comment(payload["comment"]),
                          pr_number=int(payload["issue"]["number"]), **base)
    if event == "check_run":
        run = payload["check_run"]
        prs = run.get("pull_requests") or []
        return ForgeEvent(kind="check", check=read_check_run(run), head_sha=run.get("head_sha"),
                          head_branch=mapping(run.get("check_suite")).get("head_branch"),
                          pr_number=int(prs[0]["number"]) if prs else None, **base)
    if event == "check_suite":
        suite = payload["check_suite"]
        prs = suite.get("pull_requests") or []
        check = read_check_run({"name": mapping(suite.get("app")).get("name") or "checks", **suite})
        return ForgeEvent(kind="check", check=check, head_sha=suite.get("head_sha"),
                          head_branch=suite.get("head_branch"),
                          pr_number=int(prs[0]["number"]) if prs else None, **base)
    if event == "status":
        branches = payload.get("branches") or []
        return ForgeEvent(kind="check", check=read_status(payload), head_sha=payload.get("sha"),
                          head_branch=branches[0]["name"] if branches else None, **base)
    return ForgeEvent(kind="other", **base, **on_pr)


def _graphql_root(api_url: str) -> str:
    """api.github.com → api.github.com/graphql; GHES <base>/api/v3 → <base>/api/graphql."""
    root = api_url.rstrip("/")
    return root[: -len("/v3")] + "/graphql" if root.endswith("/api/v3") else root + "/graphql"


def _sub(validators: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix) + 1:]: v for k, v in validators.items() if k.startswith(prefix + ".")}


register(GitHubForge)
