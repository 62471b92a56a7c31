"""A started stand-in forge: its state, its servers (uvicorn in a thread for the API, nginx +
fcgiwrap for git), and what a test does to it (see /work/wt/STANDIN-API.md and docs/forges-testing.md)."""

from __future__ import annotations

import secrets
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import uvicorn

from .app import Call, Flavour, build_app
from .githttp import GitFront, free_port
from .state import PR, CheckRun, Comment, Repo, Review, commit_files, init_bare, new_id, now
from .webhooks import Delivery, deliver

LOGIN = "predictorx-bot"
GIT_USERNAMES = {"github": "x-access-token", "gitlab": "oauth2", "gitea": LOGIN, "forgejo": LOGIN}


def flavour_for(kind: str) -> Flavour:
    if kind == "github":
        from .github import GitHub
        return GitHub()
    if kind == "gitlab":
        from .gitlab import GitLab
        return GitLab()
    if kind in ("gitea", "forgejo"):
        from .gitea import Gitea
        return Gitea(kind)
    raise ValueError(f"no stand-in for forge kind {kind!r} (github, gitlab, gitea, forgejo)")


class StandIn:
    def __init__(self, kind: str, root: Path):
        self.kind = kind
        self.root = root
        self.flavour = flavour_for(kind)
        self.login = LOGIN
        self.user_id = 4242
        self.git_username = GIT_USERNAMES[kind]
        self.token = ("ghp_" if kind == "github" else "glpat-" if kind == "gitlab" else "") + secrets.token_hex(16)
        self.webhook_secret = secrets.token_hex(16)
        self.repos: dict[str, Repo] = {}
        self.calls: list[Call] = []
        self.git_requests: list[tuple[str, int]] = []
        self.violations: list[str] = []
        self.deliveries: list[Delivery] = []
        #: Deliveries the stand-in sent by itself (send_hooks_to), in order, with the receiver's status.
        self.hook_log: list[Any] = []
        self._hooks: Any = None
        #: While > now (time.time()), every API call is refused as the forge refuses an exhausted rate limit.
        self.rate_limited_until = 0.0
        #: GitHub's rate-limit counter (calls that were not 304) and the reset time it reports.
        self.rate_used = 0
        self.rate_reset = int(time.time()) + 3600
        self._lock = threading.Lock()
        self.repos_root = root / "repos"
        self.repos_root.mkdir(parents=True, exist_ok=True)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._front: GitFront | None = None
        self.base_url = ""

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> "StandIn":
        self.flavour.description()  # load (cached per session) before the clock of any test starts
        app_port = free_port()
        config = uvicorn.Config(build_app(self, self.flavour), host="127.0.0.1", port=app_port,
                                log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name=f"standin-{self.kind}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"the {self.kind} stand-in's API did not start")
            time.sleep(0.01)  # waiting for uvicorn's started flag; the condition is the exit
        self._front = GitFront(self.root, app_port, self.repos_root)
        self.base_url = f"http://127.0.0.1:{self._front.port}"
        return self

    def stop(self) -> None:
        if self._hooks:
            self._hooks.stop()
        if self._front:
            self._front.stop()
        if self._server:
            self._server.should_exit = True
        if self._thread:
            self._thread.join(10)

    # -- what a client is given ------------------------------------------------------------------
    @property
    def api_url(self) -> str:
        return self.base_url + self.flavour.api_prefix

    def connection(self) -> Any:
        from predictorx.forges.base import Connection
        return Connection(kind=self.kind, base_url=self.base_url, api_url=self.api_url, token=self.token,
                          git_username=self.git_username)

    def limit_rate(self, seconds: float = 60) -> None:
        """Exhaust the rate limit for `seconds`: GitHub answers 403 with X-RateLimit-Remaining: 0,
        GitLab and Gitea 429 with Retry-After; `limit_rate(0)` lifts it."""
        self.rate_limited_until = time.time() + seconds if seconds > 0 else 0.0
        if seconds <= 0:
            self.rate_used = 0

    def violation(self, sentence: str) -> None:
        with self._lock:
            self.violations.append(sentence)

    def count(self, method: str, path_part: str = "") -> int:
        return sum(1 for c in self.calls if c.method == method and path_part in c.path)

    # -- repositories ----------------------------------------------------------------------------
    def create_repo(self, path: str, files: dict[str, str] | None = None, default_branch: str = "main",
                    merge_methods: tuple[str, ...] = ("merge", "squash", "rebase"), draft_prs: bool = True) -> Repo:
        """A repository on the forge; `draft_prs=False`: GitHub refuses drafts there (a plan without them)."""
        if path in self.repos:
            raise ValueError(f"{path} exists")
        if self.kind != "gitlab" and path.count("/") != 1:
            raise ValueError(f"a {self.kind} repository path is owner/name, not {path!r}")
        bare = self.repos_root / f"{path}.git"
        init_bare(bare, default_branch, files if files is not None else {"README.md": f"# {path}\n"})
        repo = Repo(new_id(), path, bare, default_branch, tuple(merge_methods),
                    clone_url=f"{self.base_url}/{path}.git", web_url=f"{self.base_url}/{path}", draft_prs=draft_prs)
        # The owner and the token's account administer it; "reviewer" (the default author of
        # `submit_review`/`comment`) is a collaborator with write access.
        repo.permissions = {repo.owner: "admin", self.login: "admin", "reviewer": "write"}
        self.repos[path] = repo
        return repo

    def repo(self, path: str) -> Repo:
        return self.repos[path]

    def authed_url(self, path: str) -> str:
        host = self.base_url.removeprefix("http://")
        return f"http://{quote(self.git_username, safe='')}:{quote(self.token, safe='')}@{host}/{path}.git"

    def branch_head(self, path: str, branch: str) -> str | None:
        return self.repos[path].head(branch)

    def commit_on_server(self, path: str, branch: str, files: dict[str, str], message: str = "A change") -> str:
        repo = self.repos[path]
        return commit_files(repo.bare, branch, files, message, start=repo.default_branch)

    def prs(self, path: str) -> list[PR]:
        repo = self.repos[path]
        return [repo.refresh(p) for p in repo.prs]

    def pr(self, path: str, number: int) -> PR:
        repo = self.repos[path]
        found = repo.pr(number)
        if found is None:
            raise KeyError(f"{path} has no PR {number}")
        return repo.refresh(found)

    def open_pr(self, path: str, head: str, base: str | None = None, title: str = "A change", body: str = "",
                draft: bool = False, author: str | None = None) -> PR:
        """A PR as the API would open it (the handlers call this too)."""
        repo = self.repos[path]
        with repo.lock:
            head_sha = repo.head(head)
            base = base or repo.default_branch
            if head_sha is None:
                raise KeyError(f"no branch {head}")
            number = max([p.number for p in repo.prs], default=0) + 1
            pr = PR(number, new_id(), title, body, head, base, draft, author or self.login, head_sha,
                    repo.head(base) or "")
            repo.prs.append(pr)
        self.emit("pr", path, pr.number, action="opened")
        return pr

    def set_permission(self, path: str, login: str, role: str) -> None:
        """`login`'s role on the repository: admin | maintain | write | triage | read (read = an
        outsider on a public repository)."""
        if role not in ("admin", "maintain", "write", "triage", "read"):
            raise ValueError(f"role {role!r}: admin, maintain, write, triage or read")
        self.repos[path].permissions[login] = role

    # -- driving it --------------------------------------------------------------------------------
    def submit_review(self, path: str, number: int, state: str, body: str = "",
                      comments: list[tuple[str, int, str]] = (), author: str = "reviewer") -> int:  # type: ignore[assignment]
        if state not in ("approved", "changes_requested", "commented"):
            raise ValueError(f"review state {state!r}: approved, changes_requested or commented")
        pr = self.pr(path, number)
        review = Review(new_id(), author, state, body, pr.head_sha)
        review.comments = [Comment(new_id(), author, text, file, line, review.id, pr.head_sha)
                           for file, line, text in comments]
        pr.reviews.append(review)
        pr.updated_at = now()  # a review changes the PR's updated_at, as on the forges
        self.emit("review", path, number, review_id=review.id)
        for note in review.comments:
            self.emit("review_comment", path, number, comment_id=note.id)
        return review.id

    def comment(self, path: str, number: int, body: str, author: str = "reviewer") -> int:
        pr = self.pr(path, number)
        note = Comment(new_id(), author, body, commit_id=pr.head_sha)
        pr.comments.append(note)
        pr.updated_at = now()
        self.emit("comment", path, number, comment_id=note.id)
        return note.id

    def set_check(self, path: str, sha: str, name: str, state: str, log: str = "") -> CheckRun:
        if state not in ("pending", "success", "failure"):
            raise ValueError(f"check state {state!r}: pending, success or failure")
        repo = self.repos[path]
        full = repo.resolve(sha)
        if full is None:
            raise KeyError(f"{path} has no commit {sha}")
        run = CheckRun(new_id(), name, state, full, log)
        repo.checks.append(run)
        for pr in repo.prs:
            if pr.state == "open" and repo.refresh(pr).head_sha == full:
                self.emit("check", path, pr.number, name=name)
        return run

    def protect_branch(self, path: str, branch: str, required_checks: list[str] = ()) -> None:  # type: ignore[assignment]
        self.repos[path].protected[branch] = list(required_checks)

    def close_pr(self, path: str, number: int) -> None:
        pr = self.pr(path, number)
        pr.state = "closed"
        pr.closed_at = pr.updated_at = now()
        self.emit("pr", path, number, action="closed")

    def merge_pr(self, path: str, number: int, method: str = "merge", by: str = "human") -> str:
        sha = self.repos[path].merge(self.pr(path, number), method, by)
        self.emit("pr", path, number, action="closed")
        return sha

    # -- webhooks ----------------------------------------------------------------------------------
    def send_hooks_to(self, url: str) -> None:
        """Register a webhook: from now on the stand-in delivers its events to `url` by itself
        (PR opened/closed/merged/ready, pushes to a PR's branch, reviews, inline and conversation
        comments, checks), signed with `webhook_secret`; see hooks.py. `hook_log` has each delivery."""
        from .hooks import HookSender
        if self._hooks:
            self._hooks.stop()
        self._hooks = HookSender(self, url)

    def emit(self, event: str, path: str, number: int, **extra: Any) -> None:
        """Queue an automatic delivery (no-op until send_hooks_to)."""
        if self._hooks:
            self._hooks.emit(event, path, number, **extra)

    def webhook(self, event: str, path: str, number: int | None = None, **extra: Any) -> Delivery:
        delivery = self.flavour.build_webhook(self, event, self.repos[path], number, **extra)  # type: ignore[attr-defined]
        self.deliveries.append(delivery)
        return delivery

    def deliver(self, url: str, delivery: Delivery, *, secret: str | None = None, tamper: bool = False,
                timeout: float = 10) -> int:
        return deliver(url, delivery, self.kind, self.webhook_secret if secret is None else secret,
                       tamper=tamper, timeout=timeout)


def start_standin(kind: str, root: Path) -> StandIn:
    root.mkdir(parents=True, exist_ok=True)
    standin = StandIn(kind, root)
    try:
        return standin.start()
    except BaseException:
        standin.stop()
        raise
