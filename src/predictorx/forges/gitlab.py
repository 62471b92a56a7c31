"""GitLab (gitlab.com or self-managed) through its REST API v4; a pull request is a merge request
(number = iid). Webhooks carry the secret itself in `X-Gitlab-Token`.

What GitLab calls things differently: a draft is a "Draft: " title prefix; reviews are the MR's
reviewers (state approved / requested_changes / reviewed), its approvals, and its diff notes;
checks are the head commit's statuses (one per CI job, plus external ones) with the failed job's
log tail as the excerpt.
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
from .repourl import nested
from .webhookauth import body_digest, header, json_object, readable_webhook, require_token

API = ForgeApi("GitLab", lambda token: {"PRIVATE-TOKEN": token})

_DRAFT = re.compile(r"^\s*(\[draft\]|\(draft\)|draft:|draft\s|wip:|\[wip\])\s*", re.IGNORECASE)
_STATES: dict[str, CheckState] = {
    "success": "success", "failed": "failure", "canceled": "failure", "canceling": "failure",
    "skipped": "success", "manual": "pending", "created": "pending", "pending": "pending",
    "running": "pending", "preparing": "pending", "scheduled": "pending", "waiting_for_resource": "pending",
}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\x1b\[0K|section_(start|end):\d+:[\w.-]+\r?")
LOG_TAIL = 3000
#: A merge request reviewer's state (GitLab 17+) → ours; "unreviewed" says nothing.
_REVIEWER_STATES: dict[str, ReviewState] = {"requested_changes": "changes_requested", "approved": "approved",
                                            "reviewed": "commented"}


_DEVELOPER = 30  # GitLab's access level of a Developer: may push


def _project(repo: RepoRef) -> str:
    return "/projects/" + segment(repo.path)


def _mr(repo: RepoRef, number: int) -> str:
    return f"{_project(repo)}/merge_requests/{number}"


def read_mr(data: Mapping[str, Any]) -> PullRequest:
    """A merge-request object (REST answer, or a webhook's object_attributes) → PullRequest."""
    state: PRState = "merged" if data["state"] == "merged" else "closed"  # closed, locked
    if data["state"] == "opened":
        state = "draft" if data.get("draft") or data.get("work_in_progress") else "open"
    merged_by = mapping(data.get("merge_user")).get("username") or mapping(data.get("merged_by")).get("username")
    sha = data.get("sha") or mapping(data.get("last_commit")).get("id") or ""
    return PullRequest(number=int(data["iid"]), url=data.get("web_url") or data.get("url") or "", state=state,
                       head_branch=data["source_branch"], head_sha=sha, base_branch=data["target_branch"],
                       title=data.get("title") or "", merged_by=merged_by,
                       mergeable=data.get("detailed_merge_status") or data.get("merge_status") or "")


def read_note(note: Mapping[str, Any], web_url: str = "") -> ReviewComment:
    position = mapping(note.get("position"))
    line = position.get("new_line") or position.get("old_line")
    return ReviewComment(author=mapping(note.get("author")).get("username") or "", body=note.get("body") or note.get("note") or "",
                         path=position.get("new_path") or position.get("old_path"),
                         line=int(line) if line else None,
                         url=f"{web_url}#note_{note['id']}" if web_url and note.get("id") else "",
                         id=str(note.get("id") or ""), created_at=note.get("created_at") or "",
                         author_id=str(mapping(note.get("author")).get("id") or ""))


class GitLabForge(Forge):
    kind = "gitlab"
    webhook_auth = "X-Gitlab-Token (the webhook secret itself)"

    def default_api_url(self, base_url: str) -> str:
        return base_url.rstrip("/") + "/api/v4"

    def repo_from_url(self, base_url: str, url: str) -> RepoRef | None:
        return nested(base_url, url)

    def whoami(self, conn: Connection) -> str:
        with readable("GitLab", "GET /user"):
            return str(API.json(conn, "GET", "/user")["username"])

    def repo(self, conn: Connection, repo: RepoRef) -> RepoInfo:
        data = API.json(conn, "GET", _project(repo))
        with readable("GitLab", "the project"):
            # merge_method: merge (merge commit), rebase_merge (merge commit, rebased first), ff
            # (fast-forward only: linear history, as "rebase"); squash_option says whether squashing is allowed.
            linear = data.get("merge_method") == "ff"
            squash = data.get("squash_option") or "default_off"
            methods: list[MergeMethod] = [] if squash == "always" else ["rebase" if linear else "merge"]
            if squash != "never":
                methods.append("squash")
            return RepoInfo(path=data.get("path_with_namespace") or repo.path,
                            default_branch=data.get("default_branch") or "main", merge_methods=tuple(methods),
                            web_url=data.get("web_url") or "", clone_url=data.get("http_url_to_repo") or "")

    def find_pr(self, conn: Connection, repo: RepoRef, head_branch: str) -> PullRequest | None:
        found = API.json(conn, "GET", _project(repo) + "/merge_requests", params={
            "source_branch": head_branch, "state": "all", "order_by": "created_at", "sort": "desc",
            "per_page": 1})
        with readable("GitLab", "the merge-request list"):
            return read_mr(found[0]) if found else None

    def open_pr(self, conn: Connection, repo: RepoRef, *, head_branch: str, base_branch: str,
                title: str, body: str, draft: bool) -> PullRequest:
        if draft and not _DRAFT.match(title):
            title = "Draft: " + title
        data = API.json(conn, "POST", _project(repo) + "/merge_requests", body={
            "source_branch": head_branch, "target_branch": base_branch, "title": title, "description": body})
        with readable("GitLab", "the new merge request"):
            return read_mr(data)

    def get_pr(self, conn: Connection, repo: RepoRef, number: int) -> PullRequest:
        with readable("GitLab", "the merge request"):
            return read_mr(API.json(conn, "GET", _mr(repo, number)))

    def mark_ready(self, conn: Connection, repo: RepoRef, number: int) -> PullRequest:
        mr = API.json(conn, "GET", _mr(repo, number))
        with readable("GitLab", "the merge request"):
            title = mr["title"]
            if _DRAFT.match(title):
                mr = API.json(conn, "PUT", _mr(repo, number), body={"title": _DRAFT.sub("", title, count=1)})
            return read_mr(mr)

    def get_pr_if_changed(self, conn: Connection, repo: RepoRef, number: int,
                          validators: Mapping[str, str]) -> tuple[PullRequest | None, dict[str, str]]:
        answer = API.call(conn, "GET", _mr(repo, number), validators=validators)
        if answer.status == 304:
            return None, dict(validators)
        with readable("GitLab", "the merge request"):
            return read_mr(answer.body), answer.validators

    def reviews(self, conn: Connection, repo: RepoRef, number: int) -> list[Review]:
        """One Review per person: their reviewer state (or approval), with their diff notes."""
        mr = API.json(conn, "GET", _mr(repo, number))
        reviewers = API.json(conn, "GET", _mr(repo, number) + "/reviewers") or []  # not paginated
        approvals = API.json(conn, "GET", _mr(repo, number) + "/approvals")
        discussions = API.get_list(conn, _mr(repo, number) + "/discussions")
        with readable("GitLab", "the reviews"):
            web_url = mr.get("web_url") or ""
            notes: dict[str, list[ReviewComment]] = {}
            last: dict[str, str] = {}
            for discussion in discussions:
                for note in discussion.get("notes") or []:
                    if note.get("system") or note.get("type") != "DiffNote":
                        continue
                    c = read_note(note, web_url)
                    notes.setdefault(c.author, []).append(c)
                    last[c.author] = max(last.get(c.author, ""), c.created_at)
            states: dict[str, ReviewState] = {u: "commented" for u in notes}
            ids = {c.author: c.author_id for cs in notes.values() for c in cs}
            for a in approvals.get("approved_by") or []:
                user = mapping(a.get("user"))
                states[user.get("username") or ""] = "approved"
                ids[user.get("username") or ""] = str(user.get("id") or "")
            for r in reviewers:
                user = mapping(r.get("user"))
                who = user.get("username") or ""
                said = _REVIEWER_STATES.get(r.get("state") or "")
                if said:
                    states[who], ids[who] = said, str(user.get("id") or "")
            return [Review(id=f"{who}:{state}:{last.get(who, '')}", author=who, state=state,
                           comments=tuple(notes.get(who, ())), submitted_at=last.get(who, ""),
                           author_id=ids.get(who, ""))
                    for who, state in states.items() if who]

    def comments(self, conn: Connection, repo: RepoRef, number: int, since: str = "") -> list[ReviewComment]:
        raw = API.get_list(conn, _mr(repo, number) + "/notes", params={"sort": "asc", "order_by": "created_at"})
        with readable("GitLab", "the notes"):
            return [read_note(n) for n in raw
                    if not n.get("system") and n.get("type") != "DiffNote" and (n.get("created_at") or "") > since]

    def checks(self, conn: Connection, repo: RepoRef, sha: str) -> list[Check]:
        return self.checks_if_changed(conn, repo, sha, {})[0] or []

    def checks_if_changed(self, conn: Connection, repo: RepoRef, sha: str,
                          validators: Mapping[str, str]) -> tuple[list[Check] | None, dict[str, str]]:
        """The commit's statuses (one per CI job, and external ones), read conditionally; a
        failed job's log tail is read only when something changed."""
        answer = API.call(conn, "GET", f"{_project(repo)}/repository/commits/{segment(sha)}/statuses",
                          params={"per_page": 100}, validators=validators)
        if answer.status == 304:
            return None, dict(validators)
        return self._read_statuses(conn, repo, answer.body), answer.validators

    def _read_statuses(self, conn: Connection, repo: RepoRef, statuses: Any) -> list[Check]:
        with readable("GitLab", "the commit statuses"):
            out = []
            for s in statuses:
                state = _STATES.get(s.get("status") or "", "pending")
                if s.get("allow_failure") and state == "failure":
                    state = "success"
                excerpt = s.get("description") or ""
                if state == "failure" and s.get("id"):
                    excerpt = self._job_log_tail(conn, repo, int(s["id"])) or excerpt
                out.append(Check(name=s.get("name") or "pipeline", state=state, url=s.get("target_url") or "",
                                 excerpt=excerpt))
            return out

    def _job_log_tail(self, conn: Connection, repo: RepoRef, job_id: int) -> str:
        """The end of a failed CI job's log (a status that is not a job has none: "")."""
        try:
            answer = API.call(conn, "GET", f"{_project(repo)}/jobs/{job_id}/trace", text=True, accept_missing=True)
        except ForgeRefused:
            return ""
        if answer.status != 200 or not isinstance(answer.body, str):
            return ""
        return _ANSI.sub("", answer.body)[-LOG_TAIL:].strip()

    def merge(self, conn: Connection, repo: RepoRef, number: int, *, method: MergeMethod,
              head_sha: str) -> Merged:
        request: dict[str, Any] = {"squash": method == "squash"}
        if head_sha:
            request["sha"] = head_sha
        try:
            data = API.json(conn, "PUT", _mr(repo, number) + "/merge", body=request)
        except ForgeRefused as e:
            raise ForgeRefused(self._why_not_mergeable(conn, repo, number, str(e)), e.status) from None
        with readable("GitLab", "the merge"):
            sha = data.get("merge_commit_sha") or data.get("squash_commit_sha") or data.get("sha") or ""
            return Merged(sha=sha, method=method)

    def _why_not_mergeable(self, conn: Connection, repo: RepoRef, number: int, said: str) -> str:
        """GitLab's merge refusal is often only "405 Method Not Allowed"; its MR says why."""
        try:
            status = API.json(conn, "GET", _mr(repo, number)).get("detailed_merge_status") or ""
        except (ForgeRefused, AttributeError):
            return said
        return f"{said} (merge status: {status.replace('_', ' ')})" if status and status != "mergeable" else said

    def author_may_write(self, conn: Connection, repo: RepoRef, author: str, author_id: str = "") -> bool:
        """GitLab asks about a member by id (inherited memberships included): Developer (30) or
        above may send work. No id (the forge did not give one) or not a member: no."""
        if not author_id.isdigit():
            return False
        try:
            data = API.json(conn, "GET", f"{_project(repo)}/members/all/{author_id}")
        except ForgeRefused as e:
            if e.status == 404:  # not a member
                return False
            raise
        level = mapping(data).get("access_level")
        return isinstance(level, int) and level >= _DEVELOPER

    def close_pr(self, conn: Connection, repo: RepoRef, number: int) -> None:
        API.call(conn, "PUT", _mr(repo, number), body={"state_event": "close"})

    def delete_branch(self, conn: Connection, repo: RepoRef, branch: str) -> None:
        API.call(conn, "DELETE", f"{_project(repo)}/repository/branches/{segment(branch)}", accept_missing=True)

    def verify_webhook(self, headers: Mapping[str, str], body: bytes, secret: str) -> None:
        require_token(header(headers, "X-Gitlab-Token"), secret, what="X-Gitlab-Token")

    def parse_webhook(self, headers: Mapping[str, str], body: bytes) -> ForgeEvent:
        event = header(headers, "X-Gitlab-Event")
        if not event:
            raise WebhookRejected("the delivery has no X-Gitlab-Event header")
        payload = json_object(body)
        delivery = header(headers, "X-Gitlab-Event-UUID") or body_digest(body)
        with readable_webhook(event):
            return _event(event, delivery, payload)


def _event(event: str, delivery: str, payload: dict[str, Any]) -> ForgeEvent:
    """Merge Request Hook (approved/unapproved are reviews), Note Hook on an MR, Pipeline Hook,
    Job Hook; anything else is "other"."""
    project = mapping(payload.get("project"))
    attrs = mapping(payload.get("object_attributes"))
    base: dict[str, Any] = {"delivery_id": delivery, "repo_path": project.get("path_with_namespace") or "",
            "raw_event": f"{event}.{attrs.get('action') or attrs.get('status') or ''}".rstrip(".")}
    if event == "Merge Request Hook":
        pr = read_mr(attrs)
        on_pr: dict[str, Any] = {"pr_number": pr.number, "head_branch": pr.head_branch, "head_sha": pr.head_sha, "pr": pr}
        action = attrs.get("action") or ""
        who_id = str(mapping(payload.get("user")).get("id") or "")
        if action in ("approved", "approval", "unapproved", "unapproval"):
            who = mapping(payload.get("user")).get("username") or ""
            state: ReviewState = "approved" if action in ("approved", "approval") else "none"
            return ForgeEvent(kind="review", review=Review(id=f"{who}:{action}:{delivery}", author=who, state=state,
                                                           author_id=who_id), **base, **on_pr)
        said = _reviewer_state(payload) if action == "update" and not attrs.get("oldrev") else None
        if said:  # a reviewer's "request changes" / "reviewed" arrives as an MR update by them
            who = mapping(payload.get("user")).get("username") or ""
            return ForgeEvent(kind="review", review=Review(id=f"{who}:{said}:{delivery}", author=who, state=said,
                                                           author_id=who_id), **base, **on_pr)
        return ForgeEvent(kind="pr", **base, **on_pr)
    if event == "Note Hook":
        mr = mapping(payload.get("merge_request"))
        if attrs.get("noteable_type") != "MergeRequest" or not mr:
            return ForgeEvent(kind="other", **base)
        note = read_note({**attrs, "author": payload.get("user")})
        note = ReviewComment(**{**note.__dict__, "url": attrs.get("url") or ""})
        return ForgeEvent(kind="comment", comment=note, pr_number=int(mr["iid"]), head_branch=mr.get("source_branch"),
                          head_sha=mapping(mr.get("last_commit")).get("id"), **base)
    if event == "Pipeline Hook":
        mr = mapping(payload.get("merge_request"))
        pipeline_state = _STATES.get(attrs.get("status") or "", "pending")
        failed = [b.get("name") for b in payload.get("builds") or [] if b.get("status") == "failed"]
        check = Check(name="pipeline", state=pipeline_state, url=attrs.get("url") or "",
                      excerpt=("failed jobs: " + ", ".join(map(str, failed))) if failed else "")
        return ForgeEvent(kind="check", check=check, head_sha=attrs.get("sha"), head_branch=attrs.get("ref"),
                          pr_number=int(mr["iid"]) if mr.get("iid") else None, **base)
    if event == "Job Hook":
        check = Check(name=payload.get("build_name") or "job", state=_STATES.get(payload.get("build_status") or "", "pending"),
                      excerpt=payload.get("build_failure_reason") or "")
        return ForgeEvent(kind="check", check=check, head_sha=payload.get("sha"), head_branch=payload.get("ref"),
                          **{**base, "repo_path": base["repo_path"] or mapping(payload.get("project")).get("path_with_namespace") or ""})
    return ForgeEvent(kind="other", **base)


def _reviewer_state(payload: Mapping[str, Any]) -> ReviewState | None:
    """The state the acting user holds as a reviewer of the MR (payload `reviewers`), if any."""
    who = mapping(payload.get("user")).get("username")
    for reviewer in payload.get("reviewers") or []:
        if isinstance(reviewer, dict) and who and reviewer.get("username") == who:
            return _REVIEWER_STATES.get(reviewer.get("state") or "")
    return None


register(GitLabForge)
