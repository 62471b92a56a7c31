"""Who may call which route: the one declarative table of the role matrix (R-SEC-4, SECURITY-MODEL).

Every API route and web page has exactly one entry here, keyed by "METHOD /path template". The
app-wide dependency `enforce` looks the matched route up before anything else runs and refuses
what the entry does not allow; a route with no entry is refused (deny by default), and
tests/api/test_access_matrix.py fails for it. `docs/security.md` prints this table
(`python -m predictorx.server.access` regenerates it) and a test keeps the two equal.

What an entry says is the *floor*: the least a caller needs to reach the handler at all. Rules
that depend on the object (a task token acts on its own task only, only a daemon's owner edits
agents on it, only owners manage owners) stay in the service, next to the data they need.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select

from ..service.auth import Principal
from ..service.errors import Forbidden, NotFound
from ..store.schema import Workspace

ROLE_RANK = {"member": 1, "admin": 2, "owner": 3}


@dataclass(frozen=True)
class Rule:
    """`people`: None (no person), "person" (any signed-in person, no workspace role needed), or the
    least workspace role ("member" < "admin" < "owner"). `daemon` / `task`: whether a daemon-scoped
    or a task-scoped token may call it (the handler then limits it to its own daemon or task)."""

    people: str | None
    daemon: bool = False
    task: bool = False
    public: bool = False
    #: No token at all: the handler checks a task's relay pass (HTTP Basic, service/relaypass.py).
    relay: bool = False

    def describe(self) -> str:
        if self.public:
            return "anyone (no token)"
        if self.relay:
            return "the task's relay pass (HTTP Basic; its daemon)"
        parts = []
        if self.people == "person":
            parts.append("any signed-in person")
        elif self.people:
            parts.append({"member": "member, admin, owner", "admin": "admin, owner", "owner": "owner"}[self.people])
        if self.daemon:
            parts.append("its daemon" if self.people or self.task else "daemon (its own)")
        if self.task:
            parts.append("its task")
        return "; ".join(parts)


PUBLIC = Rule(None, public=True)
PERSON = Rule("person")
MEMBER = Rule("member")
ADMIN = Rule("admin")
OWNER = Rule("owner")
DAEMON = Rule(None, daemon=True)
MEMBER_OR_TASK = Rule("member", task=True)
MEMBER_DAEMON_TASK = Rule("member", daemon=True, task=True)
RELAY = Rule(None, relay=True)

# fmt: off
ACCESS: dict[str, Rule] = {
    # meta and session
    "GET /api/health":                                   PUBLIC,
    "GET /api/me":                                       Rule("person", daemon=True, task=True),
    "POST /api/login-link":                              PERSON,
    # workspaces, members, a person's own tokens
    "GET /api/workspaces":                               PERSON,
    "POST /api/workspaces":                              PERSON,
    "GET /api/workspaces/{ref}":                         MEMBER,
    "PATCH /api/workspaces/{ref}":                       ADMIN,
    "GET /api/workspaces/{ref}/members":                 MEMBER,
    "POST /api/workspaces/{ref}/members":                ADMIN,
    "PATCH /api/workspaces/{ref}/members/{user_id}":     ADMIN,    # owners only for owners: service
    "DELETE /api/workspaces/{ref}/members/{user_id}":    ADMIN,    # owners only for owners: service
    "GET /api/tokens":                                   PERSON,
    "POST /api/tokens":                                  PERSON,
    "DELETE /api/tokens/{token_id}":                     PERSON,
    # projects and their resources
    "GET /api/projects":                                 MEMBER,
    "POST /api/projects":                                MEMBER,
    "GET /api/projects/{project_id}":                    MEMBER,
    "PATCH /api/projects/{project_id}":                  MEMBER,
    "DELETE /api/projects/{project_id}":                 ADMIN,
    "GET /api/projects/{project_id}/resources":          MEMBER,
    "POST /api/projects/{project_id}/resources":         MEMBER,
    "GET /api/projects/{project_id}/resources/{resource_id}":    MEMBER,
    "PATCH /api/projects/{project_id}/resources/{resource_id}":  MEMBER,
    "DELETE /api/projects/{project_id}/resources/{resource_id}": MEMBER,
    # issues
    "GET /api/issues":                                   MEMBER,
    "POST /api/issues":                                  MEMBER,
    "GET /api/issues/{ref}":                             MEMBER_OR_TASK,
    "PATCH /api/issues/{ref}":                           MEMBER_OR_TASK,   # a task: its issue's status, up to in_review
    "DELETE /api/issues/{ref}":                          ADMIN,    # with its comments, runs, workflows
    "POST /api/issues/{ref}/assign":                     MEMBER,
    "GET /api/issues/{ref}/comments":                    MEMBER_OR_TASK,
    "POST /api/issues/{ref}/comments":                   MEMBER_OR_TASK,
    "GET /api/issues/{ref}/runs":                        MEMBER,
    "GET /api/issues/{ref}/labels":                      MEMBER,
    "POST /api/issues/{ref}/labels":                     MEMBER,
    "DELETE /api/issues/{ref}/labels/{name}":            MEMBER,
    "GET /api/labels":                                   MEMBER,
    "POST /api/labels":                                  MEMBER,
    "PATCH /api/labels/{ref}":                           MEMBER,
    "DELETE /api/labels/{ref}":                          MEMBER,
    # harness (SPEC §10): workflows, interaction state, beans, classifications, project roles;
    # a task token acts on its own issue only (routes/workflows.py issue_for)
    "GET /api/workflows/processes":                      MEMBER_OR_TASK,
    "GET /api/workflows/record":                         MEMBER,
    "POST /api/classify":                                MEMBER_OR_TASK,
    "GET /api/classification/rules":                     MEMBER,
    "GET /api/classification/rules/{name}":              MEMBER,
    "PUT /api/classification/rules/{name}":              ADMIN,    # what auto-starts workflows: admins
    "DELETE /api/classification/rules/{name}":           ADMIN,
    "GET /api/issues/{ref}/workflows":                   MEMBER_OR_TASK,
    "POST /api/issues/{ref}/workflows":                  MEMBER_OR_TASK,
    "GET /api/issues/{ref}/workflows/{process}":         MEMBER_OR_TASK,
    "POST /api/issues/{ref}/workflows/{process}/steps":  MEMBER_OR_TASK,
    "GET /api/issues/{ref}/workflows/{process}/prov":    MEMBER_OR_TASK,
    "GET /api/issues/{ref}/workflow-state":              MEMBER_OR_TASK,
    "POST /api/issues/{ref}/workflow-state/suspend":     MEMBER_OR_TASK,
    "POST /api/issues/{ref}/workflow-state/resume":      MEMBER_OR_TASK,
    "POST /api/issues/{ref}/workflow-state/answer":      MEMBER,   # scenario 3: a person answers
    "POST /api/issues/{ref}/workflows/{process}/exit":   MEMBER,   # a declared exit (defer): its role, a person
    "POST /api/issues/{ref}/workflows/{process}/stop":   MEMBER,   # a person stops a running workflow, with a reason
    "GET /api/issues/{ref}/beans":                       MEMBER_OR_TASK,
    "POST /api/issues/{ref}/beans":                      MEMBER_OR_TASK,
    "GET /api/issues/{ref}/beans/export":                MEMBER_OR_TASK,
    "POST /api/issues/{ref}/beans/import":               MEMBER_OR_TASK,
    "GET /api/issues/{ref}/beans/{bean}":                MEMBER_OR_TASK,
    "POST /api/issues/{ref}/beans/{bean}/{op}":          MEMBER_OR_TASK,
    "GET /api/issues/{ref}/classifications":             MEMBER_OR_TASK,
    "POST /api/issues/{ref}/classifications":            MEMBER_OR_TASK,
    "GET /api/projects/{project}/roles":                 MEMBER,
    "POST /api/projects/{project}/roles":                ADMIN,
    # agents (create/edit on a machine: only that daemon's owner — service, R-SEC-6)
    "GET /api/agents":                                   MEMBER,
    "POST /api/agents":                                  MEMBER,
    "GET /api/agents/{ref}":                             MEMBER,
    "PATCH /api/agents/{ref}":                           MEMBER,   # its owner only: service
    "DELETE /api/agents/{ref}":                          MEMBER,   # its owner, or an admin/owner: service
    "POST /api/agents/{ref}/archive":                    MEMBER,   # its owner, or an admin/owner: service
    "POST /api/agents/{ref}/restore":                    MEMBER,   # its owner, or an admin/owner: service
    # an agent's variables and secrets (issue 28 §2): set by its owner only; listed (names, never a
    # secret's value) and removed by its owner or an admin/owner; workspace secrets and their grants
    # by admins/owners
    "GET /api/agents/{ref}/env":                         MEMBER,   # its owner, or an admin/owner: service
    "PUT /api/agents/{ref}/env/{name}":                  MEMBER,   # its owner only: service
    "DELETE /api/agents/{ref}/env/{name}":               MEMBER,   # its owner, or an admin/owner: service
    "POST /api/agents/{ref}/grants":                     ADMIN,
    "DELETE /api/agents/{ref}/grants/{name}":            ADMIN,
    "GET /api/secrets":                                  ADMIN,
    "PUT /api/secrets/{name}":                           ADMIN,
    "DELETE /api/secrets/{name}":                        ADMIN,
    # the audit log (issue 28 §4)
    "GET /api/audit":                                    ADMIN,
    "GET /api/audit/export":                             ADMIN,
    "GET /api/audit/retention":                          ADMIN,
    "PUT /api/audit/retention":                          OWNER,
    # tasks
    "GET /api/tasks":                                    MEMBER,
    "GET /api/tasks/{task_id}":                          MEMBER_DAEMON_TASK,
    "GET /api/tasks/{task_id}/messages":                 MEMBER_DAEMON_TASK,
    "POST /api/tasks/{task_id}/messages":                DAEMON,
    "POST /api/tasks/{task_id}/cancel":                  MEMBER,
    "POST /api/tasks/{task_id}/answer":                  MEMBER,
    "GET /api/tasks/{task_id}/review":                   MEMBER,
    "POST /api/tasks/{task_id}/rerun":                   MEMBER,
    "GET /api/tasks/{task_id}/harness/sweep":            MEMBER_DAEMON_TASK,
    "GET /api/tasks/{task_id}/harness/handoff":          MEMBER_DAEMON_TASK,
    "POST /api/tasks/{task_id}/harness/handoff":         Rule(None, daemon=True, task=True),
    "GET /api/issues/{ref}/handoffs":                    MEMBER_OR_TASK,
    # usage and budgets (issue 27 §1-2): members read them; owners and admins set prices and budgets
    "GET /api/usage":                                    MEMBER,
    "GET /api/usage/runs/{task_id}":                     MEMBER,
    "GET /api/usage/prices":                             MEMBER,
    "PUT /api/usage/prices":                             ADMIN,
    "DELETE /api/usage/prices":                          ADMIN,
    "GET /api/budgets":                                  MEMBER,
    "POST /api/budgets":                                 ADMIN,
    "DELETE /api/budgets/{budget_id}":                   ADMIN,
    # autopilots (issue 27 §5): members see them and their history; owners and admins manage them
    "GET /api/autopilots":                               MEMBER,
    "POST /api/autopilots":                              ADMIN,
    "GET /api/autopilots/{ref}":                         MEMBER,
    "DELETE /api/autopilots/{ref}":                      ADMIN,
    "PATCH /api/autopilots/{ref}/schedule":              ADMIN,
    "POST /api/autopilots/{ref}/pause":                  ADMIN,
    "POST /api/autopilots/{ref}/resume":                 ADMIN,
    "POST /api/autopilots/{ref}/fire":                   ADMIN,
    "POST /api/autopilots/{ref}/rotate-url":             ADMIN,
    "POST /api/autopilot-firings/{firing_id}/replay":    ADMIN,
    "GET /api/autopilot-scheduler":                      MEMBER,
    "POST /api/autopilot-hooks/{hook_id}":               PUBLIC,   # its signature: service/autopilot_webhook
    # the inbox and subscriptions (issue 27 §3): a person's own items only (another's: 404)
    "GET /api/inbox":                                    MEMBER,
    "GET /api/inbox/count":                              MEMBER,
    "POST /api/inbox/mark-all":                          MEMBER,
    "GET /api/inbox/{item_id}":                          MEMBER,   # its person only: service (else 404)
    "PATCH /api/inbox/{item_id}":                        MEMBER,   # its person only: service (else 404)
    "GET /api/issues/{ref}/subscription":                MEMBER,
    "PUT /api/issues/{ref}/subscription":                MEMBER,
    "DELETE /api/issues/{ref}/subscription":             MEMBER,
    # outbound notifications (issue 27 §4): a person's own channels; the workspace's are changed
    # by owners and admins (service/notify_channels.editable); another person's channel: 404
    "GET /api/notifications/channels":                   MEMBER,
    "POST /api/notifications/channels":                  MEMBER,   # scope workspace: admins/owners (service)
    "PATCH /api/notifications/channels/{channel_id}":    MEMBER,   # its person, or admins for the workspace's
    "DELETE /api/notifications/channels/{channel_id}":   MEMBER,   # its person, or admins for the workspace's
    "POST /api/notifications/channels/{channel_id}/test": MEMBER,  # its person, or admins for the workspace's
    "GET /api/notifications/channels/{channel_id}/deliveries": MEMBER,
    "POST /api/notifications/deliveries/{delivery_id}/redeliver": MEMBER,  # as its channel: service
    # forge connections (issue 22 §1, docs/forges.md): members see them (never a secret); owners
    # and admins add, change, remove, test them and rotate the webhook secret
    "GET /api/forges":                                   MEMBER,
    "POST /api/forges":                                  ADMIN,
    "GET /api/forges/{connection_id}":                   MEMBER,
    "PATCH /api/forges/{connection_id}":                 ADMIN,
    "DELETE /api/forges/{connection_id}":                ADMIN,
    "POST /api/forges/{connection_id}/test":             ADMIN,
    "POST /api/forges/{connection_id}/webhook-secret":   ADMIN,
    # daemons: listing for people, the daemon's own API
    # pull requests (issue 22): merge and discard need an owner/admin, or a member where the
    # forge connection allows members to merge (service/pullrequests.may_merge)
    "GET /api/pull-requests/{pr_id}":                    MEMBER,
    "GET /api/issues/{ref}/pull-requests":               MEMBER,
    "GET /api/tasks/{task_id}/pr":                       MEMBER,
    "POST /api/tasks/{task_id}/pr":                      MEMBER,
    "POST /api/tasks/{task_id}/merge":                   MEMBER,   # members where the connection allows: service
    "POST /api/tasks/{task_id}/discard":                 MEMBER,   # members where the connection allows: service
    "POST /api/pull-requests/{pr_id}/merge":             MEMBER,   # members where the connection allows: service
    "POST /api/pull-requests/{pr_id}/discard":           MEMBER,   # members where the connection allows: service
    "POST /api/pull-requests/{pr_id}/ask-again":         MEMBER,
    "POST /api/forges/{connection_id}/webhook":          PUBLIC,   # the forge's own signature: service/forgeevents
    "GET /api/daemons":                                  MEMBER,
    "GET /api/daemons/{daemon_id}":                      MEMBER,
    "POST /api/daemon/register":                         Rule("member", daemon=True),  # a daemon: itself only
    "POST /api/daemon/heartbeat":                        DAEMON,
    "POST /api/daemon/claim":                            DAEMON,
    "POST /api/daemon/tasks/{task_id}/status":           DAEMON,
    "POST /api/daemon/tasks/{task_id}/release":          DAEMON,
    "POST /api/daemon/tasks/{task_id}/finish":           DAEMON,
    "POST /api/daemon/requests/{request_id}":            DAEMON,
    "GET /api/daemon/events":                            DAEMON,
    # a task's branch and its forge (routes/daemon_forge.py): the push target (with the forge's
    # credential) and its report only for the daemon that ran the task (service: else 404)
    "GET /api/daemon/tasks/{task_id}/forge-target":      DAEMON,
    "POST /api/daemon/tasks/{task_id}/forge-push":       DAEMON,
    "POST /api/daemon/tasks/{task_id}/push-target":      DAEMON,
    "POST /api/daemon/tasks/{task_id}/pushing":          DAEMON,
    # the relay a daemon pushes through (routes/forge_relay.py): its task's relay pass, no token
    "GET /api/daemon/tasks/{task_id}/git/info/refs":     RELAY,
    "POST /api/daemon/tasks/{task_id}/git/git-receive-pack": RELAY,
    "POST /api/daemon/tasks/{task_id}/git/git-upload-pack":  RELAY,
    "POST /api/tasks/{task_id}/push":                    MEMBER,
    "POST /api/tasks/{task_id}/local-merge":             MEMBER,   # the folder's daemon's owner only: forgeasks
    "POST /api/tasks/{task_id}/local-discard":           MEMBER,   # the folder's daemon's owner only: forgeasks
    "GET /api/events":                                   MEMBER,
    # web pages
    "GET /login":                                        PUBLIC,
    "POST /login":                                       PUBLIC,
    "POST /logout":                                      PUBLIC,
    # OpenID Connect sign-in (issue 28 §1, web/sso.py): the flow's own state, nonce and browser
    # cookie protect it; no token exists yet
    "GET /auth/oidc/{name}":                             PUBLIC,
    "GET /auth/oidc/{name}/cli":                         PUBLIC,
    "GET /auth/oidc/callback":                           PUBLIC,
    "GET /api/sso/providers":                            PUBLIC,
    "POST /api/sso/device":                              PUBLIC,   # the handle it answers is the CLI's alone
    "POST /api/sso/device/poll":                         PUBLIC,
    "POST /api/sso/redeem":                              PUBLIC,   # a single-use code, spent once
    "GET /favicon.ico":                                  PUBLIC,
    "GET /":                                             MEMBER,
    "POST /workspace":                                   PERSON,   # the switcher: only to a workspace of yours
    "POST /projects":                                    MEMBER,
    "GET /projects/{project_id}":                        MEMBER,
    "POST /projects/{project_id}/update":                MEMBER,
    "GET /projects/{project_id}/resources":              MEMBER,
    "POST /projects/{project_id}/resources":             MEMBER,
    "POST /projects/{project_id}/resources/{resource_id}":        MEMBER,
    "POST /projects/{project_id}/resources/{resource_id}/remove": MEMBER,
    "GET /projects/{project_id}/local-folders":          MEMBER,
    "POST /projects/{project_id}/local-folders":         MEMBER,
    "GET /projects/{project_id}/issues":                 MEMBER,
    "POST /projects/{project_id}/issues":                MEMBER,
    "POST /projects/{project_id}/issues/{ref}/assign":   MEMBER,
    "GET /projects/{project_id}/tasks":                  MEMBER,
    "GET /projects/{project_id}/room":                   MEMBER,
    "GET /projects/{project_id}/room/live":              MEMBER,
    "GET /issues":                                       MEMBER,
    "POST /issues":                                      MEMBER,
    "GET /issues/{ref}":                                 MEMBER,
    "GET /issues/{ref}/workflows":                       MEMBER,  # the Workflows panel (web/workflows.py)
    "POST /issues/{ref}/workflows":                      MEMBER,  # a person starts a workflow from the panel
    "POST /issues/{ref}/workflows/{process}/stop":       MEMBER,  # a person stops a running workflow, with a reason
    "POST /issues/{ref}/workflows/{process}/steps":      MEMBER,  # a person takes a step from the panel
    "POST /issues/{ref}/workflow-state/answer":          MEMBER,  # scenario 3: the person answers from the panel
    "POST /issues/{ref}/classifications":                MEMBER,  # a person answers a pending classification
    "POST /issues/{ref}/comments":                       MEMBER,
    "GET /issues/{ref}/comments":                        MEMBER,  # "Show earlier comments" (a page of them)
    "GET /issues/{ref}/comments/{comment_id}/raw":       MEMBER,  # a comment too long to show formatted
    "POST /issues/{ref}/assign":                         MEMBER,
    "POST /issues/{ref}/update":                         MEMBER,   # one field (title, description, status, priority) with its version
    "GET /issues/{ref}/live":                            MEMBER,   # the fields an open page redraws live (web/issue_edit.py)
    "POST /issues/{ref}/delete":                         ADMIN,    # with its comments, runs, workflows
    "POST /markdown/preview":                            MEMBER,   # a description's Markdown, rendered, nothing stored
    "POST /issues/move":                                 MEMBER,   # a board card to another column
    "GET /issues/{ref}/labels":                          MEMBER,   # the issue page's Labels control
    "POST /issues/{ref}/labels":                         MEMBER,
    "POST /issues/{ref}/labels/remove":                  MEMBER,
    "GET /palette":                                      MEMBER,   # the command palette's results (Ctrl-K)
    "GET /issues/{ref}/runs":                            MEMBER,
    "GET /tasks/{task_id}":                              MEMBER,
    "GET /tasks/{task_id}/header":                       MEMBER,
    "GET /tasks/{task_id}/messages":                     MEMBER,
    "GET /tasks/{task_id}/messages/earlier":             MEMBER,
    "GET /tasks/{task_id}/messages/{seq}/full":          MEMBER,   # a folded message, whole
    "GET /tasks/{task_id}/review":                       MEMBER,
    "POST /tasks/{task_id}/rerun":                       MEMBER,
    "POST /tasks/{task_id}/cancel":                      MEMBER,
    "POST /tasks/{task_id}/answer":                      MEMBER,   # the same use case as /api/tasks/{id}/answer
    "GET /agents":                                       MEMBER,
    "POST /agents":                                      MEMBER,
    "POST /agents/{agent_id}":                           MEMBER,   # its owner only: service
    "POST /agents/{agent_id}/delete":                    MEMBER,   # its owner, or an admin/owner: service
    "POST /agents/{agent_id}/archive":                   MEMBER,   # its owner, or an admin/owner: service
    "POST /agents/{agent_id}/restore":                   MEMBER,   # its owner, or an admin/owner: service
    "GET /agents/{agent_id}/env":                        MEMBER,   # its owner, or an admin/owner: service
    "POST /agents/{agent_id}/env":                       MEMBER,   # its owner only: service
    "POST /agents/{agent_id}/env/{name}/remove":         MEMBER,   # its owner, or an admin/owner: service
    "POST /agents/{agent_id}/grants":                    ADMIN,
    "POST /agents/{agent_id}/grants/{name}/remove":      ADMIN,
    "GET /audit":                                        ADMIN,
    "POST /audit/retention":                             OWNER,
    "GET /daemons":                                      MEMBER,
    "GET /daemons/{daemon_id}":                          MEMBER,   # a daemon's runtimes and runs (web/roster.py)
    "GET /agents/{agent_id}":                            MEMBER,   # an agent's page (web/agentpage.py)
    "GET /runs":                                         MEMBER,   # the workspace's runs (web/runs.py)
    "GET /waiting":                                      MEMBER,
    "GET /waiting/list":                                 MEMBER,
    "GET /tasks/{task_id}/pr":                           MEMBER,   # the pull-request panel (web/pullrequests.py)
    "GET /issues/{ref}/pr":                              MEMBER,
    "POST /tasks/{task_id}/pr":                          MEMBER,
    "POST /pull-requests/{pr_id}/merge":                 MEMBER,   # members where the connection allows: service
    "POST /pull-requests/{pr_id}/discard":               MEMBER,   # members where the connection allows: service
    "POST /pull-requests/{pr_id}/ask-again":             MEMBER,
    "GET /usage":                                        MEMBER,   # the usage page (web/usage.py)
    "GET /autopilots":                                   MEMBER,   # web/autopilots.py
    "POST /autopilots":                                  ADMIN,
    "GET /autopilots/{autopilot_id}":                    MEMBER,
    "POST /autopilots/{autopilot_id}/schedule":          ADMIN,
    "POST /autopilots/{autopilot_id}/pause":             ADMIN,
    "POST /autopilots/{autopilot_id}/resume":            ADMIN,
    "POST /autopilots/{autopilot_id}/fire":              ADMIN,
    "GET /inbox":                                        MEMBER,   # the inbox page (web/inbox.py): your items only
    "GET /inbox/items":                                  MEMBER,
    "GET /inbox/count":                                  MEMBER,   # the sidebar's count
    "POST /inbox/mark-all":                              MEMBER,
    "POST /inbox/{item_id}":                             MEMBER,   # its person only: service (else 404)
    "GET /issues/{ref}/subscription":                    MEMBER,   # the issue page's Subscribe button
    "POST /issues/{ref}/subscription":                   MEMBER,
    "GET /budgets":                                      MEMBER,   # Settings → Budgets (web/budgets.py)
    "POST /budgets":                                     ADMIN,
    "POST /budgets/{budget_id}/remove":                  ADMIN,
    "GET /notifications":                                MEMBER,   # Settings → Notifications (web/notifications.py)
    "POST /notifications":                               MEMBER,   # scope workspace: admins/owners (service)
    "GET /notifications/{channel_id}":                   MEMBER,   # its delivery log
    "POST /notifications/{channel_id}":                  MEMBER,   # its person, or admins for the workspace's
    "POST /notifications/{channel_id}/remove":           MEMBER,
    "POST /notifications/{channel_id}/test":             MEMBER,
    "POST /notifications/deliveries/{delivery_id}/redeliver": MEMBER,
    "GET /forges":                                       MEMBER,   # settings → Forges: members see the list
    "POST /forges":                                      ADMIN,
    "POST /forges/{connection_id}":                      ADMIN,
    "POST /forges/{connection_id}/remove":               ADMIN,
    "POST /forges/{connection_id}/test":                 ADMIN,
    "POST /forges/{connection_id}/webhook-secret":       ADMIN,
    # Settings (web/settings.py): the same use cases as /api/workspaces, .../members and /api/tokens
    "GET /settings":                                     MEMBER,   # members see members; forms for admins
    "POST /settings/workspace":                          ADMIN,
    "POST /settings/members":                            ADMIN,    # owners only add owners: service
    "POST /settings/members/{user_id}/role":             ADMIN,    # owners only for owners: service
    "POST /settings/members/{user_id}/remove":           ADMIN,    # owners only for owners: service
    "POST /settings/tokens":                             MEMBER,   # one's own tokens
    "POST /settings/tokens/{token_id}/revoke":           MEMBER,   # one's own tokens: service
}
# fmt: on


def route_keys(app) -> list[str]:
    """"METHOD /path" of every API route and page the app serves (what ACCESS must cover)."""
    from fastapi.routing import APIRoute, iter_route_contexts

    return sorted({f"{m} {rc.path}" for rc in iter_route_contexts(app.routes) if isinstance(rc.route, APIRoute)
                   for m in (rc.methods or ()) if m != "HEAD"})


def rule_for(method: str, path: str) -> Rule | None:
    return ACCESS.get(f"{'GET' if method == 'HEAD' else method} {path}")


def acting_workspace(request: Request, principal: Principal) -> tuple[str | None, str | None]:
    """The workspace a request acts in, exactly as its handler will see it (deps.get_caller and
    web/session.viewer): `/api/workspaces/{ref}` names it in the path (see _workspace_of); other
    API routes take X-Workspace, else the workspace switcher's cookie, else the principal's first
    workspace; pages take the cookie, else the first. None: the principal has none (or names one
    it is not in; the handler then answers 404).

    As (that workspace, None) from what the principal carries, or (None, the X-Workspace value)
    when only the database can say (a slug, or an id not of the principal's): the usual request
    is answered on the event loop, without a thread-pool hop."""
    from .deps import WORKSPACE_COOKIE

    chosen = request.cookies.get(WORKSPACE_COOKIE)
    fallback = chosen if chosen in principal.workspace_ids else (
        principal.workspace_ids[0] if principal.workspace_ids else None)
    if request.url.path.startswith("/api/"):
        wanted = request.headers.get("x-workspace")
        if not wanted:
            return fallback, None
        return (wanted, None) if wanted in principal.workspace_ids else (None, wanted)
    return fallback, None


def _by_slug(request: Request, principal: Principal, wanted: str) -> str | None:
    with request.app.state.px.read() as s:
        ws_id = s.scalar(select(Workspace.id).where(Workspace.slug == wanted))
    return ws_id if ws_id in principal.workspace_ids else None


def _path_workspace(request: Request, principal: Principal, ref: str) -> str:
    if ref in principal.workspace_ids:
        return ref
    ws_id = _by_slug(request, principal, ref)
    if ws_id is None:  # another workspace, or none: 404, never a hint that it exists (R-SEC-2)
        raise NotFound(f"workspace {ref!r} not found; `predictorx workspace list` shows yours")
    return ws_id


async def _workspace_of(request: Request, principal: Principal, path: str) -> str | None:
    """The workspace the role matrix checks the principal's role in; the thread pool only where
    a slug must be read from the database."""
    ref = request.path_params.get("ref") if path.startswith("/api/workspaces/{ref}") else None
    if ref is not None:
        return ref if ref in principal.workspace_ids else await run_in_threadpool(
            _path_workspace, request, principal, ref)
    ws_id, slug = acting_workspace(request, principal)
    return await run_in_threadpool(_by_slug, request, principal, slug) if slug is not None else ws_id


async def enforce(request: Request) -> None:
    """App-wide dependency: the route's entry in ACCESS decides before its handler runs."""
    route = request.scope.get("route")
    path = getattr(route, "path", None)
    rule = rule_for(request.method, path) if path else None
    if rule is None:
        raise Forbidden("this route has no access rule, so nobody may call it (deny by default)")
    if rule.public or rule.relay:
        return  # (a relay route refuses whatever is not its task's pass: 401/404)
    from .deps import PRINCIPAL_KEY, get_principal, get_state  # deps imports this module's neighbours

    principal = await get_principal(request, await get_state(request))
    request.scope[PRINCIPAL_KEY] = principal  # the route's dependencies use it, not a second lookup
    if principal.kind == "daemon":
        if not rule.daemon:
            raise Forbidden("a daemon token may not call this; it acts only for its own daemon's work")
        return
    if principal.kind == "task":
        if not rule.task:
            raise Forbidden("an agent's task token may not call this; it acts only on its own task and issue")
        return
    if principal.kind != "user" or rule.people is None:
        raise Forbidden("this endpoint needs a daemon token" if rule.daemon else "this token may not call this")
    if rule.people == "person":
        return
    ws_id = await _workspace_of(request, principal, path)
    if ws_id is None:
        return  # the handler answers 404 (no such workspace of yours); nothing to authorise yet
    role = principal.role_in(ws_id)
    if ROLE_RANK.get(role or "", 0) < ROLE_RANK[rule.people]:
        needed = {"admin": "an admin or owner", "owner": "an owner", "member": "a member"}[rule.people]
        raise Forbidden(f"only {needed} of this workspace may do this; you are {role or 'not a member'}")


def markdown_table() -> str:
    """The matrix as docs/security.md shows it."""
    lines = ["| route | who may call it |", "|---|---|"]
    for key, rule in ACCESS.items():
        lines.append(f"| `{key}` | {rule.describe()} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
