"""Gitea and Forgejo through their REST API v1 (Forgejo is a Gitea fork with the same API here).
They differ in their webhook headers: Gitea signs with `X-Gitea-Signature` (hex HMAC-SHA256 of the
body) and names the delivery `X-Gitea-Delivery`; Forgejo sends `X-Forgejo-Signature`,
`X-Forgejo-Delivery` and `X-Forgejo-Event`, and the Gitea ones too.

A draft is a "WIP: " title prefix (both treat it as work in progress and refuse to merge it).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

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

def _api(name: str) -> ForgeApi:
    return ForgeApi(name, lambda token: {"Authorization": f"token {token}"}, {"Accept": "application/json"})

#: Title prefixes Gitea and Forgejo read as "work in progress" by default.
_WIP = re.compile(r"^\s*(wip:|\[wip\])\s*", re.IGNORECASE)
_REVIEW_STATES: dict[str, ReviewState] = {"APPROVED": "approved", "REQUEST_CHANGES": "changes_requested",
                                          "COMMENT": "commented"}
_HOOK_REVIEW_STATES: dict[str, ReviewState] = {
    "pull_request_review_approved": "approved", "pull_request_review_rejected": "changes_requested",
    "pull_request_review_comment": "commented"}
_STATUS: dict[str, CheckState] = {"success": "success", "pending": "pending", "failure": "failure",
                                  "error": "failure", "warning": "success"}
#: Our method → Gitea's merge style ("Do"), and the repository flag that allows it.
_STYLES: dict[MergeMethod, tuple[str, str]] = {"merge": ("merge", "allow_merge_commits"),
                                       "squash": ("squash", "allow_squash_merge"),
                                       "rebase": ("rebase", "allow_rebase")}


def _repo(repo: RepoRef) -> str:
    owner, name = repo.path.split("/", 1)
    return f"/repos/{segment(owner)}/{segment(name)}"


def read_pr(data: Mapping[str, Any]) -> PullRequest:
    merged = bool(data.get("merged"))
    title = data.get("title") or ""
    state: PRState = "merged" if merged else "closed" if data["state"] == "closed" else (
        "draft" if data.get("draft") or _WIP.match(title) else "open")
    mergeable = data.get("mergeable")
    return PullRequest(number=int(data["number"]), url=data.get("html_url") or "", state=state,
                       head_branch=data["head"]["ref"], head_sha=data["head"]["sha"], base_branch=data["base"]["ref"],
                       title=title, merged_by=mapping(data.get("merged_by")).get("login"),
                       mergeable="" if mergeable is None else "clean" if mergeable else "blocked")


def read_comment(data: Mapping[str, Any]) -> ReviewComment:
    line = data.get("position") or data.get("original_position")
    return ReviewComment(author=mapping(data.get("user")).get("login") or "", body=data.get("body") or "",
                         path=data.get("path") or None, line=int(line) if line else None,
                         url=data.get("html_url") or "", id=str(data.get("id") or ""),
                         created_at=data.get("created_at") or "")


def read_status(status: Mapping[str, Any]) -> Check:
    return Check(name=status.get("context") or "status",
                 state=_STATUS.get(status.get("status") or status.get("state") or "", "pending"),
                 url=status.get("target_url") or "", excerpt=status.get("description") or "")


class GiteaForge(Forge):
    kind = "gitea"
    webhook_auth = "X-Gitea-Signature (hex HMAC-SHA256 of the body with the webhook secret)"
    api = _api("Gitea")
    #: Webhook headers, newest name first (Forgejo adds its own in front of Gitea's).
    signature_headers: tuple[str, ...] = ("X-Gitea-Signature",)
    delivery_headers: tuple[str, ...] = ("X-Gitea-Delivery",)
    event_headers: tuple[str, ...] = ("X-Gitea-Event",)
    event_type_headers: tuple[str, ...] = ("X-Gitea-Event-Type",)

    def default_api_url(self, base_url: str) -> str:
        return base_url.rstrip("/") + "/api/v1"

    def repo_from_url(self, base_url: str, url: str) -> RepoRef | None:
        return two_part(base_url, url)

    def whoami(self, conn: Connection) -> str:
        with readable(self._name, "GET /user"):
            return str(self.api.json(conn, "GET", "/user")["login"])

    @property
    def _name(self) -> str:
        return self.api.name

    def repo(self, conn: Connection, repo: RepoRef) -> RepoInfo:
        data = self.api.json(conn, "GET", _repo(repo))
        with readable(self._name, "the repository"):
            allowed: list[MergeMethod] = [m for m, (_, flag) in _STYLES.items() if data.get(flag, True)]
            preferred = {"rebase-merge": "merge", "fast-forward-only": "rebase"}.get(
                data.get("default_merge_style") or "", data.get("default_merge_style"))
            allowed.sort(key=lambda m: m != preferred)
            methods: tuple[MergeMethod, ...] = tuple(allowed) or ("merge",)
            return RepoInfo(path=data.get("full_name") or repo.path, default_branch=data.get("default_branch") or "main",
                            merge_methods=methods, web_url=data.get("html_url") or "",
                            clone_url=data.get("clone_url") or "")

    def find_pr(self, conn: Connection, repo: RepoRef, head_branch: str) -> PullRequest | None:
        # The list has no head filter: read pages of the newest and keep this branch's PRs
        # opened from this repository (not from a fork with a branch of the same name).
        found = self.api.get_list(conn, _repo(repo) + "/pulls", params={"state": "all"},
                             page_param="limit", page_size=50, pages=6)
        with readable(self._name, "the pull-request list"):
            mine = [p for p in found if p["head"]["ref"] == head_branch
                    and mapping(mapping(p["head"]).get("repo")).get("full_name", repo.path) == repo.path]
            return read_pr(max(mine, key=lambda p: int(p["number"]))) if mine else None

    def open_pr(self, conn: Connection, repo: RepoRef, *, head_branch: str, base_branch: str,
                title: str, body: str, draft: bool) -> PullRequest:
        if draft and not _WIP.match(title):
            title = "WIP: " + title
        data = self.api.json(conn, "POST", _repo(repo) + "/pulls",
                        body={"head": head_branch, "base": base_branch, "title": title, "body": body})
        with readable(self._name, "the new pull request"):
            return read_pr(data)

    def get_pr(self, conn: Connection, repo: RepoRef, number: int) -> PullRequest:
        with readable(self._name, "the pull request"):
            return read_pr(self.api.json(conn, "GET", f"{_repo(repo)}/pulls/{number}"))

    def mark_ready(self, conn: Connection, repo: RepoRef, number: int) -> PullRequest:
        data = self.api.json(conn, "GET", f"{_repo(repo)}/pulls/{number}")
        with readable(self._name, "the pull request"):
            title = data["title"]
            if _WIP.match(title):
                data = self.api.json(conn, "PATCH", f"{_repo(repo)}/pulls/{number}",
                                body={"title": _WIP.sub("", title, count=1)})
            return read_pr(data)

    def get_pr_if_changed(self, conn: Connection, repo: RepoRef, number: int,
                          validators: Mapping[str, str]) -> tuple[PullRequest | None, dict[str, str]]:
        answer = self.api.call(conn, "GET", f"{_repo(repo)}/pulls/{number}", validators=validators)
        if answer.status == 304:
            return None, dict(validators)
        with readable(self._name, "the pull request"):
            return read_pr(answer.body), answer.validators

    def reviews(self, conn: Connection, repo: RepoRef, number: int) -> list[Review]:
        raw = self.api.get_list(conn, f"{_repo(repo)}/pulls/{number}/reviews", page_param="limit", page_size=50)
        out = []
        with readable(self._name, "the reviews"):
            for r in raw:
                if r.get("state") in ("PENDING", "REQUEST_REVIEW"):
                    continue
                comments: list[Any] = []
                if r.get("comments_count"):
                    comments = self.api.json(conn, "GET", f"{_repo(repo)}/pulls/{number}/reviews/{int(r['id'])}/comments")
                state = "none" if r.get("dismissed") else _REVIEW_STATES.get(r.get("state") or "", "commented")
                out.append(Review(id=str(r["id"]), author=mapping(r.get("user")).get("login") or "", state=state,
                                  body=r.get("body") or "", comments=tuple(read_comment(c) for c in comments or []),
                                  submitted_at=r.get("submitted_at") or ""))
        return out

    def comments(self, conn: Connection, repo: RepoRef, number: int, since: str = "") -> list[ReviewComment]:
        raw = self.api.json(conn, "GET", f"{_repo(repo)}/issues/{number}/comments", params={"since": since or None})
        with readable(self._name, "the comments"):
            return [read_comment(c) for c in raw if not since or (c.get("created_at") or "") > since]

    def checks(self, conn: Connection, repo: RepoRef, sha: str) -> list[Check]:
        return self.checks_if_changed(conn, repo, sha, {})[0] or []

    def checks_if_changed(self, conn: Connection, repo: RepoRef, sha: str,
                          validators: Mapping[str, str]) -> tuple[list[Check] | None, dict[str, str]]:
        answer = self.api.call(conn, "GET", f"{_repo(repo)}/commits/{segment(sha)}/status", validators=validators)
        if answer.status == 304:
            return None, dict(validators)
        with readable(self._name, "the commit status"):
            return [read_status(s) for s in answer.body.get("statuses") or []], answer.validators

    def merge(self, conn: Connection, repo: RepoRef, number: int, *, method: MergeMethod,
              head_sha: str) -> Merged:
        request: dict[str, Any] = {"Do": _STYLES[method][0]}
        if head_sha:
            request["head_commit_id"] = head_sha
        self.api.call(conn, "POST", f"{_repo(repo)}/pulls/{number}/merge", body=request)
        data = self.api.json(conn, "GET", f"{_repo(repo)}/pulls/{number}")  # the merge answers no body
        with readable(self._name, "the merged pull request"):
            return Merged(sha=data.get("merge_commit_sha") or "", method=method)

    def close_pr(self, conn: Connection, repo: RepoRef, number: int) -> None:
        self.api.call(conn, "PATCH", f"{_repo(repo)}/pulls/{number}", body={"state": "closed"})

    def author_may_write(self, conn: Connection, repo: RepoRef, author: str, author_id: str = "") -> bool:
        """Gitea/Forgejo's access mode of the user: owner, admin or write may send work."""
        if not author:
            return False
        try:
            data = self.api.json(conn, "GET", f"{_repo(repo)}/collaborators/{segment(author)}/permission")
        except ForgeRefused as e:
            if e.status == 404:  # no such user
                return False
            raise
        return mapping(data).get("permission") in ("owner", "admin", "write")

    def delete_branch(self, conn: Connection, repo: RepoRef, branch: str) -> None:
        self.api.call(conn, "DELETE", f"{_repo(repo)}/branches/{segment(branch)}", accept_missing=True)

    def _header(self, headers: Mapping[str, str], names: tuple[str, ...]) -> str:
        return next((v for v in (header(headers, n) for n in names) if v), "")

    def verify_webhook(self, headers: Mapping[str, str], body: bytes, secret: str) -> None:
        require_hmac(self._header(headers, self.signature_headers), secret, body,
                     what=" or ".join(self.signature_headers))

    def parse_webhook(self, headers: Mapping[str, str], body: bytes) -> ForgeEvent:
        event = self._header(headers, self.event_headers)
        delivery = self._header(headers, self.delivery_headers)
        if not event or not delivery:
            raise WebhookRejected(f"the delivery has no {self.event_headers[0]} or {self.delivery_headers[0]} header")
        payload = json_object(body)
        event_type = self._header(headers, self.event_type_headers) or event
        with readable_webhook(event):
            return _event(event, event_type, delivery, payload)


