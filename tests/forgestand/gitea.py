"""The Gitea/Forgejo v1 stand-in (<base>/api/v1), held to Gitea 1.22's published swagger.v1.json.

Forgejo is served by the same module (its v1 API is Gitea's for everything Predictor X calls); the
difference on the wire is the webhook headers (X-Forgejo-*, as well as X-Gitea-*). Gitea has no
draft flag to set: a title starting "WIP:" or "[WIP]" makes a PR a draft, as on Gitea.
Gitea publishes no webhook payload schema; payloads follow Gitea's documented payload structs
(modules/structs/hook.go) and their pull_request/repository/user parts are validated against the
swagger definitions of the same names.
"""

from __future__ import annotations

from typing import Any

from . import openapi
from .app import Answer, Ctx, Flavour
from .state import PR, MergeRefused, Repo, git, now, user_id_of
from .webhooks import Delivery

WIP_PREFIXES = ("WIP:", "[WIP]")
DO_TO_METHOD = {"merge": "merge", "squash": "squash", "rebase": "rebase", "rebase-merge": "rebase"}


class Gitea(Flavour):
    api_prefix = "/api/v1"

    def __init__(self, kind: str = "gitea") -> None:
        self.kind = kind
        self.handlers = {
            "userGetCurrent": self.whoami, "repoGet": self.get_repo, "repoListPullRequests": self.list_prs,
            "repoGetPullRequestByBaseHead": self.pr_by_base_head, "repoCreatePullRequest": self.create_pr,
            "repoGetPullRequest": self.get_pr, "repoEditPullRequest": self.edit_pr,
            "repoListPullReviews": self.list_reviews, "repoGetPullReviewComments": self.review_comments,
            "issueGetComments": self.list_comments, "repoGetCombinedStatusByRef": self.combined_status,
            "repoListStatusesByRef": self.list_statuses, "repoListStatuses": self.list_statuses,
            "repoGetRepoPermissions": self.permission,
            "repoMergePullRequest": self.merge, "repoDeleteBranch": self.delete_branch,
        }

    def description(self) -> openapi.ApiDescription:
        return openapi.gitea()

    def presented_token(self, headers: dict[str, str]) -> str | None:
        scheme, _, value = headers.get("authorization", "").partition(" ")
        return value.strip() if scheme.lower() in ("token", "bearer") else None

    def error(self, status: int, message: str) -> Answer:
        return Answer(status, {"message": message, "url": "/api/swagger"})

    def unauthorized(self) -> Answer:
        return Answer(401, {"message": "token is required", "url": "/api/swagger"})

    def not_found(self) -> Answer:
        return Answer(404, {"message": "The target couldn't be found.", "url": "/api/swagger", "errors": []})

    def invalid(self, problems: list[str]) -> Answer:
        return Answer(422, {"message": "; ".join(problems), "url": "/api/swagger"})

    # -- shapes ----------------------------------------------------------------------------------
    def user(self, standin: Any, login: str) -> dict:
        uid = standin.user_id if login == standin.login else user_id_of(login)
        return {"id": uid, "login": login, "login_name": "", "source_id": 0, "full_name": login,
                "email": f"{login}@noreply.localhost", "avatar_url": f"{standin.base_url}/avatars/{uid}",
                "html_url": f"{standin.base_url}/{login}", "language": "", "is_admin": False,
                "last_login": "0001-01-01T00:00:00Z", "created": "2026-01-01T00:00:00Z", "restricted": False, "active": True,
                "prohibit_login": False, "location": "", "website": "", "description": "", "visibility": "public",
                "followers_count": 0, "following_count": 0, "starred_repos_count": 0, "username": login}

    def repo_json(self, standin: Any, repo: Repo) -> dict:
        return {"id": repo.id, "owner": self.user(standin, repo.owner), "name": repo.name, "full_name": repo.path,
                "description": "", "empty": False, "private": False, "fork": False, "template": False,
                "parent": None, "mirror": False, "size": 1, "language": "", "languages_url": "",
                "html_url": repo.web_url, "url": f"{standin.api_url}/repos/{repo.path}", "link": "",
                "ssh_url": f"git@127.0.0.1:{repo.path}.git", "clone_url": repo.clone_url, "original_url": "",
                "website": "", "stars_count": 0, "forks_count": 0, "watchers_count": 0, "open_issues_count": 0,
                "open_pr_counter": sum(p.state == "open" for p in repo.prs), "release_counter": 0,
                "default_branch": repo.default_branch, "archived": False, "created_at": repo.created_at, "updated_at": repo.created_at,
                "archived_at": "1970-01-01T00:00:00Z", "has_issues": True, "has_wiki": False,
                "has_pull_requests": True, "has_projects": False, "has_releases": True, "has_packages": False,
                "has_actions": False, "ignore_whitespace_conflicts": False,
                "allow_merge_commits": "merge" in repo.merge_methods, "allow_rebase": "rebase" in repo.merge_methods,
                "allow_rebase_explicit": "rebase" in repo.merge_methods, "allow_squash_merge": "squash" in repo.merge_methods,
                "allow_fast_forward_only_merge": False, "allow_rebase_update": True,
                "default_delete_branch_after_merge": False, "default_merge_style": repo.merge_methods[0],
                "default_allow_maintainer_edit": False, "avatar_url": "", "internal": False, "mirror_interval": "",
                "object_format_name": "sha1", "mirror_updated": "0001-01-01T00:00:00Z", "repo_transfer": None,
                "permissions": {"admin": True, "push": True, "pull": True}}

    def pr_json(self, standin: Any, repo: Repo, pr: PR) -> dict:
        repo.refresh(pr)
        shaped_repo = self.repo_json(standin, repo)
        branch = lambda ref, sha: {"label": ref, "ref": ref, "sha": sha, "repo_id": repo.id, "repo": shaped_repo}
        return {"id": pr.id, "url": f"{repo.web_url}/pulls/{pr.number}", "number": pr.number,
                "user": self.user(standin, pr.author), "title": pr.title, "body": pr.body, "labels": [],
                "milestone": None, "assignee": None, "assignees": None, "requested_reviewers": None,
                "state": "open" if pr.state == "open" else "closed", "draft": pr.title.upper().startswith(WIP_PREFIXES),
                "is_locked": False, "comments": len(pr.comments), "review_comments": sum(len(r.comments) for r in pr.reviews),
                "additions": 1, "deletions": 0, "changed_files": 1,
                "html_url": f"{repo.web_url}/pulls/{pr.number}", "diff_url": f"{repo.web_url}/pulls/{pr.number}.diff",
                "patch_url": f"{repo.web_url}/pulls/{pr.number}.patch",
                "mergeable": pr.state == "open", "merged": pr.state == "merged", "merged_at": pr.merged_at,
                "merge_commit_sha": pr.merged_sha,
                "merged_by": self.user(standin, pr.merged_by) if pr.merged_by else None,
                "allow_maintainer_edit": False, "base": branch(pr.base, pr.base_sha), "head": branch(pr.head, pr.head_sha),
                "merge_base": pr.base_sha, "due_date": None, "created_at": pr.created_at, "updated_at": pr.updated_at,
                "closed_at": pr.closed_at, "pin_order": 0}

    def review_json(self, standin: Any, repo: Repo, pr: PR, review: Any) -> dict:
        state = {"approved": "APPROVED", "changes_requested": "REQUEST_CHANGES"}.get(review.state, "COMMENT")
        return {"id": review.id, "user": self.user(standin, review.author), "team": None, "state": state,
                "body": review.body, "commit_id": review.commit_id, "stale": False, "official": True,
                "dismissed": False, "comments_count": len(review.comments), "submitted_at": review.submitted_at,
                "updated_at": review.submitted_at,
                "html_url": f"{repo.web_url}/pulls/{pr.number}#issuecomment-{review.id}",
                "pull_request_url": f"{repo.web_url}/pulls/{pr.number}"}

    def review_comment_json(self, standin: Any, repo: Repo, pr: PR, c: Any) -> dict:
        return {"id": c.id, "body": c.body, "user": self.user(standin, c.author), "resolver": None,
                "pull_request_review_id": c.review_id, "created_at": c.created_at, "updated_at": c.created_at,
                "path": c.path, "commit_id": c.commit_id, "original_commit_id": c.commit_id, "diff_hunk": "@@ -1 +1 @@",
                "position": c.line, "original_position": 0,
                "html_url": f"{repo.web_url}/pulls/{pr.number}/files#issuecomment-{c.id}",
                "pull_request_url": f"{repo.web_url}/pulls/{pr.number}"}

    def status_json(self, standin: Any, repo: Repo, run: Any) -> dict:
        return {"id": run.id, "status": "failure" if run.state == "failure" else run.state, "context": run.name,
                "description": run.log[-255:], "target_url": f"{repo.web_url}/actions/runs/{run.id}",
                "url": f"{standin.api_url}/repos/{repo.path}/statuses/{run.sha}", "created_at": run.created_at,
                "updated_at": run.updated_at, "creator": self.user(standin, "ci-bot")}

    # -- handlers ----------------------------------------------------------------------------------
    def _repo(self, ctx: Ctx) -> Repo | None:
        return ctx.standin.repos.get(f"{ctx.params['owner']}/{ctx.params['repo']}")

    def permission(self, ctx: Ctx) -> Answer:
        """Gitea's access modes: owner (the repository's owner), admin, write, read."""
        repo = self._repo(ctx)
        if repo is None:
            return self.not_found()
        login = ctx.params["collaborator"]
        role = repo.role_of(login)
        mode = "owner" if login == repo.owner else {"maintain": "write", "triage": "read"}.get(role, role)
        return Answer(200, {"permission": mode, "role_name": mode, "user": self.user(ctx.standin, login)})

    def _pr(self, ctx: Ctx) -> tuple[Repo, PR] | None:
        repo = self._repo(ctx)
        pr = repo.pr(int(ctx.params["index"])) if repo else None
        return (repo, pr) if repo and pr else None

    def whoami(self, ctx: Ctx) -> Answer:
        return Answer(200, self.user(ctx.standin, ctx.standin.login))

    def get_repo(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        return Answer(200, self.repo_json(ctx.standin, repo)) if repo else self.not_found()

    def list_prs(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        if repo is None:
            return self.not_found()
        state = ctx.query.get("state", "open")
        found = [p for p in sorted(repo.prs, key=lambda p: -p.number)
                 if state == "all" or (state == "open") == (p.state == "open")]
        return Answer(200, [self.pr_json(ctx.standin, repo, p) for p in found])

    def pr_by_base_head(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        if repo is None:
            return self.not_found()
        pr = next((p for p in sorted(repo.prs, key=lambda p: -p.number)
                   if p.base == ctx.params["base"] and p.head == ctx.params["head"]), None)
        return Answer(200, self.pr_json(ctx.standin, repo, pr)) if pr else self.not_found()

    def create_pr(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        if repo is None:
            return self.not_found()
        head, base = ctx.body.get("head", ""), ctx.body.get("base", "")
        if repo.head(head) is None or repo.head(base) is None:
            return self.not_found()
        existing = next((p for p in repo.prs if p.head == head and p.base == base and p.state == "open"), None)
        if existing:
            return self.error(409, f"pull request already exists for these targets [id: {existing.id}, issue_id: "
                                   f"{existing.id}, head_repo_id: {repo.id}, base_repo_id: {repo.id}, "
                                   f"head_branch: {head}, base_branch: {base}]")
        title = ctx.body.get("title", "")
        pr = ctx.standin.open_pr(repo.path, head, base, title, ctx.body.get("body", ""), title.upper().startswith(WIP_PREFIXES))
        return Answer(201, self.pr_json(ctx.standin, repo, pr))

    def get_pr(self, ctx: Ctx) -> Answer:
        found = self._pr(ctx)
        return Answer(200, self.pr_json(ctx.standin, *found)) if found else self.not_found()

    def edit_pr(self, ctx: Ctx) -> Answer:
        found = self._pr(ctx)
        if not found:
            return self.not_found()
        repo, pr = found
        for key in ("title", "body", "base"):
            if key in ctx.body:
                setattr(pr, key, ctx.body[key])
        pr.draft = pr.title.upper().startswith(WIP_PREFIXES)
        if ctx.body.get("state") == "closed" and pr.state == "open":
            pr.state, pr.closed_at = "closed", now()
            ctx.standin.emit("pr", repo.path, pr.number, action="closed")
        elif ctx.body.get("state") == "open" and pr.state == "closed":
            pr.state, pr.closed_at = "open", None
            ctx.standin.emit("pr", repo.path, pr.number, action="reopened")
        elif {"title", "body", "base"} & set(ctx.body):
            ctx.standin.emit("pr", repo.path, pr.number, action="edited")
        pr.updated_at = now()
        return Answer(201, self.pr_json(ctx.standin, repo, pr))

    def list_reviews(self, ctx: Ctx) -> Answer:
        found = self._pr(ctx)
        if not found:
            return self.not_found()
        return Answer(200, [self.review_json(ctx.standin, *found, r) for r in found[1].reviews])

    def review_comments(self, ctx: Ctx) -> Answer:
        found = self._pr(ctx)
        review = next((r for r in found[1].reviews if r.id == int(ctx.params["id"])), None) if found else None
        if not found or review is None:
            return self.not_found()
        return Answer(200, [self.review_comment_json(ctx.standin, *found, c) for c in review.comments])

    def list_comments(self, ctx: Ctx) -> Answer:
        found = self._pr(ctx)
        if not found:
            return self.not_found()
        repo, pr = found
        return Answer(200, [self.comment_json(ctx.standin, repo, pr, c) for c in pr.comments])

    def comment_json(self, standin: Any, repo: Repo, pr: PR, c: Any) -> dict:
        return {"id": c.id, "html_url": f"{repo.web_url}/pulls/{pr.number}#issuecomment-{c.id}",
                "pull_request_url": f"{repo.web_url}/pulls/{pr.number}", "issue_url": "", "user": self.user(standin, c.author),
                "original_author": "", "original_author_id": 0, "body": c.body, "assets": [],
                "created_at": c.created_at, "updated_at": c.created_at}

    def combined_status(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        sha = repo.resolve(ctx.params["ref"]) if repo else None
        if not repo or not sha:
            return self.not_found()
        statuses = [self.status_json(ctx.standin, repo, r) for r in repo.checks_for(sha)]
        state = repo.combined(sha) if statuses else "pending"
        return Answer(200, {"state": state, "sha": sha, "total_count": len(statuses), "statuses": statuses,
                            "repository": self.repo_json(ctx.standin, repo),
                            "commit_url": f"{ctx.standin.api_url}/repos/{repo.path}/git/commits/{sha}",
                            "url": f"{ctx.standin.api_url}/repos/{repo.path}/commits/{sha}/status"})

    def list_statuses(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        sha = repo.resolve(ctx.params.get("ref") or ctx.params.get("sha", "")) if repo else None
        if not repo or not sha:
            return self.not_found()
        return Answer(200, [self.status_json(ctx.standin, repo, r) for r in repo.checks if r.sha == sha][::-1])

    def merge(self, ctx: Ctx) -> Answer:
        found = self._pr(ctx)
        if not found:
            return self.not_found()
        repo, pr = found
        do = ctx.body["Do"]
        method = DO_TO_METHOD.get(do)
        if method is None:
            return self.error(405, f"merge style {do} is not allowed")
        if pr.state == "open" and pr.title.upper().startswith(WIP_PREFIXES):
            return self.error(405, "Work in progress PRs cannot be merged")
        try:
            repo.merge(pr, method, ctx.standin.login, expected_sha=ctx.body.get("head_commit_id"))
        except MergeRefused as refused:
            if refused.reason == "protected":
                return self.error(405, "not allowed to merge [reason: Not all required status checks successful]")
            if refused.reason == "sha":
                return self.error(409, "head out of date")
            if refused.reason == "method":
                return self.error(405, f"{do} merge style is not allowed")
            return self.error(405, "Please try again later")
        ctx.standin.emit("pr", repo.path, pr.number, action="closed")
        if ctx.body.get("delete_branch_after_merge"):
            git(repo.bare, "update-ref", "-d", f"refs/heads/{pr.head}")
        return Answer(200)

    def delete_branch(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        branch = ctx.params["branch"]
        if repo is None or repo.head(branch) is None:
            return self.not_found()
        if branch == repo.default_branch:
            return self.error(403, "can not delete default branch")
        git(repo.bare, "update-ref", "-d", f"refs/heads/{branch}")
        return Answer(204)

    # -- webhooks ----------------------------------------------------------------------------------
    def build_webhook(self, standin: Any, event: str, repo: Repo, number: int | None, **extra: Any) -> Delivery:
        repository = self.repo_json(standin, repo)
        sender = self.user(standin, extra.get("sender", "reviewer"))
        if event == "ping":  # Gitea's test delivery is a push event
            head = repo.head(repo.default_branch)
            return self._checked("push", {"ref": f"refs/heads/{repo.default_branch}", "before": head, "after": head,
                                          "compare_url": "", "commits": [], "total_commits": 0, "head_commit": None,
                                          "repository": repository, "pusher": sender, "sender": sender}, "push")
        pr = standin.pr(repo.path, number)
        shaped = self.pr_json(standin, repo, pr)
        base = {"number": pr.number, "pull_request": shaped, "repository": repository, "sender": sender,
                "requested_reviewer": None, "commit_id": ""}
        if event == "pr":
            action = extra.get("action", "opened")
            gitea_action = {"synchronize": "synchronized"}.get(action, action)
            return self._checked("pull_request", {"action": gitea_action, **base},
                                 "pull_request_sync" if gitea_action == "synchronized" else "pull_request")
        if event in ("review", "review_comment"):
            if event == "review":
                review = pr.review(extra.get("review_id"))
                body = review.body
            else:
                review, note = pr.inline_comment(extra.get("comment_id"))
                body = note.body
            kind = {"approved": "pull_request_review_approved",
                    "changes_requested": "pull_request_review_rejected"}.get(review.state, "pull_request_review_comment")
            if event == "review_comment":
                kind = "pull_request_review_comment"
            payload = {"action": "reviewed", **base, "sender": self.user(standin, review.author),
                       "commit_id": review.commit_id, "review": {"type": kind, "content": body}}
            # X-Gitea-Event is the short name (Gitea's HookEventType.Event()), X-Gitea-Event-Type the type
            return self._checked(kind.replace("_review_", "_"), payload, kind)
        if event == "comment":
            c = pr.comment(extra.get("comment_id"))
            issue = {"id": pr.id, "url": shaped["url"], "html_url": shaped["html_url"], "number": pr.number,
                     "user": shaped["user"], "title": pr.title, "body": pr.body, "state": shaped["state"],
                     "pull_request": {"merged": pr.state == "merged", "merged_at": pr.merged_at, "draft": shaped["draft"],
                                      "html_url": shaped["html_url"]}, "repository": {"id": repo.id, "name": repo.name,
                                                                                     "owner": repo.owner, "full_name": repo.path}}
            payload = {"action": "created", "issue": issue, "pull_request": shaped,
                       "comment": self.comment_json(standin, repo, pr, c), "repository": repository,
                       "sender": self.user(standin, c.author), "is_pull": True}
            return self._checked("issue_comment", payload, "pull_request_comment")
        if event == "check":
            run = next(r for r in reversed(repo.checks) if r.name == extra["name"] and r.sha == pr.head_sha)
            status = self.status_json(standin, repo, run)
            payload = {"commit": {"id": run.sha, "message": "", "url": f"{repo.web_url}/commit/{run.sha}"},
                       "context": run.name, "created_at": run.created_at, "description": status["description"],
                       "id": run.id, "repository": repository, "sender": self.user(standin, "ci-bot"), "sha": run.sha,
                       "state": status["status"], "target_url": status["target_url"], "updated_at": run.updated_at}
            return self._checked("status", payload, "status")
        raise ValueError(f"no {self.kind} webhook for {event!r}: pr, review, review_comment, comment, check, ping")

    def _checked(self, event: str, payload: dict, event_type: str) -> Delivery:
        description = openapi.gitea()
        problems: list[str] = []
        for key, definition in (("pull_request", "PullRequest"), ("repository", "Repository"), ("sender", "User")):
            if key in payload:
                problems += description.check_schema_at(f"/definitions/{definition}", payload[key], f"webhook {key}",
                                                        lenient=True)
        if problems:
            raise AssertionError("the stand-in built a webhook Gitea's definitions refuse: " + "; ".join(problems))
        return Delivery(event, payload, extra_headers={"X-Gitea-Event-Type": event_type})
