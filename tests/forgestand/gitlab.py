"""The GitLab v4 stand-in (<base>/api/v4).

Held to GitLab's published openapi_v2 where it describes the operation, and for the four it lacks
(the current user, MR discussions and notes, a job's log as text) to a description DERIVED from
GitLab's API docs: see specs/README.md. GitLab's shapes: a project is addressed by numeric id or URL-encoded path;
a draft is a title starting "Draft:"; reviews are approvals, reviewer states (requested_changes)
and discussions whose DiffNotes carry a position; CI is commit statuses and pipelines with jobs.
With required checks on the target branch (GitLab's "Pipelines must succeed"), a merge is refused
with GitLab's 405 "Method Not Allowed" and the MR's detailed_merge_status says "ci_must_pass".
"""

from __future__ import annotations

import hashlib
from typing import Any

from . import openapi
from .app import Answer, Ctx, Flavour
from .state import PR, MergeRefused, Repo, git, now, user_id_of
from .webhooks import Delivery

DRAFT_PREFIXES = ("Draft:", "[Draft]", "(Draft)", "Draft -", "WIP:", "[WIP]")
STATUS = {"success": "success", "failure": "failed", "pending": "running"}


def is_draft(title: str) -> bool:
    return title.lower().startswith(tuple(p.lower() for p in DRAFT_PREFIXES))


