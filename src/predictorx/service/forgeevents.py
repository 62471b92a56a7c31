"""What happens on a forge comes back (issue 22 §4): webhook deliveries, and polling where the
forge cannot reach the server.

A delivery is authenticated by the forge's own signature (or token) with the connection's
webhook secret, before its body is read as an event; a bad one changes nothing. Its delivery id
is recorded (`ForgeDelivery`) in the same transaction as the change it makes, so a replayed
delivery is answered "already taken" and changes nothing either.

The poller asks the forge about open PRs that heard no webhook lately, at most
`PREDICTORX_FORGE_POLL_PER_MINUTE` requests a minute per connection, with conditional requests
where the client offers them. What it learns goes through the same functions a webhook's event
does (service/forgefeedback.py).
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from dataclasses import dataclass
from datetime import timedelta
from typing import Mapping

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from ..forges import base as forge_api
from ..forges import registry
from ..store.schema import ForgeConnection, ForgeDelivery, PullRequest, utcnow
from . import forgefeedback as feedback
from . import forges as connections
from . import forgetrust
from .errors import Invalid, NotFound, ServiceError
from .pullrequests import OPEN_STATES, ForgeTarget, Transactions, apply_remote, target

log = logging.getLogger("predictorx.forges")


class Unauthenticated(ServiceError):
    status = 401


@dataclass(frozen=True)
class Outcome:
    taken: bool
    message: str


# -- webhooks ----------------------------------------------------------------------------------

def ingest(db: Transactions, connection_id: str, headers: Mapping[str, str], body: bytes) -> Outcome:
    """Verify, read and apply one delivery. Unknown connection → NotFound; a delivery not signed
    with the connection's secret → Unauthenticated; a replayed delivery id → taken=False."""
    with db.read() as s:
        row = s.get(ForgeConnection, connection_id)
        if row is None:
            raise NotFound("no such forge connection")
        forge, secret, conn = registry.get(row.kind), connections.webhook_secret_of(row), connections.connection_of(row)
    try:
        forge.verify_webhook(headers, body, secret)
    except forge_api.WebhookRejected as e:
        raise Unauthenticated(f"webhook refused: {e}") from e
    try:
        event = forge.parse_webhook(headers, body)
    except forge_api.WebhookRejected as e:
        raise Invalid(f"webhook not understood: {e}") from e
    if not event.delivery_id:
        raise Invalid("webhook has no delivery id")
    if _taken(db, connection_id, event.delivery_id):
        return Outcome(False, "already taken")
    review = _full_review(forge, conn, event)  # outside any transaction: forge calls
    may_write = forgetrust.writers(connection_id, forge, conn, event.repo_path, _authors(event, review))
    try:
        with db.write() as s:
            if s.scalar(select(ForgeDelivery.id).where(ForgeDelivery.connection_id == connection_id,
                                                       ForgeDelivery.delivery_id == event.delivery_id)):
                return Outcome(False, "already taken")
            s.add(ForgeDelivery(connection_id=connection_id, delivery_id=event.delivery_id[:200],
                                event=(event.raw_event or event.kind)[:100]))
            s.flush()
            done = []
            for pr in feedback.rows_for(s, connection_id, event):
                pr.poll_state = {**(pr.poll_state or {}), "webhook_at": time.time()}
                done.append(feedback.apply_event(s, pr, event, review, may_write))
    except IntegrityError:  # the same delivery, taken by a concurrent request
        return Outcome(False, "already taken")
    return Outcome(True, "; ".join(done) or f"{event.kind}: no tracked pull request")


def _authors(event: forge_api.ForgeEvent, review: forge_api.Review | None) -> list[tuple[str, str]]:
    """Whose write access the event's effect depends on: a review's author; a comment's when it
    can mention the agent (a comment without "@" changes nothing, so the forge is not asked)."""
    if event.kind == "review" and review is not None:
        return [(review.author, review.author_id)]
    if event.kind == "comment" and event.comment is not None and "@" in event.comment.body:
        return [(event.comment.author, event.comment.author_id)]
    return []


def _taken(db: Transactions, connection_id: str, delivery_id: str) -> bool:
    with db.read() as s:
        return s.scalar(select(ForgeDelivery.id).where(ForgeDelivery.connection_id == connection_id,
                                                       ForgeDelivery.delivery_id == delivery_id)) is not None


def _full_review(forge: forge_api.Forge, conn: forge_api.Connection,
                 event: forge_api.ForgeEvent) -> forge_api.Review | None:
    """A review webhook carries the review but not its inline comments: read them from the forge
    (the prompt needs file, line and text). The delivery's own review if the forge says no."""
    review = event.review
    if event.kind != "review" or review is None or review.comments or event.pr_number is None:
        return review
    try:
        for r in forge.reviews(conn, forge_api.RepoRef(event.repo_path), event.pr_number):
            if r.id == review.id:
                return r if r.comments else review
    except forge_api.ForgeError as e:
        log.warning("reading review %s's comments failed: %s", review.id, e)
    return review


# -- polling -----------------------------------------------------------------------------------

def poll_interval() -> float:
    return float(os.environ.get("PREDICTORX_FORGE_POLL_INTERVAL", "60"))


def per_minute() -> int:
    return int(os.environ.get("PREDICTORX_FORGE_POLL_PER_MINUTE", "30"))


