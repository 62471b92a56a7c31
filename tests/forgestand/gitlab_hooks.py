"""GitLab's webhook deliveries, in the payload shapes GitLab documents
(doc/user/project/integrations/webhook_events.md): Merge Request Hook, Note Hook, Pipeline Hook.
GitLab publishes no schema for them, so they are not validated; GitLab authenticates them with
X-Gitlab-Token (webhooks.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .state import PR, Repo
from .webhooks import Delivery

if TYPE_CHECKING:
    from .gitlab import GitLab

ACTIONS = {"opened": "open", "closed": "close", "reopened": "reopen", "synchronize": "update"}
REVIEWER_STATES = {"approved": "approved", "changes_requested": "requested_changes"}


def build(flavour: "GitLab", standin: Any, event: str, repo: Repo, pr: PR, extra: dict[str, Any]) -> Delivery:
    parts = _Parts(flavour, standin, repo, pr, extra)
    if event in ("pr", "review"):
        return parts.merge_request_hook(event)
    if event in ("review_comment", "comment"):
        return parts.note_hook(event)
    if event == "check":
        return parts.pipeline_hook()
    raise ValueError(f"no GitLab webhook for {event!r}: pr, review, review_comment, comment, check")


class _Parts:
    """The pieces every GitLab hook repeats (project, repository, the MR's attributes)."""

    def __init__(self, flavour: "GitLab", standin: Any, repo: Repo, pr: PR, extra: dict[str, Any]):
        self.flavour, self.standin, self.repo, self.pr, self.extra = flavour, standin, repo, pr, extra
        project = flavour.project_json(standin, repo)
        self.project = {"id": repo.id, "name": repo.name, "description": "", "web_url": repo.web_url,
                        "git_http_url": repo.clone_url, "git_ssh_url": project["ssh_url_to_repo"],
                        "namespace": project["namespace"]["name"], "path_with_namespace": repo.path,
                        "default_branch": repo.default_branch, "homepage": repo.web_url, "url": repo.clone_url,
                        "http_url": repo.clone_url, "visibility_level": 0}
        self.repository = {"name": repo.name, "url": repo.clone_url, "description": "", "homepage": repo.web_url}
        self.mr = mr = flavour.mr_json(standin, repo, pr)
        self.attrs = {"id": pr.id, "iid": pr.number, "title": pr.title, "description": pr.body, "state": mr["state"],
                      "source_branch": pr.head, "target_branch": pr.base, "source_project_id": repo.id,
                      "target_project_id": repo.id, "author_id": mr["author"]["id"], "url": mr["web_url"],
                      "draft": mr["draft"], "work_in_progress": mr["draft"], "merge_status": mr["merge_status"],
                      "detailed_merge_status": mr["detailed_merge_status"], "created_at": pr.created_at,
                      "updated_at": pr.updated_at, "merge_commit_sha": pr.merged_sha,
                      "last_commit": {"id": pr.head_sha, "message": "", "url": f"{repo.web_url}/-/commit/{pr.head_sha}"},
                      "source": self.project, "target": self.project}

    def user(self, login: str) -> dict:
        shaped = self.flavour.user(self.standin, login)
        shaped.pop("locked", None)
        return shaped

    def common(self, actor: str) -> dict[str, Any]:
        return {"user": self.user(actor), "project": self.project, "repository": self.repository}

    def delivery(self, event: str, payload: dict[str, Any]) -> Delivery:
        return Delivery(event, payload, extra_headers={"X-Gitlab-Instance": self.standin.base_url})

    def merge_request_hook(self, event: str) -> Delivery:
        """An MR change; a review is an MR hook too: action "approved", or "update" with the reviewer's state."""
        action, actor, reviewers = self.extra.get("action", "open"), self.extra.get("sender", "reviewer"), []
        if event == "review":
            review = self.pr.review(self.extra.get("review_id"))
            action, actor = ("approved" if review.state == "approved" else "update"), review.author
            reviewers = [{**self.user(review.author), "state": REVIEWER_STATES.get(review.state, "reviewed")}]
        action = ACTIONS.get(action, action)
        if action == "close" and self.pr.state == "merged":
            action = "merge"
        before = {"oldrev": self.extra["before"]} if "before" in self.extra else {}
        return self.delivery("Merge Request Hook", {
            "object_kind": "merge_request", "event_type": "merge_request", **self.common(actor),
            "object_attributes": {**self.attrs, "action": action, **before},
            "labels": [], "changes": {}, "reviewers": reviewers})

    def note_hook(self, event: str) -> Delivery:
        """A comment on the MR: a DiffNote (with its position) for an inline one."""
        if event == "review_comment":
            _review, note = self.pr.inline_comment(self.extra.get("comment_id"))
        else:
            note = self.pr.comment(self.extra.get("comment_id"))
        shaped = self.flavour.note_json(self.standin, self.pr, note)
        attributes = {"id": note.id, "note": note.body, "noteable_type": "MergeRequest",
                      "author_id": shaped["author"]["id"], "created_at": note.created_at, "updated_at": note.created_at,
                      "project_id": self.repo.id, "commit_id": note.commit_id, "noteable_id": self.pr.id,
                      "system": False, "type": shaped["type"], "position": shaped["position"], "line_code": None,
                      "url": f"{self.mr['web_url']}#note_{note.id}", "action": "create"}
        return self.delivery("Note Hook", {
            "object_kind": "note", "event_type": "note", **self.common(note.author), "project_id": self.repo.id,
            "object_attributes": attributes,
            "merge_request": {k: v for k, v in self.attrs.items() if k not in ("source", "target")}})

    def pipeline_hook(self) -> Delivery:
        """The pipeline of the MR's head, with one build per check."""
        from .gitlab import STATUS
        repo, pr = self.repo, self.pr
        pipeline = self.flavour.pipeline_for(repo, pr, pr.head_sha)
        assert pipeline, "set_check on the PR's head first"
        builds = [{"id": r.id, "stage": "test", "name": r.name, "status": STATUS[r.state], "created_at": r.created_at,
                   "started_at": r.created_at, "finished_at": r.updated_at, "allow_failure": False,
                   "failure_reason": "script_failure" if r.state == "failure" else None,
                   "user": self.user("ci-bot")} for r in repo.checks_for(pr.head_sha)]
        attributes = {"id": pipeline["id"], "iid": pipeline["iid"], "ref": pr.head, "sha": pr.head_sha,
                      "status": pipeline["status"], "detailed_status": pipeline["status"],
                      "source": "merge_request_event", "stages": ["test"], "created_at": pipeline["created_at"],
                      "url": pipeline["web_url"]}
        return self.delivery("Pipeline Hook", {
            "object_kind": "pipeline", **self.common("ci-bot"), "object_attributes": attributes,
            "merge_request": {"id": pr.id, "iid": pr.number, "title": pr.title, "source_branch": pr.head,
                              "target_branch": pr.base, "state": self.mr["state"], "url": self.mr["web_url"],
                              "detailed_merge_status": self.mr["detailed_merge_status"]},
            "commit": {"id": pr.head_sha, "message": "", "url": f"{repo.web_url}/-/commit/{pr.head_sha}"},
            "builds": builds})