class GitLab(Flavour):
    kind = "gitlab"
    api_prefix = "/api/v4"

    def __init__(self) -> None:
        self.handlers = {
            # operationIds of GitLab's published openapi_v2
            "getApiV4ProjectsId": self.get_project, "getApiV4ProjectsIdMergeRequests": self.list_mrs,
            "postApiV4ProjectsIdMergeRequests": self.create_mr,
            "getApiV4ProjectsIdMergeRequestsMergeRequestIid": self.get_mr,
            "putApiV4ProjectsIdMergeRequestsMergeRequestIid": self.update_mr,
            "putApiV4ProjectsIdMergeRequestsMergeRequestIidMerge": self.merge,
            "getApiV4ProjectsIdMergeRequestsMergeRequestIidApprovals": self.approvals,
            "getApiV4ProjectsIdMergeRequestsMergeRequestIidReviewers": self.reviewers,
            "getApiV4ProjectsIdMergeRequestsMergeRequestIidPipelines": self.mr_pipelines,
            "getApiV4ProjectsIdPipelinesPipelineIdJobs": self.pipeline_jobs,
            "getApiV4ProjectsIdRepositoryCommitsShaStatuses": self.statuses,
            "deleteApiV4ProjectsIdRepositoryBranchesBranch": self.delete_branch,
            # operations the published description lacks (specs/gitlab-v4-derived.json)
            "getUser": self.whoami, "listMergeRequestDiscussions": self.discussions,
            "listMergeRequestNotes": self.notes, "getJobLog": self.job_log,
            "getProjectMemberAll": self.member,
        }

    def description(self) -> openapi.Descriptions:
        return openapi.gitlab()

    def presented_token(self, headers: dict[str, str]) -> str | None:
        if "private-token" in headers:
            return headers["private-token"]
        scheme, _, value = headers.get("authorization", "").partition(" ")
        return value.strip() if scheme.lower() == "bearer" else None

    def error(self, status: int, message: str) -> Answer:
        return Answer(status, {"message": message})

    def unauthorized(self) -> Answer:
        return Answer(401, {"message": "401 Unauthorized"})

    def not_found(self) -> Answer:
        return Answer(404, {"message": "404 Not found"})

    def rate_limited(self, standin: Any, retry_after: int) -> Answer:
        return Answer(429, {"message": "429 Too Many Requests"}, {"Retry-After": str(retry_after),
                                                                  "RateLimit-Remaining": "0"})

    def invalid(self, problems: list[str]) -> Answer:
        return Answer(400, {"error": "; ".join(problems)})

    # -- shapes ----------------------------------------------------------------------------------
    def user(self, standin: Any, login: str) -> dict:
        uid = standin.user_id if login == standin.login else user_id_of(login)
        return {"id": uid, "username": login, "name": login, "state": "active", "locked": False,
                "avatar_url": None, "web_url": f"{standin.base_url}/{login}"}

    def project_json(self, standin: Any, repo: Repo) -> dict:
        namespace = repo.owner
        return {"id": repo.id, "name": repo.name, "path": repo.name, "path_with_namespace": repo.path,
                "name_with_namespace": repo.path.replace("/", " / "), "default_branch": repo.default_branch,
                "web_url": repo.web_url, "http_url_to_repo": repo.clone_url,
                "ssh_url_to_repo": f"git@127.0.0.1:{repo.path}.git", "visibility": "private",
                "namespace": {"id": user_id_of(namespace), "name": namespace.rsplit("/", 1)[-1],
                              "path": namespace.rsplit("/", 1)[-1], "kind": "group", "full_path": namespace},
                "merge_method": "merge" if "merge" in repo.merge_methods else "rebase_merge",
                "squash_option": "default_off" if "squash" in repo.merge_methods else "never",
                "only_allow_merge_if_pipeline_succeeds": repo.default_branch in repo.protected,
                "remove_source_branch_after_merge": False, "permissions": {"project_access": {"access_level": 40}}}

    def detailed_status(self, repo: Repo, pr: PR) -> str:
        if pr.state != "open":
            return "not_open"
        if is_draft(pr.title):
            return "draft_status"
        if any(r.state == "changes_requested" for r in pr.reviews):
            return "requested_changes"
        return "ci_must_pass" if repo.missing_checks(pr) else "mergeable"

    def mr_json(self, standin: Any, repo: Repo, pr: PR) -> dict:
        repo.refresh(pr)
        merged_by = self.user(standin, pr.merged_by) if pr.merged_by else None
        return {"id": pr.id, "iid": pr.number, "project_id": repo.id, "title": pr.title, "description": pr.body,
                "state": {"open": "opened"}.get(pr.state, pr.state), "created_at": pr.created_at,
                "updated_at": pr.updated_at, "merged_by": merged_by, "merge_user": merged_by, "merged_at": pr.merged_at,
                "closed_by": None, "closed_at": pr.closed_at if pr.state == "closed" else None,
                "target_branch": pr.base, "source_branch": pr.head, "author": self.user(standin, pr.author),
                "assignees": [], "reviewers": [self.user(standin, r.author) for r in pr.reviews],
                "source_project_id": repo.id, "target_project_id": repo.id, "labels": [],
                "draft": is_draft(pr.title), "work_in_progress": is_draft(pr.title), "merge_when_pipeline_succeeds": False,
                "merge_status": "can_be_merged", "detailed_merge_status": self.detailed_status(repo, pr),
                "sha": pr.head_sha, "merge_commit_sha": pr.merged_sha if pr.merge_method == "merge" else None,
                "squash_commit_sha": pr.merged_sha if pr.merge_method == "squash" else None,
                "squash": False, "squash_on_merge": False, "user_notes_count": len(pr.comments),
                "should_remove_source_branch": None, "force_remove_source_branch": False,
                "web_url": f"{repo.web_url}/-/merge_requests/{pr.number}",
                "references": {"short": f"!{pr.number}", "relative": f"!{pr.number}", "full": f"{repo.path}!{pr.number}"},
                "diff_refs": {"base_sha": pr.base_sha, "head_sha": pr.head_sha, "start_sha": pr.base_sha},
                "head_pipeline": None, "has_conflicts": False, "blocking_discussions_resolved": True}

    def note_json(self, standin: Any, pr: PR, c: Any) -> dict:
        position = None
        if c.path:
            position = {"base_sha": pr.base_sha, "start_sha": pr.base_sha, "head_sha": c.commit_id,
                        "old_path": c.path, "new_path": c.path, "position_type": "text", "old_line": None, "new_line": c.line}
        return {"id": c.id, "type": "DiffNote" if c.path else "DiscussionNote", "body": c.body,
                "author": self.user(standin, c.author), "created_at": c.created_at, "updated_at": c.created_at,
                "system": False, "noteable_id": pr.id, "noteable_type": "MergeRequest", "noteable_iid": pr.number,
                "resolvable": bool(c.path), "resolved": False, "position": position}

    def all_notes(self, pr: PR) -> list[Any]:
        from .state import Comment
        notes = [c for c in pr.comments]
        for review in pr.reviews:
            if review.body:
                notes.append(Comment(review.id, review.author, review.body, None, None, review.id, review.commit_id,
                                     review.submitted_at))
            notes.extend(review.comments)
        return sorted(notes, key=lambda n: n.id)

    def pipeline_for(self, repo: Repo, pr: PR, sha: str) -> dict | None:
        runs = repo.checks_for(sha)
        if not runs:
            return None
        pid = int(hashlib.sha1(sha.encode()).hexdigest()[:6], 16)
        return {"id": pid, "iid": pid % 1000, "project_id": repo.id, "sha": sha, "ref": pr.head if pr else "",
                "status": STATUS[repo.combined(sha)], "source": "merge_request_event", "created_at": runs[0].created_at,
                "updated_at": runs[-1].updated_at, "web_url": f"{repo.web_url}/-/pipelines/{pid}"}

    # -- handlers ----------------------------------------------------------------------------------
    def _repo(self, ctx: Ctx) -> Repo | None:
        ident = ctx.params["id"]
        if ident.isdigit():
            return next((r for r in ctx.standin.repos.values() if r.id == int(ident)), None)
        return ctx.standin.repos.get(ident)

    def _mr(self, ctx: Ctx) -> tuple[Repo, PR] | None:
        repo = self._repo(ctx)
        pr = repo.pr(int(ctx.params["merge_request_iid"])) if repo else None
        return (repo, pr) if repo and pr else None

    #: The stand-in's roles (GitHub's names) as GitLab access levels; "read" is no membership.
    LEVELS = {"admin": 50, "maintain": 40, "write": 30, "triage": 20}

    def member(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        if repo is None:
            return Answer(404, {"message": "404 Project Not Found"})
        uid = int(ctx.params["user_id"])
        logins = [ctx.standin.login, *repo.permissions]
        login = next((u for u in logins if (ctx.standin.user_id if u == ctx.standin.login else user_id_of(u)) == uid), None)
        level = self.LEVELS.get(repo.role_of(login)) if login else None
        if login is None or level is None:
            return Answer(404, {"message": "404 Not found"})
        return Answer(200, {**self.user(ctx.standin, login), "access_level": level, "expires_at": None})

    def whoami(self, ctx: Ctx) -> Answer:
        me = self.user(ctx.standin, ctx.standin.login)
        return Answer(200, {**me, "created_at": "2026-01-01T00:00:00Z", "bot": True, "email": "bot@standin.invalid",
                            "public_email": None})

    def get_project(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        return Answer(200, self.project_json(ctx.standin, repo)) if repo else Answer(404, {"message": "404 Project Not Found"})

    def list_mrs(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        if repo is None:
            return Answer(404, {"message": "404 Project Not Found"})
        q = ctx.query
        state = q.get("state", "all")
        found = []
        for pr in sorted(repo.prs, key=lambda p: -p.number):
            gl_state = {"open": "opened"}.get(pr.state, pr.state)
            if state != "all" and state != gl_state:
                continue
            if q.get("source_branch") not in (None, pr.head) or q.get("target_branch") not in (None, pr.base):
                continue
            found.append(self.mr_json(ctx.standin, repo, pr))
        return Answer(200, found)

    def create_mr(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        if repo is None:
            return Answer(404, {"message": "404 Project Not Found"})
        b = ctx.body
        if repo.head(b["source_branch"]) is None:
            return Answer(400, {"message": {"source_branch": ["is invalid"]}})
        if repo.head(b["target_branch"]) is None:
            return Answer(400, {"message": {"target_branch": ["is invalid"]}})
        if any(p.head == b["source_branch"] and p.base == b["target_branch"] and p.state == "open" for p in repo.prs):
            return Answer(409, {"message": [f"Another open merge request already exists for this source branch: "
                                            f"!{next(p.number for p in repo.prs if p.head == b['source_branch'])}"]})
        pr = ctx.standin.open_pr(repo.path, b["source_branch"], b["target_branch"], b["title"],
                                 b.get("description", ""), is_draft(b["title"]))
        return Answer(201, self.mr_json(ctx.standin, repo, pr))

    def get_mr(self, ctx: Ctx) -> Answer:
        found = self._mr(ctx)
        return Answer(200, self.mr_json(ctx.standin, *found)) if found else Answer(404, {"message": "404 Not found"})

    def update_mr(self, ctx: Ctx) -> Answer:
        found = self._mr(ctx)
        if not found:
            return self.not_found()
        repo, pr = found
        b = ctx.body
        pr.title, pr.body, pr.base = b.get("title", pr.title), b.get("description", pr.body), b.get("target_branch", pr.base)
        pr.draft = is_draft(pr.title)
        if b.get("state_event") == "close" and pr.state == "open":
            pr.state, pr.closed_at = "closed", now()
            ctx.standin.emit("pr", repo.path, pr.number, action="closed")
        elif b.get("state_event") == "reopen" and pr.state == "closed":
            pr.state, pr.closed_at = "open", None
            ctx.standin.emit("pr", repo.path, pr.number, action="reopened")
        elif {"title", "description", "target_branch"} & set(b):
            ctx.standin.emit("pr", repo.path, pr.number, action="update")
        pr.updated_at = now()
        return Answer(200, self.mr_json(ctx.standin, repo, pr))

    def merge(self, ctx: Ctx) -> Answer:
        found = self._mr(ctx)
        if not found:
            return self.not_found()
        repo, pr = found
        b = ctx.body or {}
        method = "squash" if b.get("squash") else ("merge" if "merge" in repo.merge_methods else "rebase")
        if pr.state == "open" and is_draft(pr.title):
            return self.error(405, "405 Method Not Allowed")
        try:
            repo.merge(pr, method, ctx.standin.login, expected_sha=b.get("sha"))
        except MergeRefused as refused:
            if refused.reason == "sha":
                return self.error(409, "SHA does not match HEAD of source branch")
            if refused.reason == "conflict":
                return self.error(422, "Branch cannot be merged")
            return self.error(405, "405 Method Not Allowed")
        ctx.standin.emit("pr", repo.path, pr.number, action="closed")
        if b.get("should_remove_source_branch"):
            git(repo.bare, "update-ref", "-d", f"refs/heads/{pr.head}")
        return Answer(200, self.mr_json(ctx.standin, repo, pr))

    def discussions(self, ctx: Ctx) -> Answer:
        found = self._mr(ctx)
        if not found:
            return self.not_found()
        pr = found[1]
        return Answer(200, [{"id": hashlib.sha1(str(n.id).encode()).hexdigest(), "individual_note": not n.path,
                             "notes": [self.note_json(ctx.standin, pr, n)]} for n in self.all_notes(pr)])

    def notes(self, ctx: Ctx) -> Answer:
        found = self._mr(ctx)
        if not found:
            return self.not_found()
        notes = [self.note_json(ctx.standin, found[1], n) for n in self.all_notes(found[1])]
        return Answer(200, notes[::-1] if ctx.query.get("sort", "desc") == "desc" else notes)

    def approvals(self, ctx: Ctx) -> Answer:
        found = self._mr(ctx)
        if not found:
            return self.not_found()
        repo, pr = found
        approvers: list[str] = []
        for review in pr.reviews:  # a reviewer's latest word counts
            approvers = [a for a in approvers if a != review.author] + ([review.author] if review.state == "approved" else [])
        return Answer(200, {"id": pr.id, "iid": pr.number, "project_id": repo.id, "title": pr.title,
                            "state": {"open": "opened"}.get(pr.state, pr.state), "approved": bool(approvers),
                            "approvals_required": 0, "approvals_left": 0,
                            "approved_by": [{"user": self.user(ctx.standin, a)} for a in approvers]})

    def reviewers(self, ctx: Ctx) -> Answer:
        found = self._mr(ctx)
        if not found:
            return self.not_found()
        latest: dict[str, Any] = {}
        for review in found[1].reviews:
            latest[review.author] = review
        state = {"approved": "approved", "changes_requested": "requested_changes", "commented": "reviewed"}
        return Answer(200, [{"user": self.user(ctx.standin, r.author), "state": state[r.state],
                             "created_at": r.submitted_at} for r in latest.values()])

    def mr_pipelines(self, ctx: Ctx) -> Answer:
        found = self._mr(ctx)
        if not found:
            return self.not_found()
        repo, pr = found
        repo.refresh(pr)
        pipeline = self.pipeline_for(repo, pr, pr.head_sha)
        return Answer(200, [pipeline] if pipeline else [])

    def _pipeline_runs(self, repo: Repo, pipeline_id: int) -> tuple[str, list[Any]] | None:
        for sha in {r.sha for r in repo.checks}:
            if int(hashlib.sha1(sha.encode()).hexdigest()[:6], 16) == pipeline_id:
                return sha, repo.checks_for(sha)
        return None

    def pipeline_jobs(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        found = self._pipeline_runs(repo, int(ctx.params["pipeline_id"])) if repo else None
        if not repo or not found:
            return Answer(404, {"message": "404 Not found"})
        sha, runs = found
        return Answer(200, [{"id": r.id, "name": r.name, "stage": "test", "status": STATUS[r.state], "ref": "",
                             "created_at": r.created_at, "started_at": r.created_at,
                             "finished_at": r.updated_at if r.state != "pending" else None,
                             "web_url": f"{repo.web_url}/-/jobs/{r.id}", "allow_failure": False,
                             "pipeline": {"id": int(ctx.params["pipeline_id"]), "project_id": repo.id, "sha": sha,
                                          "ref": "", "status": STATUS[repo.combined(sha)]}} for r in runs])

    def job_log(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        run = next((r for r in repo.checks if r.id == int(ctx.params["job_id"])), None) if repo else None
        if run is None:
            return Answer(404, {"message": "404 Not found"})
        return Answer(200, run.log, {"Content-Type": "text/plain"})

    def statuses(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        sha = repo.resolve(ctx.params["sha"]) if repo else None
        if not repo or not sha:
            return Answer(404, {"message": "404 Commit Not Found"})
        return Answer(200, [{"id": r.id, "sha": sha, "ref": None, "status": STATUS[r.state], "name": r.name,
                             "target_url": f"{repo.web_url}/-/jobs/{r.id}", "description": r.log[-255:] or None,
                             "created_at": r.created_at, "started_at": r.created_at, "finished_at": r.updated_at,
                             "allow_failure": False, "coverage": None, "pipeline_id": None,
                             "author": self.user(ctx.standin, "ci-bot")} for r in repo.checks_for(sha)])

    def delete_branch(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        branch = ctx.params["branch"]
        if repo is None or repo.head(branch) is None:
            return Answer(404, {"message": "404 Branch Not Found"})
        if branch == repo.default_branch or branch in repo.protected:
            return Answer(405, {"message": "405 Method Not Allowed"})
        git(repo.bare, "update-ref", "-d", f"refs/heads/{branch}")
        return Answer(204)

    # -- webhooks ----------------------------------------------------------------------------------
    def build_webhook(self, standin: Any, event: str, repo: Repo, number: int | None, **extra: Any) -> Delivery:
        from .gitlab_hooks import build
        return build(self, standin, event, repo, standin.pr(repo.path, number), extra)