#: A PR that heard a webhook this recently is not polled: its forge reaches the server.
WEBHOOK_FRESH = timedelta(minutes=15)
#: The requests one poll of a PR makes (the PR, its reviews, its comments, its head's checks).
REQUESTS_PER_PR = 4


class Poller:
    """Polls open PRs with no recent webhook, within a per-connection budget (a sliding minute)."""

    def __init__(self, limit_per_minute: int | None = None, interval: float | None = None):
        self.limit = limit_per_minute or per_minute()
        self.interval = interval if interval is not None else poll_interval()
        self._spent: dict[str, deque[float]] = {}

    def budget(self, connection_id: str, now: float) -> int:
        spent = self._spent.setdefault(connection_id, deque())
        while spent and spent[0] <= now - 60:
            spent.popleft()
        return self.limit - len(spent)

    def spend(self, connection_id: str, n: int, now: float) -> None:
        self._spent.setdefault(connection_id, deque()).extend([now] * n)

    def due(self, db: Transactions, now: float) -> list[tuple[str, str]]:
        """(workspace id, PR id) of open PRs due for a poll, least recently polled first."""
        cutoff = utcnow() - timedelta(seconds=self.interval)
        with db.read() as s:
            rows = s.execute(select(PullRequest.workspace_id, PullRequest.id, PullRequest.poll_state,
                                    PullRequest.connection_id, PullRequest.polled_at)
                             .where(PullRequest.state.in_(OPEN_STATES), PullRequest.number.is_not(None))
                             .order_by(PullRequest.polled_at.is_not(None), PullRequest.polled_at).limit(200)).all()
        due = []
        for ws, pr_id, state, _conn, polled_at in rows:
            heard = float((state or {}).get("webhook_at") or 0)
            if now - heard < WEBHOOK_FRESH.total_seconds():
                continue
            if polled_at is not None and polled_at > cutoff:
                continue
            due.append((ws, pr_id))
        return due

    def once(self, db: Transactions, now: float | None = None) -> int:
        """One round; returns the forge requests made."""
        now = time.time() if now is None else now
        made = 0
        for ws, pr_id in self.due(db, now):
            with db.read() as s:
                pr = s.get(PullRequest, pr_id)
                if pr is None or pr.number is None:
                    continue
                where, conn_id, number = target(s, pr), pr.connection_id, pr.number
                state = {**(pr.poll_state or {}), "head_sha": pr.head_sha}
            if self.budget(conn_id, now) < REQUESTS_PER_PR:
                continue
            self.spend(conn_id, REQUESTS_PER_PR, now)
            made += REQUESTS_PER_PR
            try:
                poll_pr(db, ws, pr_id, where, number, state, conn_id)
            except forge_api.ForgeError as e:
                log.warning("polling pull request %s failed: %s", pr_id, e)
        return made


def poll_pr(db: Transactions, workspace_id: str, pr_id: str, where: ForgeTarget, number: int,
            state: dict, connection_id: str = "") -> None:
    """Read one PR, its reviews, new conversation comments and its head's checks from the forge
    (the PR and the checks conditionally: an unchanged one costs a 304) and apply what changed."""
    validators = dict(state.get("validators") or {})
    remote, validators["pr"] = where.forge.get_pr_if_changed(where.conn, where.repo, number, validators.get("pr") or {})
    head = remote.head_sha if remote is not None else state.get("head_sha")
    reviews = where.forge.reviews(where.conn, where.repo, number)
    comments = where.forge.comments(where.conn, where.repo, number, since=str(state.get("comments_since") or ""))
    checks: list[forge_api.Check] | None = None
    if head:
        checks, validators["checks"] = where.forge.checks_if_changed(where.conn, where.repo, head,
                                                                     validators.get("checks") or {})
    seen = set(state.get("seen_reviews") or [])
    since = str(state.get("comments_since") or "")
    authors = [(r.author, r.author_id) for r in reviews if r.id not in seen]
    authors += [(c.author, c.author_id) for c in comments
                if "@" in c.body and state.get("comments_since") is not None and (c.created_at or "") > since]
    may_write = forgetrust.writers(connection_id or pr_id, where.forge, where.conn, where.repo.path, authors)
    with db.write() as s:
        pr = s.get(PullRequest, pr_id)
        if pr is None or pr.workspace_id != workspace_id:
            return
        pr.polled_at = utcnow()
        # A push reported while the forge was read moved the head: what was read is older than the
        # row (its head would put the old commit back and drop the new one's checks). The next poll
        # reads again, so the validators of this read are not kept.
        moved = pr.head_sha != state.get("head_sha")
        if moved:
            validators = dict(state.get("validators") or {})
        elif remote is not None and (remote.state != pr.state or remote.head_sha != pr.head_sha):
            apply_remote(s, pr, remote)
        for review in reviews:
            feedback.on_review(s, pr, review, may_write)
        newest = str(state.get("comments_since") or "")
        for comment in comments:
            if comment.created_at and comment.created_at <= newest:
                continue
            newest = max(newest, comment.created_at or "")
            if state.get("comments_since") is not None:  # the first poll only learns where to start
                feedback.on_comment(s, pr, comment, may_write)
        if checks and pr.state in OPEN_STATES:
            feedback.on_checks(s, pr, checks, head)
        pr.poll_state = {**(pr.poll_state or {}), "validators": validators, "comments_since": newest}
