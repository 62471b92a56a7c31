"""GitHub's webhook deliveries: each payload starts from @octokit/webhooks-examples, gets the
stand-in's state written over it, and must validate against @octokit/openapi-webhooks before it is
sent (a stand-in bug fails loudly rather than teaching a client a wrong shape)."""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from . import openapi
from .state import PR, Repo
from .webhooks import Delivery

if TYPE_CHECKING:
    from .github import GitHub

REACTIONS = {"url": "", "total_count": 0, "+1": 0, "-1": 0, "laugh": 0, "hooray": 0, "confused": 0, "heart": 0,
             "rocket": 0, "eyes": 0}
#: Fields of a REST pull request that the review events' pull_request object does not have.
NOT_IN_REVIEW_EVENTS = ("merged", "mergeable", "mergeable_state", "merged_by", "rebaseable", "comments",
                        "review_comments", "maintainer_can_modify", "commits", "additions", "deletions", "changed_files")


@lru_cache(maxsize=None)
def _examples() -> dict[str, list[dict]]:
    data = json.loads((openapi.NODE_MODULES / "@octokit/webhooks-examples/api.github.com/index.json").read_text())
    return {entry["name"]: entry["examples"] for entry in data}


def example(event: str, action: str | None) -> dict:
    for candidate in _examples()[event]:
        if candidate.get("action") == action:
            return copy.deepcopy(candidate)
    raise KeyError(f"no {event}/{action} example in @octokit/webhooks-examples")


def checked(header: str, webhook_key: str, payload: dict) -> Delivery:
    description = openapi.github_webhooks()
    pointer = f"/webhooks/{webhook_key}/post/requestBody/content/application~1json/schema"
    problems = description.check_schema_at(pointer, payload, f"webhook {webhook_key}")
    if problems:
        raise AssertionError("the stand-in built a webhook its schema refuses: " + "; ".join(problems))
    return Delivery(header, payload)


def build(flavour: "GitHub", standin: Any, event: str, repo: Repo, number: int | None, extra: dict[str, Any]) -> Delivery:
    hooks = _Hooks(flavour, standin, repo)
    if event == "ping":
        payload = example("ping", None)
        payload.update(repository=hooks.repository, sender=hooks.user(extra.get("sender", "reviewer")))
        return checked("ping", "ping", payload)
    assert number is not None, f"a {event} webhook needs the PR number"
    pr = standin.pr(repo.path, number)
    builders = {"pr": hooks.pull_request, "review": hooks.review, "review_comment": hooks.review_comment,
                "comment": hooks.comment, "check": hooks.check_run, "status": hooks.status}
    if event not in builders:
        raise ValueError(f"no GitHub webhook for {event!r}: pr, review, review_comment, comment, check, status, ping")
    return builders[event](pr, extra)


