"""Webhook deliveries: signed as each forge signs them, POSTed to a URL, replayable and forgeable.

- GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`, `X-GitHub-Event`,
  `X-GitHub-Delivery` (a GUID), `X-GitHub-Hook-ID`.
- Gitea: `X-Gitea-Signature: <hex HMAC-SHA256>`, `X-Gitea-Event` (short name), `X-Gitea-Event-Type`,
  `X-Gitea-Delivery`, the same as `X-Gogs-*`, and GitHub's (`X-Hub-Signature(-256)`, `X-GitHub-Event`,
  `X-GitHub-Delivery`); Forgejo sends all of that plus `X-Forgejo-*`.
- GitLab: `X-Gitlab-Token: <secret>` (no HMAC), `X-Gitlab-Event`, `X-Gitlab-Event-UUID`.
The payloads themselves are built by the forge modules (github.py, gitlab.py, gitea.py).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx


@dataclass
class Delivery:
    event: str  # the forge's event header value: pull_request, Merge Request Hook, …
    payload: dict[str, Any]
    delivery_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    #: Extra headers the forge adds for this event (Gitea's X-Gitea-Event-Type, GitLab's X-Gitlab-Instance).
    extra_headers: dict[str, str] = field(default_factory=dict)

    @property
    def body(self) -> bytes:
        return json.dumps(self.payload, separators=(",", ":")).encode()

    def headers(self, kind: str, secret: str, *, tamper: bool = False) -> dict[str, str]:
        body = self.body
        mac = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        if tamper:
            mac = hmac.new(b"not-the-secret", body, hashlib.sha256).hexdigest()
        common = {"Content-Type": "application/json", **self.extra_headers}
        if kind == "github":
            return {**common, "X-GitHub-Event": self.event, "X-GitHub-Delivery": self.delivery_id,
                    "X-GitHub-Hook-ID": "1", "User-Agent": "GitHub-Hookshot/standin",
                    "X-Hub-Signature-256": "sha256=" + mac}
        if kind == "gitlab":
            return {**common, "X-Gitlab-Event": self.event, "X-Gitlab-Event-UUID": self.delivery_id,
                    "X-Gitlab-Webhook-UUID": "standin-hook", "User-Agent": "GitLab/standin",
                    "X-Gitlab-Token": "wrong-token" if tamper else secret}
        # Gitea (services/webhook/deliver.go) sends its own, Gogs' and GitHub's headers; Forgejo adds
        # X-Forgejo-*. A receiver must not take a Gitea delivery for GitHub's because of X-GitHub-Event.
        event_type = self.extra_headers.get("X-Gitea-Event-Type", self.event)
        sha1 = hmac.new(b"not-the-secret" if tamper else secret.encode(), body, hashlib.sha1).hexdigest()
        prefixes = (["X-Forgejo"] if kind == "forgejo" else []) + ["X-Gitea", "X-Gogs"]
        headers = {"Content-Type": "application/json", "User-Agent": "Go-http-client/1.1"}
        for prefix in prefixes:
            headers.update({f"{prefix}-Delivery": self.delivery_id, f"{prefix}-Event": self.event,
                            f"{prefix}-Event-Type": event_type, f"{prefix}-Signature": mac})
        headers.update({"X-Hub-Signature": "sha1=" + sha1, "X-Hub-Signature-256": "sha256=" + mac,
                        "X-GitHub-Delivery": self.delivery_id, "X-GitHub-Event": self.event,
                        "X-GitHub-Event-Type": event_type})
        return headers


def deliver(url: str, delivery: Delivery, kind: str, secret: str, *, tamper: bool = False,
            timeout: float = 10) -> int:
    """POST one delivery; the HTTP status the receiver answered."""
    response = httpx.post(url, content=delivery.body, headers=delivery.headers(kind, secret, tamper=tamper),
                          timeout=timeout)
    return response.status_code


def signature_ok(kind: str, headers: dict[str, str], body: bytes, secret: str) -> bool:
    """How a receiver checks a delivery (the stand-ins' own tests use it as the reference)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    if kind == "github":
        return hmac.compare_digest(lowered.get("x-hub-signature-256", ""), "sha256=" + expected)
    if kind == "gitlab":
        return hmac.compare_digest(lowered.get("x-gitlab-token", ""), secret)
    name = "x-forgejo-signature" if kind == "forgejo" else "x-gitea-signature"
    return hmac.compare_digest(lowered.get(name, ""), expected)
