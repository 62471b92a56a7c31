"""What Predictor X asks of a forge (issue 22): one interface, one module per forge kind.

A forge is where a team reviews, tests and merges: GitHub (github.com or Enterprise), GitLab
(gitlab.com or self-managed), Gitea and Forgejo. Each kind is a `Forge` registered in
`forges.registry` through the same `register` call a plugin's entry point gets
(`predictorx.forges`). A `Forge` is stateless: every call gets the `Connection` (base URL and the
decrypted credential) it acts with; the server decrypts the credential just before the call and
never stores it elsewhere.

Calls are synchronous (the server runs them in its worker threads, never inside a database
transaction), each with its own timeout. A forge's refusal is a `ForgeRefused` carrying the
forge's own sentence (shown to the person as it is); a transport failure or an answer the client
cannot read is a `ForgeUnavailable`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping, Protocol

#: Kinds shipped with Predictor X; plugins may register more.
KINDS = ("github", "gitlab", "gitea", "forgejo")

PRState = Literal["open", "draft", "merged", "closed"]
ReviewState = Literal["none", "approved", "changes_requested", "commented"]
CheckState = Literal["none", "pending", "success", "failure"]
MergeMethod = Literal["merge", "squash", "rebase"]


class ForgeError(Exception):
    """Base of what a forge call raises; `str(e)` is a sentence for a person."""


class ForgeRefused(ForgeError):
    """The forge answered and said no (4xx): a protected branch, failing required checks, a
    token without the scope. `status` is the HTTP status; the message is the forge's own."""

    def __init__(self, message: str, status: int = 0):
        super().__init__(message)
        self.status = status


class ForgeUnavailable(ForgeError):
    """The forge could not be reached, timed out, or answered with something unreadable (5xx).

    Added by forge-clients: `retry_after` is the seconds the forge asked to wait (a rate limit's
    Retry-After or X-RateLimit-Reset), None when it said nothing; a poller waits at least that."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class WebhookRejected(ForgeError):
    """A delivery that is not the forge's: bad or missing signature/token, unknown event."""


@dataclass(frozen=True)
class Connection:
    """A forge connection as a call needs it. `base_url` is the web root the person entered
    (https://github.com, https://gitlab.example.com, https://codeberg.org); `api_url` where the
    API lives when it differs (GitHub's api.github.com; GHES <base>/api/v3; tests point both at a
    loopback stand-in). `token` is the decrypted credential, never logged."""

    kind: str
    base_url: str
    api_url: str
    token: str
    #: The user name git's HTTP basic auth pairs with the token (GitHub: x-access-token,
    #: GitLab: oauth2, Gitea/Forgejo: the token's own user or any non-empty name).
    git_username: str = "x-access-token"


@dataclass(frozen=True)
class RepoRef:
    """A repository on a forge, by its path: "owner/name" (GitLab: "group/subgroup/name")."""

    path: str


@dataclass(frozen=True)
class RepoInfo:
    path: str
    default_branch: str
    #: Merge methods the repository allows, in the forge's order of preference.
    merge_methods: tuple[MergeMethod, ...] = ("merge",)
    web_url: str = ""
    clone_url: str = ""


@dataclass(frozen=True)
class Check:
    """One CI result on a commit: a GitHub check run or commit status, a GitLab pipeline or job,
    a Gitea/Forgejo commit status."""

    name: str
    state: CheckState
    url: str = ""
    #: A short excerpt of what failed (the check's summary/output or the job log's tail), for the
    #: follow-up's prompt; "" when the forge gives none.
    excerpt: str = ""


@dataclass(frozen=True)
class ReviewComment:
    author: str
    body: str
    path: str | None = None
    line: int | None = None
    url: str = ""
    # Added by forge-clients: the forge's id of the comment and when it was made (ISO-8601), so a
    # poller can tell new comments from seen ones.
    id: str = ""
    created_at: str = ""
    # Added by forge-trust: the forge's numeric id of the author ("" when not given); GitLab
    # asks about a member by id, not by name (`Forge.author_may_write`).
    author_id: str = ""


@dataclass(frozen=True)
class Review:
    id: str
    author: str
    state: ReviewState
    body: str = ""
    comments: tuple[ReviewComment, ...] = ()
    submitted_at: str = ""
    author_id: str = ""  # added by forge-trust, as ReviewComment.author_id


@dataclass(frozen=True)
class PullRequest:
    """A pull request (GitLab: merge request) as Predictor X tracks it."""

    number: int  # GitHub/Gitea/Forgejo number; GitLab iid
    url: str  # its web page
    state: PRState
    head_branch: str
    head_sha: str
    base_branch: str
    title: str = ""
    merged_by: str | None = None
    #: The forge's own word on mergeability when it gives one ("clean", "blocked", …), else "".
    mergeable: str = ""


@dataclass(frozen=True)
class Merged:
    sha: str
    method: MergeMethod


@dataclass(frozen=True)
class ForgeEvent:
    """A webhook delivery, read. `kind`: "pr" (opened, closed, merged, reopened, synchronised,
    draft changed), "review" (a review submitted), "comment" (a PR comment or review comment),
    "check" (a check or status or pipeline changed), "ping", or "other" (acknowledged, ignored).
    `delivery_id` is the forge's delivery id (GitHub X-GitHub-Delivery, Gitea/Forgejo
    X-Gitea-Delivery/X-Forgejo-Delivery; GitLab's X-Gitlab-Event-UUID, else a hash of the body):
    a repeated id changes nothing."""

    kind: Literal["pr", "review", "comment", "check", "ping", "other"]
    delivery_id: str
    repo_path: str
    pr_number: int | None = None
    head_branch: str | None = None
    head_sha: str | None = None
    pr: PullRequest | None = None
    review: Review | None = None
    comment: ReviewComment | None = None
    check: Check | None = None
    raw_event: str = ""


