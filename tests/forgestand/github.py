"""The GitHub REST stand-in (api.github.com shapes, served GitHub-Enterprise style at <base>/api/v3).

Answers start from the description's own examples (`components/examples/…` of @octokit/openapi) with
the stand-in's state written over them, so every field the schema requires is there; webhook
payloads start from @octokit/webhooks-examples and are validated against @octokit/openapi-webhooks.
"""

from __future__ import annotations

import copy
import re
import time
from typing import Any

from . import openapi
from .app import Answer, Ctx, Flavour
from .state import PR, MergeRefused, Repo, now, user_id_of
from .webhooks import Delivery

DOCS = "https://docs.github.com/rest"


def example(name: str) -> Any:
    return copy.deepcopy(openapi.github_rest().document["components"]["examples"][name]["value"])


class GitHub(Flavour):
    kind = "github"
    api_prefix = "/api/v3"

    def __init__(self) -> None:
        self.handlers = {
            "users/get-authenticated": self.whoami, "repos/get": self.get_repo,
            "pulls/list": self.list_prs, "pulls/create": self.create_pr, "pulls/get": self.get_pr,
            "pulls/update": self.update_pr, "pulls/list-reviews": self.list_reviews,
            "pulls/list-comments-for-review": self.list_review_comments_of,
            "pulls/list-review-comments": self.list_review_comments, "issues/list-comments": self.list_comments,
            "checks/list-for-ref": self.list_check_runs,
            "repos/get-combined-status-for-ref": self.combined_status,
            "repos/list-commit-statuses-for-ref": self.list_statuses,
            "repos/get-collaborator-permission-level": self.permission,
            "pulls/merge": self.merge, "git/delete-ref": self.delete_ref,
        }
        self.extra_paths = {"/api/graphql": self.graphql}

    sends_last_modified = True
    RATE_LIMIT = 5000

    def common_headers(self, standin: Any, answer: Answer) -> dict[str, str]:
        """GitHub's rate-limit headers; a 304 does not count against the limit (GitHub's rule)."""
        if answer.status != 304:
            standin.rate_used += 1
        return {"X-RateLimit-Limit": str(self.RATE_LIMIT), "X-RateLimit-Used": str(standin.rate_used),
                "X-RateLimit-Remaining": str(max(0, self.RATE_LIMIT - standin.rate_used)),
                "X-RateLimit-Reset": str(standin.rate_reset), "X-RateLimit-Resource": "core",
                "X-GitHub-Media-Type": "github.v3; format=json"}

    def description(self) -> openapi.ApiDescription:
        return openapi.github_rest()

    def presented_token(self, headers: dict[str, str]) -> str | None:
        scheme, _, value = headers.get("authorization", "").partition(" ")
        return value.strip() if scheme.lower() in ("bearer", "token") else None

    def error(self, status: int, message: str) -> Answer:
        return Answer(status, {"message": message, "documentation_url": DOCS, "status": str(status)})

    def unauthorized(self) -> Answer:
        return Answer(401, {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"})

    def rate_limited(self, standin: Any, retry_after: int) -> Answer:
        """GitHub's primary rate limit: 403, X-RateLimit-Remaining 0 and the reset time."""
        standin.rate_used = self.RATE_LIMIT
        standin.rate_reset = int(time.time()) + retry_after
        return Answer(403, {"message": f"API rate limit exceeded for user ID {standin.user_id}.",
                            "documentation_url": DOCS + "/overview/rate-limits-for-the-rest-api"})

    def invalid(self, problems: list[str]) -> Answer:
        return Answer(422, {"message": "Validation Failed", "documentation_url": DOCS,
                            "errors": [{"resource": "Request", "code": "invalid", "message": p} for p in problems]})

    # -- shapes ----------------------------------------------------------------------------------
    @staticmethod
    def user(standin: Any, login: str) -> dict:
        out = example("simple-user")
        uid = standin.user_id if login == standin.login else user_id_of(login)
        api = standin.api_url
        out.update(login=login, id=uid, node_id=f"U_{uid}", html_url=f"{standin.base_url}/{login}",
                   url=f"{api}/users/{login}", type="Bot" if login == standin.login else "User")
        return out

    def repo_json(self, standin: Any, repo: Repo, full: bool = True) -> dict:
        out = example("full-repository" if full else "minimal-repository")
        api = f"{standin.api_url}/repos/{repo.path}"
        for key, value in list(out.items()):
            if isinstance(value, str) and value.startswith("https://api.github.com/repos/octocat/Hello-World"):
                out[key] = value.replace("https://api.github.com/repos/octocat/Hello-World", api)
        out.update(id=repo.id, node_id=f"R_{repo.id}", name=repo.name, full_name=repo.path,
                   owner=self.user(standin, repo.owner), html_url=repo.web_url, url=api,
                   clone_url=repo.clone_url, git_url=repo.clone_url, svn_url=repo.web_url,
                   ssh_url=f"git@127.0.0.1:{repo.path}.git", default_branch=repo.default_branch, private=False,
                   allow_merge_commit="merge" in repo.merge_methods, allow_squash_merge="squash" in repo.merge_methods,
                   allow_rebase_merge="rebase" in repo.merge_methods, delete_branch_on_merge=False, fork=False,
                   forks=0, open_issues=0, watchers=0, license=None, has_discussions=False)
        if full:
            out.pop("organization", None), out.pop("parent", None), out.pop("source", None), out.pop("template_repository", None)
        return out

    def pr_json(self, standin: Any, repo: Repo, pr: PR, simple: bool = False) -> dict:
        repo.refresh(pr)
        out = example("pull-request-simple" if simple else "pull-request")
        api = f"{standin.api_url}/repos/{repo.path}"
        base_repo = self.repo_json(standin, repo)
        user = self.user(standin, pr.author)
        out.update(
            id=pr.id, node_id=f"PR_{pr.id}", number=pr.number, state="open" if pr.state == "open" else "closed",
            title=pr.title, body=pr.body, draft=pr.draft, locked=False, user=user,
            url=f"{api}/pulls/{pr.number}", html_url=f"{repo.web_url}/pull/{pr.number}",
            diff_url=f"{repo.web_url}/pull/{pr.number}.diff", patch_url=f"{repo.web_url}/pull/{pr.number}.patch",
            issue_url=f"{api}/issues/{pr.number}", commits_url=f"{api}/pulls/{pr.number}/commits",
            review_comments_url=f"{api}/pulls/{pr.number}/comments",
            review_comment_url=f"{api}/pulls/comments{{/number}}", comments_url=f"{api}/issues/{pr.number}/comments",
            statuses_url=f"{api}/statuses/{pr.head_sha}", created_at=pr.created_at, updated_at=pr.updated_at,
            closed_at=pr.closed_at, merged_at=pr.merged_at, merge_commit_sha=pr.merged_sha,
            assignee=None, assignees=[], requested_reviewers=[], requested_teams=[], labels=[], milestone=None,
            head={"label": f"{repo.owner}:{pr.head}", "ref": pr.head, "sha": pr.head_sha, "user": user, "repo": base_repo},
            base={"label": f"{repo.owner}:{pr.base}", "ref": pr.base, "sha": pr.base_sha,
                  "user": self.user(standin, repo.owner), "repo": base_repo},
        )
        out["_links"] = {k: {"href": v} for k, v in (
            ("self", out["url"]), ("html", out["html_url"]), ("issue", out["issue_url"]),
            ("comments", out["comments_url"]), ("review_comments", out["review_comments_url"]),
            ("review_comment", out["review_comment_url"]), ("commits", out["commits_url"]),
            ("statuses", out["statuses_url"]))}
        if not simple:
            blocked = bool(repo.missing_checks(pr))
            out.update(merged=pr.state == "merged", mergeable=None if pr.state != "open" else True,
                       mergeable_state="blocked" if blocked else ("draft" if pr.draft else "clean"),
                       merged_by=self.user(standin, pr.merged_by) if pr.merged_by else None,
                       rebaseable=True, comments=len(pr.comments), review_comments=sum(len(r.comments) for r in pr.reviews),
                       maintainer_can_modify=False, commits=1, additions=1, deletions=0, changed_files=1)
        return out

    def review_json(self, standin: Any, repo: Repo, pr: PR, review: Any) -> dict:
        out = example("pull-request-review")
        out.update(id=review.id, node_id=f"PRR_{review.id}", user=self.user(standin, review.author), body=review.body,
                   state={"approved": "APPROVED", "changes_requested": "CHANGES_REQUESTED"}.get(review.state, "COMMENTED"),
                   html_url=f"{repo.web_url}/pull/{pr.number}#pullrequestreview-{review.id}",
                   pull_request_url=f"{standin.api_url}/repos/{repo.path}/pulls/{pr.number}",
                   commit_id=review.commit_id, submitted_at=review.submitted_at, author_association="COLLABORATOR")
        out["_links"] = {"html": {"href": out["html_url"]}, "pull_request": {"href": out["pull_request_url"]}}
        return out

    def review_comment_json(self, standin: Any, repo: Repo, pr: PR, c: Any, items: bool) -> dict:
        out = example("review-comment-items" if items else "pull-request-review-comment")
        out = out[0] if isinstance(out, list) else out
        api = f"{standin.api_url}/repos/{repo.path}"
        out.pop("in_reply_to_id", None)
        out.update(id=c.id, node_id=f"PRRC_{c.id}", pull_request_review_id=c.review_id, path=c.path, line=c.line,
                   original_line=c.line, position=c.line, original_position=c.line, side="RIGHT",
                   start_line=None, original_start_line=None, start_side=None,
                   body=c.body, user=self.user(standin, c.author), commit_id=c.commit_id, original_commit_id=c.commit_id,
                   url=f"{api}/pulls/comments/{c.id}", html_url=f"{repo.web_url}/pull/{pr.number}#discussion_r{c.id}",
                   pull_request_url=f"{api}/pulls/{pr.number}", created_at=c.created_at, updated_at=c.created_at,
                   author_association="COLLABORATOR", diff_hunk="@@ -1 +1 @@")
        out["_links"] = {"self": {"href": out["url"]}, "html": {"href": out["html_url"]},
                         "pull_request": {"href": out["pull_request_url"]}}
        return out

    def check_run_json(self, standin: Any, repo: Repo, run: Any) -> dict:
        out = example("check-run")
        api = f"{standin.api_url}/repos/{repo.path}"
        done = run.state != "pending"
        out.update(id=run.id, node_id=f"CR_{run.id}", name=run.name, head_sha=run.sha, external_id=str(run.id),
                   url=f"{api}/check-runs/{run.id}", html_url=f"{repo.web_url}/runs/{run.id}",
                   details_url=f"{repo.web_url}/runs/{run.id}", status="completed" if done else "in_progress",
                   conclusion=run.state if done else None, started_at=run.created_at,
                   completed_at=run.updated_at if done else None, pull_requests=[], check_suite={"id": run.id})
        out["output"] = {"title": f"{run.name}: {run.state}", "summary": run.log[-1000:] or run.state,
                         "text": run.log, "annotations_count": 0, "annotations_url": f"{api}/check-runs/{run.id}/annotations"}
        return out

    def status_json(self, standin: Any, repo: Repo, run: Any) -> dict:
        out = example("status")
        out.update(id=run.id, node_id=f"S_{run.id}", state="pending" if run.state == "pending" else run.state,
                   context=run.name, description=(run.log[-140:] or run.state), target_url=f"{repo.web_url}/runs/{run.id}",
                   url=f"{standin.api_url}/repos/{repo.path}/statuses/{run.sha}", created_at=run.created_at,
                   updated_at=run.updated_at, creator=self.user(standin, "ci-bot"))
        return out

    # -- handlers ----------------------------------------------------------------------------------
    def _repo(self, ctx: Ctx) -> Repo | None:
        return ctx.standin.repos.get(f"{ctx.params['owner']}/{ctx.params['repo']}")

    def _pr(self, ctx: Ctx) -> tuple[Repo, PR] | None:
        repo = self._repo(ctx)
        pr = repo.pr(int(ctx.params["pull_number"])) if repo else None
        return (repo, pr) if repo and pr else None

    def whoami(self, ctx: Ctx) -> Answer:
        out = example("private-user-response-with-public-and-private-profile-information")
        out.update(self.user(ctx.standin, ctx.standin.login))
        return Answer(200, out)

    def get_repo(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        return Answer(200, self.repo_json(ctx.standin, repo)) if repo else self.not_found()

    def list_prs(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        if repo is None:
            return self.not_found()
        state, head, base = ctx.query.get("state", "open"), ctx.query.get("head"), ctx.query.get("base")
        if head and ":" not in head:
            head = None  # GitHub wants "owner:branch" and ignores a bare branch name: every PR comes back
        found = []
        for pr in sorted(repo.prs, key=lambda p: -p.number):
            open_ = pr.state == "open"
            if (state == "open" and not open_) or (state == "closed" and open_):
                continue
            if head and head != f"{repo.owner}:{pr.head}":
                continue
            if base and base != pr.base:
                continue
            found.append(self.pr_json(ctx.standin, repo, pr, simple=True))
        return Answer(200, found)

    def create_pr(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        if repo is None:
            return self.not_found()
        body = ctx.body
        head = body["head"].split(":", 1)[-1]
        if repo.head(head) is None or repo.head(body["base"]) is None:
            return Answer(422, {"message": "Validation Failed", "documentation_url": DOCS,
                                "errors": [{"resource": "PullRequest", "field": "head", "code": "invalid"}]})
        if any(p.head == head and p.base == body["base"] and p.state == "open" for p in repo.prs):
            return Answer(422, {"message": "Validation Failed", "documentation_url": DOCS, "errors": [
                {"resource": "PullRequest", "code": "custom",
                 "message": f"A pull request already exists for {repo.owner}:{head}."}]})
        if body.get("draft") and not repo.draft_prs:
            return Answer(422, {"message": "Validation Failed", "documentation_url": DOCS, "errors": [
                {"resource": "PullRequest", "code": "custom",
                 "message": "Draft pull requests are not supported in this repository."}]})
        pr = ctx.standin.open_pr(repo.path, head, body["base"], body.get("title", ""), body.get("body") or "",
                                 bool(body.get("draft")))
        return Answer(201, self.pr_json(ctx.standin, repo, pr), {"Location": f"{ctx.standin.api_url}/repos/{repo.path}/pulls/{pr.number}"})

    def get_pr(self, ctx: Ctx) -> Answer:
        found = self._pr(ctx)
        return Answer(200, self.pr_json(ctx.standin, *found)) if found else self.not_found()

    def update_pr(self, ctx: Ctx) -> Answer:
        found = self._pr(ctx)
        if not found:
            return self.not_found()
        repo, pr = found
        for key in ("title", "body", "base"):
            if key in ctx.body:
                setattr(pr, key, ctx.body[key])
        if ctx.body.get("state") == "closed" and pr.state == "open":
            pr.state, pr.closed_at = "closed", now()
            ctx.standin.emit("pr", repo.path, pr.number, action="closed")
        elif ctx.body.get("state") == "open" and pr.state == "closed":
            pr.state, pr.closed_at = "open", None
            ctx.standin.emit("pr", repo.path, pr.number, action="reopened")
        pr.updated_at = now()
        return Answer(200, self.pr_json(ctx.standin, repo, pr))

    def permission(self, ctx: Ctx) -> Answer:
        """GitHub's `permission` folds maintain into write and triage into read; `role_name` is the role."""
        repo = self._repo(ctx)
        if repo is None:
            return self.not_found()
        login = ctx.params["username"]
        role = repo.role_of(login)
        out = example("repository-collaborator-permission-response-if-user-has-admin-permissions")
        user = self.user(ctx.standin, login)
        user.pop("user_view_type", None)
        out.update(permission={"maintain": "write", "triage": "read"}.get(role, role), role_name=role,
                   user={**out["user"], **{k: v for k, v in user.items() if k in out["user"]}, "role_name": role})
        return Answer(200, out)

    def list_reviews(self, ctx: Ctx) -> Answer:
        found = self._pr(ctx)
        if not found:
            return self.not_found()
        repo, pr = found
        return Answer(200, [self.review_json(ctx.standin, repo, pr, r) for r in pr.reviews])

    def list_review_comments_of(self, ctx: Ctx) -> Answer:
        found = self._pr(ctx)
        review = next((r for r in found[1].reviews if r.id == int(ctx.params["review_id"])), None) if found else None
        if not found or review is None:
            return self.not_found()
        return Answer(200, [self.review_comment_json(ctx.standin, *found, c, True) for c in review.comments])

    def list_review_comments(self, ctx: Ctx) -> Answer:
        found = self._pr(ctx)
        if not found:
            return self.not_found()
        return Answer(200, [self.review_comment_json(ctx.standin, *found, c, False)
                            for r in found[1].reviews for c in r.comments])

    def list_comments(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        pr = repo.pr(int(ctx.params["issue_number"])) if repo else None
        if not repo or not pr:
            return self.not_found()
        items = []
        for c in pr.comments:
            out = example("issue-comment-items")[0]
            out.update(id=c.id, node_id=f"IC_{c.id}", body=c.body, user=self.user(ctx.standin, c.author),
                       url=f"{ctx.standin.api_url}/repos/{repo.path}/issues/comments/{c.id}",
                       html_url=f"{repo.web_url}/pull/{pr.number}#issuecomment-{c.id}",
                       issue_url=f"{ctx.standin.api_url}/repos/{repo.path}/issues/{pr.number}",
                       created_at=c.created_at, updated_at=c.created_at, author_association="COLLABORATOR")
            items.append(out)
        return Answer(200, items)

    def list_check_runs(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        sha = repo.resolve(ctx.params["ref"]) if repo else None
        if not repo or not sha:
            return self.not_found()
        runs = [self.check_run_json(ctx.standin, repo, r) for r in repo.checks_for(sha)]
        return Answer(200, {"total_count": len(runs), "check_runs": runs})

    def combined_status(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        sha = repo.resolve(ctx.params["ref"]) if repo else None
        if not repo or not sha:
            return self.not_found()
        out = example("combined-commit-status")
        statuses = []
        for run in repo.checks_for(sha):
            s = self.status_json(ctx.standin, repo, run)
            s.pop("creator", None), s.pop("updated_at", None), s.pop("created_at", None)
            s.update(created_at=run.created_at, updated_at=run.updated_at)
            statuses.append({k: s[k] for k in ("id", "node_id", "url", "avatar_url", "state", "description",
                                                "target_url", "context", "created_at", "updated_at") if k in s})
        out.update(state=repo.combined(sha), sha=sha, total_count=len(statuses), statuses=statuses,
                   repository=self.repo_json(ctx.standin, repo, full=False),
                   commit_url=f"{ctx.standin.api_url}/repos/{repo.path}/commits/{sha}",
                   url=f"{ctx.standin.api_url}/repos/{repo.path}/commits/{sha}/status")
        return Answer(200, out)

    def list_statuses(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        sha = repo.resolve(ctx.params["ref"]) if repo else None
        if not repo or not sha:
            return self.not_found()
        return Answer(200, [self.status_json(ctx.standin, repo, r) for r in repo.checks if r.sha == sha][::-1])

    def merge(self, ctx: Ctx) -> Answer:
        found = self._pr(ctx)
        if not found:
            return self.not_found()
        repo, pr = found
        method = (ctx.body or {}).get("merge_method", "merge")
        if pr.state == "open" and pr.draft:
            return self.error(405, "Pull Request is still a draft")
        try:
            sha = repo.merge(pr, method, ctx.standin.login, expected_sha=(ctx.body or {}).get("sha"))
        except MergeRefused as refused:
            if refused.reason == "protected":
                missing = refused.detail.split(", ")
                required = repo.protected[pr.base]
                text = (f'Required status check "{missing[0]}" is expected.' if len(missing) == 1 else
                        f"{len(missing)} of {len(required)} required status checks are expected.")
                return self.error(405, text)
            if refused.reason == "sha":
                return self.error(409, refused.detail)
            if refused.reason == "method":
                said = {"merge": "Merge commits", "squash": "Squash merges", "rebase": "Rebase merges"}[method]
                return self.error(405, f"{said} are not allowed on this repository.")
            return self.error(405, "Pull Request is not mergeable")
        ctx.standin.emit("pr", repo.path, pr.number, action="closed")
        return Answer(200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"})

    def graphql(self, ctx: Ctx) -> Answer:
        """GitHub's GraphQL endpoint (GHES <base>/api/graphql), for the two draft mutations only: REST
        cannot take a PR out of draft. GitHub's GraphQL schema is not in the pinned packages, so the
        accepted documents are these two shapes; any other query is a violation."""
        query, variables = str(ctx.body.get("query", "")), ctx.body.get("variables") or {}
        m = re.search(r"(markPullRequestReadyForReview|convertPullRequestToDraft)\s*\(\s*input\s*:\s*\{\s*"
                      r"pullRequestId\s*:\s*(\$\w+|\"[^\"]+\")\s*\}\s*\)", query)
        if m is None or not query.lstrip().startswith("mutation"):
            ctx.standin.violation(f"POST /api/graphql: the stand-in serves only markPullRequestReadyForReview and "
                                  f"convertPullRequestToDraft mutations, not {query[:200]!r}")
            return Answer(200, {"errors": [{"message": "The stand-in does not serve this GraphQL document"}]})
        mutation, ref = m.groups()
        node_id = variables.get(ref[1:]) if ref.startswith("$") else ref.strip('"')
        for repo in ctx.standin.repos.values():
            for pr in repo.prs:
                if f"PR_{pr.id}" == node_id:
                    pr.draft = mutation == "convertPullRequestToDraft"
                    pr.updated_at = now()
                    ctx.standin.emit("pr", repo.path, pr.number,
                                     action="converted_to_draft" if pr.draft else "ready_for_review")
                    return Answer(200, {"data": {mutation: {"pullRequest": {"isDraft": pr.draft, "id": node_id,
                                                                            "number": pr.number}}}})
        return Answer(200, {"data": {mutation: None}, "errors": [
            {"type": "NOT_FOUND", "path": [mutation], "message": f"Could not resolve to a node with the global id of '{node_id}'"}]})

    def delete_ref(self, ctx: Ctx) -> Answer:
        repo = self._repo(ctx)
        ref = ctx.params["ref"]
        if repo is None or not ref.startswith("heads/") or repo.head(ref[6:]) is None:
            return self.error(422, "Reference does not exist")
        from .state import git
        git(repo.bare, "update-ref", "-d", f"refs/{ref}")
        return Answer(204)

    # -- webhooks ----------------------------------------------------------------------------------
    def build_webhook(self, standin: Any, event: str, repo: Repo, number: int | None, **extra: Any) -> Delivery:
        from .github_hooks import build
        return build(self, standin, event, repo, number, extra)
