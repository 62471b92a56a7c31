"""Webhook deliveries reach a real HTTP receiver signed as each forge signs them; a replay carries
the same delivery id; a forged one does not verify; with a registered hook the stand-in delivers
its events by itself, in order. The receiver checks with hmac itself."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

from forgestand.webhooks import signature_ok

from .test_github_standin import push_branch
from .test_polling import AUTH

EVENT_HEADER = {"github": "x-github-event", "gitlab": "x-gitlab-event", "gitea": "x-gitea-event", "forgejo": "x-forgejo-event"}


def test_deliveries_are_signed_replayable_and_forgeable(any_standin, webhook_receiver):
    s = any_standin
    s.create_repo("acme/h")
    s.commit_on_server("acme/h", "feat", {"f": "1"})
    pr = s.open_pr("acme/h", "feat")
    s.submit_review("acme/h", pr.number, "approved", "ship it")
    delivery = s.webhook("review", "acme/h", pr.number)
    assert s.deliver(webhook_receiver.url, delivery) == 202
    assert s.deliver(webhook_receiver.url, delivery) == 202  # a replay
    assert s.deliver(webhook_receiver.url, delivery, tamper=True) == 202
    (h1, b1), (h2, b2), (h3, b3) = webhook_receiver.received
    assert b1 == b2 == b3 == delivery.body and json.loads(b1)  # the bytes signed are the bytes sent
    mac = hmac.new(s.webhook_secret.encode(), b1, hashlib.sha256).hexdigest()
    if s.kind == "github":
        ids = [h["x-github-delivery"] for h in (h1, h2)]
        assert h1["x-hub-signature-256"] == "sha256=" + mac and h3["x-hub-signature-256"] != "sha256=" + mac
        assert h1["x-github-event"] == "pull_request_review"
    elif s.kind == "gitlab":
        ids = [h["x-gitlab-event-uuid"] for h in (h1, h2)]
        assert h1["x-gitlab-token"] == s.webhook_secret and h3["x-gitlab-token"] != s.webhook_secret
    else:
        ids = [h["x-gitea-delivery"] for h in (h1, h2)]
        assert h1["x-gitea-signature"] == mac and h3["x-gitea-signature"] != mac
        assert h1["x-gitea-event"] == "pull_request_approved"
        assert h1["x-gitea-event-type"] == "pull_request_review_approved"
        # Gitea also sends GitHub's headers (a receiver must know the forge by the hook, not by them)
        assert h1["x-github-event"] == "pull_request_approved" and h1["x-hub-signature-256"] == "sha256=" + mac
        assert h1["x-hub-signature"] == "sha1=" + hmac.new(s.webhook_secret.encode(), b1, hashlib.sha1).hexdigest()
        if s.kind == "forgejo":
            assert h1["x-forgejo-signature"] == mac and h1["x-forgejo-delivery"] == ids[0]
    assert ids[0] == ids[1] == delivery.delivery_id


def test_a_registered_hook_gets_the_forges_events_in_order(any_standin, webhook_receiver, tmp_path):
    import httpx2 as httpx
    s = any_standin
    s.create_repo("acme/auto")
    s.send_hooks_to(webhook_receiver.url)
    push_branch(s, "acme/auto", tmp_path / "w", "agent/1", {"a.txt": "1\n"})
    pr = s.open_pr("acme/auto", "agent/1", title="Auto")
    webhook_receiver.wait_for(1)
    work = tmp_path / "w"
    (work / "a.txt").write_text("2\n")
    from .test_github_standin import run_git
    run_git(work, "commit", "-qam", "more")
    assert run_git(work, "push", "-q", "origin", "agent/1").returncode == 0
    webhook_receiver.wait_for(2)  # the push is noticed: synchronize
    s.submit_review("acme/auto", pr.number, "changes_requested", "no", comments=[("a.txt", 1, "why")])
    s.set_check("acme/auto", s.pr("acme/auto", pr.number).head_sha, "ci", "success")
    merge = {"github": ("PUT", "/repos/acme/auto/pulls/1/merge", {"merge_method": "merge"}),
             "gitlab": ("PUT", "/projects/acme%2Fauto/merge_requests/1/merge", {}),
             "gitea": ("POST", "/repos/acme/auto/pulls/1/merge", {"Do": "merge"}),
             "forgejo": ("POST", "/repos/acme/auto/pulls/1/merge", {"Do": "merge"})}[s.kind]
    assert httpx.request(merge[0], s.api_url + merge[1], json=merge[2], headers=AUTH[s.kind](s.token), timeout=10).status_code == 200
    got = webhook_receiver.wait_for(6)
    events = [h[EVENT_HEADER[s.kind]] for h, _ in got]
    bodies = [json.loads(b) for _, b in got]
    assert all(signature_ok(s.kind, h, b, s.webhook_secret) for h, b in got)
    deadline = time.monotonic() + 10
    while len(s.hook_log) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)  # the sender records the status just after the receiver has the body
    assert [x.status for x in s.hook_log] == [202] * 6
    if s.kind == "github":
        assert events == ["pull_request", "pull_request", "pull_request_review", "pull_request_review_comment",
                          "check_run", "pull_request"]
        assert [b.get("action") for b in bodies] == ["opened", "synchronize", "submitted", "created", "completed", "closed"]
        assert bodies[-1]["pull_request"]["merged"] is True
    elif s.kind == "gitlab":
        assert events == ["Merge Request Hook", "Merge Request Hook", "Merge Request Hook", "Note Hook",
                          "Pipeline Hook", "Merge Request Hook"]
        assert [b["object_attributes"].get("action") for b in bodies if b["object_kind"] == "merge_request"] == [
            "open", "update", "update", "merge"]
    else:
        assert events == ["pull_request", "pull_request", "pull_request_rejected", "pull_request_comment",
                          "status", "pull_request"]
        assert got[1][0]["x-gitea-event-type"] == "pull_request_sync"
        assert bodies[1]["action"] == "synchronized" and bodies[-1]["pull_request"]["merged"] is True