class Forge(Protocol):
    """One forge kind. Every method takes the `Connection`; none keeps state between calls."""

    kind: str
    #: The header(s) its webhooks are authenticated by, for docs and errors.
    webhook_auth: str

    def default_api_url(self, base_url: str) -> str:
        """The API root for a web root (https://github.com → https://api.github.com)."""
        ...

    def repo_from_url(self, base_url: str, url: str) -> RepoRef | None:
        """The repository a git URL (https, ssh, scp-like) names on this connection's host, or
        None when the URL is elsewhere."""
        ...

    def whoami(self, conn: Connection) -> str:
        """The account the token acts as (`forge test`); ForgeRefused for a bad token."""
        ...

    def repo(self, conn: Connection, repo: RepoRef) -> RepoInfo: ...

    def find_pr(self, conn: Connection, repo: RepoRef, head_branch: str) -> PullRequest | None:
        """The newest PR from `head_branch` (open or not), or None."""
        ...

    def open_pr(self, conn: Connection, repo: RepoRef, *, head_branch: str, base_branch: str,
                title: str, body: str, draft: bool) -> PullRequest: ...

    def get_pr(self, conn: Connection, repo: RepoRef, number: int) -> PullRequest: ...

    def reviews(self, conn: Connection, repo: RepoRef, number: int) -> list[Review]:
        """Submitted reviews, oldest first, each with its inline comments."""
        ...

    def checks(self, conn: Connection, repo: RepoRef, sha: str) -> list[Check]: ...

    def merge(self, conn: Connection, repo: RepoRef, number: int, *, method: MergeMethod,
              head_sha: str) -> Merged:
        """Merge through the forge (branch protection and required checks are the forge's to
        enforce); ForgeRefused with the forge's reason when it says no."""
        ...

    def close_pr(self, conn: Connection, repo: RepoRef, number: int) -> None: ...

    def delete_branch(self, conn: Connection, repo: RepoRef, branch: str) -> None: ...

    def verify_webhook(self, headers: Mapping[str, str], body: bytes, secret: str) -> None:
        """Raise WebhookRejected unless the delivery is signed (or tokened) with `secret` the way
        this forge does it; compare in constant time."""
        ...

    def parse_webhook(self, headers: Mapping[str, str], body: bytes) -> ForgeEvent:
        """Read a verified delivery; WebhookRejected for a body that is not JSON of a known shape."""
        ...

    # -- Added by forge-clients (polling where webhooks cannot reach the server). These have
    # default bodies, so a plugin that subclasses `Forge` explicitly keeps working without them.

    def get_pr_if_changed(self, conn: Connection, repo: RepoRef, number: int,
                          validators: Mapping[str, str]) -> tuple[PullRequest | None, dict[str, str]]:
        """A conditional `get_pr` (ETag / If-None-Match, Last-Modified / If-Modified-Since):
        (None, validators) when the forge says nothing changed since `validators` (start with
        {}), else (the PR, the validators to send next time). The default asks every time."""
        return self.get_pr(conn, repo, number), {}

    def checks_if_changed(self, conn: Connection, repo: RepoRef, sha: str,
                          validators: Mapping[str, str]) -> tuple[list[Check] | None, dict[str, str]]:
        """A conditional `checks`, as `get_pr_if_changed`."""
        return self.checks(conn, repo, sha), {}

    def mark_ready(self, conn: Connection, repo: RepoRef, number: int) -> PullRequest:
        """Take a draft out of draft (forges refuse to merge drafts: call this before `merge`
        when the PR's state is "draft"); the PR as it is then. The default changes nothing."""
        return self.get_pr(conn, repo, number)

    def comments(self, conn: Connection, repo: RepoRef, number: int, since: str = "") -> list[ReviewComment]:
        """The PR's conversation comments (inline ones come with `reviews`), oldest first, only
        those made after `since` (ISO-8601; "" = all), each with `id` and `created_at`: a poller
        finds the ones that mention the agent here. The default knows none."""
        return []

    # -- Added by forge-trust (who may send the agent work).

    def author_may_write(self, conn: Connection, repo: RepoRef, author: str, author_id: str = "") -> bool:
        """Whether `author` (a review's or comment's author; `author_id` the forge's id of them,
        which GitLab needs) has write access to `repo`: GitHub admin/maintain/write, GitLab
        Developer (30) or above, Gitea/Forgejo write/admin/owner. Only such people's reviews and
        comments send the agent work (on a public repository anyone can comment). False for a
        user the forge does not know; ForgeError when the forge cannot be asked. The default
        says False: a forge that cannot tell trusts nobody."""
        return False


@dataclass
class PushTarget:
    """What the daemon needs to push a task's branch (sent only to that task's daemon, only in
    the body of an authenticated answer; see docs/forges.md). The token goes into git's
    environment as an `http.<url>.extraHeader` through GIT_CONFIG_COUNT/KEY/VALUE — never argv,
    never a config file, never the agent's environment."""

    remote_url: str
    branch: str
    username: str
    token: str
    extra: dict[str, str] = field(default_factory=dict)