class _Hooks:
    def __init__(self, flavour: "GitHub", standin: Any, repo: Repo):
        self.flavour, self.standin, self.repo = flavour, standin, repo
        self.repository = self._repository()

    def user(self, login: str) -> dict:
        return self.flavour.user(self.standin, login)

    def _repository(self) -> dict:
        """The example's repository object with this repository's identity and URLs."""
        out = example("pull_request", "opened")["repository"]
        full = self.flavour.repo_json(self.standin, self.repo)
        out.update({k: full[k] for k in ("id", "node_id", "name", "full_name", "owner", "html_url", "url", "clone_url",
                                          "git_url", "ssh_url", "svn_url", "default_branch", "private", "fork")})
        for key, value in list(out.items()):
            if isinstance(value, str) and key not in full:
                out[key] = re.sub(r"^https://api\.github\.com/repos/[^/]+/[^/{]+", full["url"], value)
        return out

    def _pr(self, pr: PR, for_review: bool = False) -> dict:
        shaped = self.flavour.pr_json(self.standin, self.repo, pr)
        shaped.pop("merge_queue_entry", None)
        if for_review:
            shaped = {k: v for k, v in shaped.items() if k not in NOT_IN_REVIEW_EVENTS}
        return shaped

    def pull_request(self, pr: PR, extra: dict[str, Any]) -> Delivery:
        action = extra.get("action", "opened")
        payload = example("pull_request", action)
        payload.update(action=action, number=pr.number, pull_request=self._pr(pr), repository=self.repository,
                       sender=self.user(extra.get("sender", "reviewer")))
        if action == "synchronize":
            payload.update(before=extra.get("before", pr.base_sha), after=pr.head_sha)
        return checked("pull_request", f"pull-request-{action.replace('_', '-')}", payload)

    def review(self, pr: PR, extra: dict[str, Any]) -> Delivery:
        review = pr.review(extra.get("review_id"))
        shaped = self.flavour.review_json(self.standin, self.repo, pr, review)
        shaped["state"] = shaped["state"].lower()  # the event says "changes_requested", the REST API "CHANGES_REQUESTED"
        payload = example("pull_request_review", "submitted")
        payload.update(review=shaped, pull_request=self._pr(pr, True), repository=self.repository,
                       sender=self.user(review.author))
        return checked("pull_request_review", "pull-request-review-submitted", payload)

    def review_comment(self, pr: PR, extra: dict[str, Any]) -> Delivery:
        _review, comment = pr.inline_comment(extra.get("comment_id"))
        shaped = self.flavour.review_comment_json(self.standin, self.repo, pr, comment, False)
        shaped.setdefault("reactions", REACTIONS)
        payload = example("pull_request_review_comment", "created")
        payload.update(comment=shaped, pull_request=self._pr(pr, True), repository=self.repository,
                       sender=self.user(comment.author))
        return checked("pull_request_review_comment", "pull-request-review-comment-created", payload)

    def comment(self, pr: PR, extra: dict[str, Any]) -> Delivery:
        comment = pr.comment(extra.get("comment_id"))
        shaped_pr = self._pr(pr)
        payload = example("issue_comment", "created")
        payload["issue"].update(number=pr.number, title=pr.title, body=pr.body, state=shaped_pr["state"],
                                html_url=shaped_pr["html_url"], user=shaped_pr["user"], active_lock_reason=None,
                                labels=[], reactions=REACTIONS,
                                pull_request={k: shaped_pr[k] for k in ("url", "html_url", "diff_url", "patch_url")})
        payload["comment"].update(performed_via_github_app=None, reactions=REACTIONS, id=comment.id, body=comment.body,
                                  user=self.user(comment.author),
                                  html_url=f"{self.repo.web_url}/pull/{pr.number}#issuecomment-{comment.id}")
        payload.update(repository=self.repository, sender=self.user(comment.author))
        return checked("issue_comment", "issue-comment-created", payload)

    def _run(self, pr: PR, name: str) -> Any:
        return next(r for r in reversed(self.repo.checks) if r.name == name and r.sha == pr.head_sha)

    def check_run(self, pr: PR, extra: dict[str, Any]) -> Delivery:
        repo, run = self.repo, self._run(pr, extra["name"])
        payload = example("check_run", "completed" if run.state != "pending" else "created")
        shaped = self.flavour.check_run_json(self.standin, repo, run)
        ref = {"id": repo.id, "name": repo.name, "url": self.repository["url"]}
        shaped["pull_requests"] = [{"id": pr.id, "number": pr.number, "url": self._pr(pr)["url"],
                                    "head": {"ref": pr.head, "sha": pr.head_sha, "repo": ref},
                                    "base": {"ref": pr.base, "sha": pr.base_sha, "repo": ref}}]
        payload["check_run"].update({k: v for k, v in shaped.items() if k in payload["check_run"]})
        payload["check_run"]["check_suite"].update(head_branch=pr.head, head_sha=pr.head_sha,
                                                   pull_requests=shaped["pull_requests"])
        payload.update(repository=self.repository, sender=self.user("ci-bot"))
        return checked("check_run", f"check-run-{payload['action']}", payload)

    def status(self, pr: PR, extra: dict[str, Any]) -> Delivery:
        """A commit status event (the older CI API) for the PR's head."""
        repo, run = self.repo, self._run(pr, extra["name"])
        payload = example("status", None)
        payload["commit"].update(sha=run.sha, url=f"{self.standin.api_url}/repos/{repo.path}/commits/{run.sha}",
                                 html_url=f"{repo.web_url}/commit/{run.sha}")
        payload["commit"]["commit"]["verification"] = {"verified": False, "reason": "unsigned", "signature": None,
                                                       "payload": None, "verified_at": None}
        payload.update(id=run.id, sha=run.sha, name=repo.path, context=run.name, state=run.state,
                       description=run.log[-140:] or None, target_url=f"{repo.web_url}/runs/{run.id}",
                       created_at=run.created_at, updated_at=run.updated_at, repository=self.repository,
                       sender=self.user("ci-bot"),
                       branches=[{"name": pr.head, "commit": {"sha": run.sha, "url": payload["commit"]["url"]},
                                  "protected": False}])
        return checked("status", "status", payload)