def _event(event: str, event_type: str, delivery: str, payload: dict[str, Any]) -> ForgeEvent:
    """pull_request (and its _sync/_assign/… types), the review events (pull_request_approved,
    _rejected, _comment: a payload with `review`), issue_comment on a PR, status."""
    repo_path = mapping(payload.get("repository")).get("full_name") or ""
    action = payload.get("action") or ""
    base: dict[str, Any] = {"delivery_id": delivery, "repo_path": repo_path,
            "raw_event": f"{event_type}.{action}" if action else event_type}
    pr_data = mapping(payload.get("pull_request"))
    pr = read_pr(pr_data) if pr_data.get("head") else None
    on_pr: dict[str, Any] = ({"pr_number": pr.number, "head_branch": pr.head_branch, "head_sha": pr.head_sha, "pr": pr}
             if pr else {})
    review = mapping(payload.get("review"))
    if pr and review:
        kind = review.get("type") or event_type
        who = mapping(payload.get("sender")).get("login") or ""
        if kind == "pull_request_review_comment" or event == "pull_request_comment":
            # A review comment (inline or a "comment" review): the payload carries its text, not
            # its file and line; `reviews()` has those.
            comment = ReviewComment(author=who, body=review.get("content") or "")
            return ForgeEvent(kind="comment", comment=comment, **base, **on_pr)
        state: ReviewState = _HOOK_REVIEW_STATES.get(kind) or _HOOK_REVIEW_STATES.get(
            event.replace("pull_request_", "pull_request_review_"), "commented")
        return ForgeEvent(kind="review", review=Review(id=f"delivery:{delivery}", author=who, state=state,
                                                       body=review.get("content") or ""), **base, **on_pr)
    if event.startswith("pull_request") and pr:
        return ForgeEvent(kind="pr", **base, **on_pr)
    issue = mapping(payload.get("issue"))
    if event == "issue_comment" and payload.get("comment") and (payload.get("is_pull") or issue.get("pull_request")):
        if action not in ("created", ""):
            return ForgeEvent(kind="other", **base)
        return ForgeEvent(kind="comment", comment=read_comment(payload["comment"]), pr_number=int(issue["number"]),
                          **base)
    if event == "status":
        return ForgeEvent(kind="check", check=read_status(payload), head_sha=payload.get("sha"), **base)
    return ForgeEvent(kind="other", **base, **on_pr)


class ForgejoForge(GiteaForge):
    kind = "forgejo"
    api = _api("Forgejo")
    webhook_auth = "X-Forgejo-Signature or X-Gitea-Signature (hex HMAC-SHA256 of the body with the webhook secret)"
    signature_headers = ("X-Forgejo-Signature", "X-Gitea-Signature")
    delivery_headers = ("X-Forgejo-Delivery", "X-Gitea-Delivery")
    event_headers = ("X-Forgejo-Event", "X-Gitea-Event")
    event_type_headers = ("X-Forgejo-Event-Type", "X-Gitea-Event-Type")


register(GiteaForge)
register(ForgejoForge)
