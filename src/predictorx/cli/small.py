"""The small command groups: workspace, agent, task."""

from __future__ import annotations

import shlex
from typing import Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from .. import unconfined
from .client import Client, fail, seg
from .output import Output, record, table

OutputOpt = typer.Option(Output.table, "--output", "-o", help="table or json")

workspace_app = typer.Typer(help="Workspaces (tenants).", no_args_is_help=True)
agent_app = typer.Typer(help="Agents: a name, a provider and a runtime.", no_args_is_help=True)
task_app = typer.Typer(help="Tasks: one agent's run on one issue.", no_args_is_help=True)


@workspace_app.command("list")
def workspace_list(output: Output = OutputOpt) -> None:
    """List your workspaces."""
    table(Client().get("/api/workspaces"), [("id", "ID"), ("slug", "SLUG"), ("name", "NAME"), ("repos", "REPOS")], output)


@workspace_app.command("create")
def workspace_create(name: str = typer.Option(..., "--name"), slug: Optional[str] = typer.Option(None, "--slug"),
                     repo: list[str] = typer.Option([], "--repo", help="A workspace repository URL; repeatable."),
                     output: Output = OutputOpt) -> None:
    """Create a workspace you own."""
    w = Client().post("/api/workspaces", {"name": name, "slug": slug, "repos": repo})
    if output == Output.json:
        record(w, [], output)
    else:
        typer.echo(f"Created workspace {w['slug']} ({w['id']}).")


@workspace_app.command("repos")
def workspace_repos(workspace: str, repo: list[str] = typer.Option(..., "--repo", help="The full list; repeatable."),
                    output: Output = OutputOpt) -> None:
    """Replace a workspace's repository list."""
    w = Client().patch(f"/api/workspaces/{seg(workspace)}", {"repos": repo})
    record(w, [("slug", "workspace"), ("repos", "repos")], output)


AGENT_COLS = [("name", "NAME"), ("provider", "PROVIDER"), ("model", "MODEL"), ("runtime_id", "RUNTIME"),
              ("max_concurrent_tasks", "MAX TASKS"), ("sandbox", "SANDBOX"), ("network", "NETWORK"), ("id", "ID")]
NETWORK_HELP = ("open: the machine's network; allowlist: its own network namespace reaching only the --allow-host "
                "hosts (and the server) through the daemon's proxy — needs the sandbox.")
ALLOW_HOST_HELP = "With --network allowlist: a host it may reach, HOST[:PORT] (443 if no port); repeat for each."


def _network_mode(value: str) -> str:
    if value not in ("open", "allowlist"):
        fail(f"--network is open or allowlist, not {value!r}", code=2)
    return value


PERMISSIONS_HELP = ("acp provider: how its permission requests are answered: allow (its allow option), "
                    "deny (its reject option) or ask (a person picks on the run's page, in Waiting for you, or "
                    "with `predictorx task answer`); each answer is in the task's messages.")
ASK_TIMEOUT_HELP = ("--permissions ask: seconds a question waits for a person before it is answered deny "
                    "(10 to 86400; default: the daemon's PREDICTORX_ASK_TIMEOUT_S, 600).")
ACP_COMMAND_HELP = "acp provider: the command that starts the agent's ACP server on stdio ('gemini --experimental-acp')."
ACP_PROFILE_HELP = ("acp provider: a shipped launch profile instead (gemini, opencode, claude-code-acp, codex-acp, qwen, "
                    "kilo, copilot, pi, cline, gptme, vibe, fast-agent).")


def _command_argv(command: str | None, acp_command: str | None, acp_profile: str | None) -> list[str] | None:
    """The stored command line: --command, --acp-command or a profile's; at most one of them."""
    given = [flag for flag, value in (("--command", command), ("--acp-command", acp_command),
                                      ("--acp-profile", acp_profile)) if value]
    if len(given) > 1:
        fail(f"give one of {' and '.join(given)}, not both", code=2)
    if acp_profile:
        from ..agentconfig import acp_profiles  # only here: a command loads what it runs

        try:
            return acp_profiles.get(acp_profile).command()
        except acp_profiles.UnknownProfile as e:
            fail(str(e), code=2)
    text = command or acp_command
    if not text:
        return None
    try:
        argv = shlex.split(text)
    except ValueError as e:
        fail(f"cannot read the command line: {e}", code=2)
    if not argv:
        fail("the command line is empty", code=2)
    return argv


@agent_app.command("create")
def agent_create(
    name: str = typer.Option(..., "--name"),
    provider: str = typer.Option(..., "--provider", help="claude, codex, gemini, opencode, command or acp."),
    runtime: Optional[str] = typer.Option(None, "--runtime", help="Runtime id, daemon id or daemon name; defaults to the only match."),
    model: Optional[str] = typer.Option(None, "--model"),
    command: Optional[str] = typer.Option(None, "--command", help="command provider: the command line to run."),
    acp_command: Optional[str] = typer.Option(None, "--acp-command", help=ACP_COMMAND_HELP),
    acp_profile: Optional[str] = typer.Option(None, "--acp-profile", help=ACP_PROFILE_HELP),
    permissions: str = typer.Option("allow", "--permissions", help=PERMISSIONS_HELP),
    ask_timeout: Optional[int] = typer.Option(None, "--ask-timeout", help=ASK_TIMEOUT_HELP),
    instructions: str = typer.Option("", "--instructions"),
    max_concurrent_tasks: int = typer.Option(1, "--max-concurrent-tasks", min=1, max=64),
    sandbox: bool = typer.Option(True, "--sandbox/--no-sandbox", help="Run it in the bubblewrap sandbox (the "
                                 "default: its workdir writable, the state dir, ~/.ssh and ~/.config invisible), "
                                 "or not: then it can reach everything the daemon's user can."),
    network: str = typer.Option("open", "--network", help=NETWORK_HELP),
    allow_host: list[str] = typer.Option([], "--allow-host", help=ALLOW_HOST_HELP),
    output: Output = OutputOpt,
) -> None:
    """Create an agent."""
    argv = _command_argv(command, acp_command, acp_profile)
    a = Client().post("/api/agents", {"name": name, "provider": provider, "runtime": runtime, "model": model,
                                       "command": argv, "instructions": instructions,
                                       "max_concurrent_tasks": max_concurrent_tasks, "sandbox": sandbox,
                                       "network": _network_mode(network), "allow_hosts": allow_host,
                                       "permissions": permissions, "ask_timeout_s": ask_timeout})
    if not a.get("sandbox", True):
        typer.echo(unconfined.agent_warning(a["name"]), err=True)
    if a.get("cannot_run"):  # saved, but say now that its work would wait (issue 26 §2)
        typer.echo(f"note: {a['name']} cannot run yet: {a['cannot_run']}", err=True)
    if output == Output.json:
        record(a, [], output)
    else:
        typer.echo(f"Created agent {a['name']} ({a['provider']}).")


@agent_app.command("update")
def agent_update(
    ref: str = typer.Argument(..., help="Agent name or id."),
    name: Optional[str] = typer.Option(None, "--name", help="A new name."),
    runtime: Optional[str] = typer.Option(None, "--runtime", help="Runtime id, daemon id or daemon name of yours; '' for any of your daemons."),
    model: Optional[str] = typer.Option(None, "--model"),
    command: Optional[str] = typer.Option(None, "--command", help="command provider: the command line to run."),
    acp_command: Optional[str] = typer.Option(None, "--acp-command", help=ACP_COMMAND_HELP),
    acp_profile: Optional[str] = typer.Option(None, "--acp-profile", help=ACP_PROFILE_HELP),
    permissions: Optional[str] = typer.Option(None, "--permissions", help=PERMISSIONS_HELP),
    ask_timeout: Optional[int] = typer.Option(None, "--ask-timeout", help=ASK_TIMEOUT_HELP + " 0: the daemon's default."),
    instructions: Optional[str] = typer.Option(None, "--instructions"),
    max_concurrent_tasks: Optional[int] = typer.Option(None, "--max-concurrent-tasks", min=1, max=64),
    sandbox: Optional[bool] = typer.Option(None, "--sandbox/--no-sandbox", help="Run it in the bubblewrap sandbox, "
                                           "or not: then it can reach everything the daemon's user can."),
    network: Optional[str] = typer.Option(None, "--network", help=NETWORK_HELP),
    allow_host: Optional[list[str]] = typer.Option(None, "--allow-host", help=ALLOW_HOST_HELP + " Replaces the list."),
    output: Output = OutputOpt,
) -> None:
    """Change an agent you own (only the owner of the machine it runs on may)."""
    body = {"name": name, "runtime": runtime, "model": model, "instructions": instructions,
            "command": _command_argv(command, acp_command, acp_profile), "max_concurrent_tasks": max_concurrent_tasks,
            "sandbox": sandbox, "network": _network_mode(network) if network is not None else None,
            "allow_hosts": allow_host or None, "permissions": permissions, "ask_timeout_s": ask_timeout}
    body = {k: v for k, v in body.items() if v is not None}
    if body.get("runtime") == "":
        body["runtime"] = None  # any of your daemons with its provider may run it
    if not body:
        fail("nothing to change: give at least one of --name, --runtime, --model, --command, --instructions, "
             "--max-concurrent-tasks, --sandbox/--no-sandbox, --network, --allow-host, --permissions, --ask-timeout", code=2)
    a = Client().patch(f"/api/agents/{seg(ref)}", body)
    if sandbox is False:
        typer.echo(unconfined.agent_warning(a["name"]), err=True)
    if output == Output.json:
        record(a, [], output)
    else:
        typer.echo(f"Updated agent {a['name']} ({a['provider']}).")


@agent_app.command("list")
def agent_list(archived: bool = typer.Option(False, "--archived", help="The archived agents instead."),
               output: Output = OutputOpt) -> None:
    """List agents (archived ones with --archived)."""
    if archived:
        table(Client().get("/api/agents", params={"archived": "true"}), AGENT_COLS, output, "no archived agents")
        return
    table(Client().get("/api/agents"), AGENT_COLS, output, "no agents yet: `predictorx agent create --name … --provider …`")


@agent_app.command("archive")
def agent_archive(ref: str = typer.Argument(..., help="Agent name or id.")) -> None:
    """Archive an agent: it leaves the lists and cannot be given work; its runs keep their history."""
    a = Client().post(f"/api/agents/{seg(ref)}/archive", {})
    typer.echo(f"Archived agent {a['name']}: its runs stay, with their messages; `predictorx agent restore "
               f"{a['name']}` brings it back.")


@agent_app.command("restore")
def agent_restore(ref: str = typer.Argument(..., help="Agent name or id.")) -> None:
    """Bring an archived agent back."""
    a = Client().post(f"/api/agents/{seg(ref)}/restore", {})
    typer.echo(f"Restored agent {a['name']}.")


@agent_app.command("delete")
def agent_delete(ref: str = typer.Argument(..., help="Agent name or id.")) -> None:
    """Delete an agent that never ran (one with runs is archived instead, to keep their history)."""
    Client().delete(f"/api/agents/{seg(ref)}")
    typer.echo(f"Deleted agent {ref}.")


TASK_FIELDS = [("id", "task"), ("issue_number", "issue"), ("agent_name", "agent"), ("status", "status"),
               ("wait_reason", "waiting for"), ("failure_reason", "failure"), ("branch_name", "branch"),
               ("result", "result"), ("session_id", "session"), ("created_at", "created"),
               ("started_at", "started"), ("finished_at", "finished")]


@task_app.command("get")
def task_get(task_id: str, output: Output = OutputOpt) -> None:
    """A task's details (status, wait reason, branch, result)."""
    record(Client().get(f"/api/tasks/{seg(task_id)}"), TASK_FIELDS, output)


@task_app.command("list")
def task_list(status: Optional[str] = typer.Option(None, "--status"),
              project: Optional[str] = typer.Option(None, "--project"), output: Output = OutputOpt) -> None:
    """Recent tasks of the workspace."""
    params = {k: v for k, v in (("status", status), ("project", project)) if v}
    table(Client().get("/api/tasks", params=params),
          [("id", "TASK"), ("issue_number", "#"), ("agent_name", "AGENT"), ("status", "STATUS"),
           ("branch_name", "BRANCH"), ("created_at", "CREATED")], output, "no tasks")


@task_app.command("messages")
def task_messages(task_id: str, after: int = typer.Option(-1, "--after"), output: Output = OutputOpt) -> None:
    """The agent's messages, in order."""
    rows = Client().get(f"/api/tasks/{seg(task_id)}/messages", params={"after": after})
    if output == Output.json:
        table(rows, [], output)
        return
    for m in rows:
        c = m["content"]
        text = c.get("text") or c.get("name") or c.get("output") or c.get("message") or ""
        typer.echo(f"{m['seq']:>4} {m['kind']:<11} {str(text)[:400]}")


@task_app.command("answer")
def task_answer(task_id: str, option: str = typer.Argument(..., help="The option's id, as the question lists it."),
                request: Optional[str] = typer.Option(None, "--request", help="The question's request id "
                                                      "(default: the one the task waits on).")) -> None:
    """Answer the permission question a task's ACP agent is waiting on (`--permissions ask`)."""
    body = {"option_id": option, **({"request_id": request} if request else {})}
    t = Client().post(f"/api/tasks/{seg(task_id)}/answer", body)
    typer.echo(f"Answered {option} for task {t['id']}; its agent goes on.")


@task_app.command("cancel")
def task_cancel(task_id: str) -> None:
    """Cancel a task; a running agent is stopped within seconds."""
    t = Client().post(f"/api/tasks/{seg(task_id)}/cancel")
    typer.echo(f"Task {t['id']} is {t['status']}.")


PR_FIELDS = [("id", "pull request"), ("state", "state"), ("url", "url"), ("branch", "branch"),
             ("base_branch", "base"), ("review_state", "review"), ("check_state", "checks"),
             ("followups", "follow-ups"), ("waiting_reason", "waiting for"), ("merged_by", "merged by")]


@task_app.command("pr")
def task_pr(task_id: str, output: Output = OutputOpt) -> None:
    """Open the pull request of a task's branch (pushing it first when needed); opening twice
    shows the same one."""
    out = Client().post(f"/api/tasks/{seg(task_id)}/pr")
    if out.get("pushing"):
        typer.echo("The branch is being pushed; the pull request opens when the push lands "
                   f"(`predictorx task pr {task_id}` again shows it).")
        return
    record(out, PR_FIELDS, output)


@task_app.command("merge")
def task_merge(task_id: str, method: Optional[str] = typer.Option(
        None, "--method", help="merge, squash or rebase (as the repository allows; default its first)"),
        output: Output = OutputOpt) -> None:
    """Merge a task's pull request through its forge (or, for a local folder with no forge, the
    branch into your checked-out branch)."""
    if method is not None and method not in ("merge", "squash", "rebase"):
        fail("--method must be merge, squash or rebase")
    out = Client().post(f"/api/tasks/{seg(task_id)}/merge", {"method": method})
    if "local" in out:
        typer.echo(str(out["local"].get("message") or out["local"]) if isinstance(out["local"], dict) else str(out["local"]))
        return
    record(out, PR_FIELDS, output)


@task_app.command("discard")
def task_discard(task_id: str, output: Output = OutputOpt) -> None:
    """Discard a task's work: close its pull request and delete its branch on the forge (or the
    local branch, for a local folder)."""
    out = Client().post(f"/api/tasks/{seg(task_id)}/discard")
    if "local" in out:
        typer.echo(str(out["local"].get("message") or out["local"]) if isinstance(out["local"], dict) else str(out["local"]))
        return
    record(out, PR_FIELDS, output)


member_app = typer.Typer(help="Members of a workspace.", no_args_is_help=True)
workspace_app.add_typer(member_app, name="member")
token_app = typer.Typer(help="Your personal tokens (for `predictorx login` elsewhere).", no_args_is_help=True)


def _current_workspace(workspace: str | None) -> str:
    client = Client()
    return workspace or client.workspace or client.get("/api/workspaces")[0]["id"]


@member_app.command("list")
def member_list(workspace: Optional[str] = typer.Option(None, "--workspace"), output: Output = OutputOpt) -> None:
    """Members and their roles."""
    rows = Client().get(f"/api/workspaces/{seg(_current_workspace(workspace))}/members")
    cols = [("user_id", "USER"), ("name", "NAME"), ("role", "ROLE")]
    if rows and "email" in rows[0]:  # only owners and admins see emails
        cols.insert(2, ("email", "EMAIL"))
    table(rows, cols, output)


@member_app.command("add")
def member_add(name: str = typer.Option(..., "--name"), email: Optional[str] = typer.Option(None, "--email"),
               role: str = typer.Option("member", "--role", help="member, admin or owner"),
               workspace: Optional[str] = typer.Option(None, "--workspace"), output: Output = OutputOpt) -> None:
    """Add a person; a new person's token is printed once (they run `predictorx login` with it).
    Someone who already has an account is added without a token: they use their own."""
    m = Client().post(f"/api/workspaces/{seg(_current_workspace(workspace))}/members",
                      {"name": name, "email": email, "role": role})
    if output == Output.json:
        record(m, [], output)
        return
    if m.get("token"):
        typer.echo(f"Added {m['name']} as {m['role']}. Their token (shown once):\n{m['token']}")
    else:
        typer.echo(f"Added {m['name']} as {m['role']}. {m.get('note', '')}".rstrip())


@member_app.command("role")
def member_role(user_id: str, role: str = typer.Option(..., "--role", help="member, admin or owner"),
                workspace: Optional[str] = typer.Option(None, "--workspace")) -> None:
    """Change a member's role (only owners change or grant the owner role; the last owner stays)."""
    m = Client().patch(f"/api/workspaces/{seg(_current_workspace(workspace))}/members/{seg(user_id)}", {"role": role})
    typer.echo(f"{m['user_id']} is now {m['role']}.")


@member_app.command("remove")
def member_remove(user_id: str, workspace: Optional[str] = typer.Option(None, "--workspace")) -> None:
    """Remove a person from the workspace."""
    Client().delete(f"/api/workspaces/{seg(_current_workspace(workspace))}/members/{seg(user_id)}")
    typer.echo(f"Removed {user_id}.")


@token_app.command("list")
def token_list(output: Output = OutputOpt) -> None:
    """Your live tokens (never their values)."""
    table(Client().get("/api/tokens"), [("id", "ID"), ("name", "NAME"), ("created_at", "CREATED"),
                                        ("expires_at", "EXPIRES")], output)


@token_app.command("create")
def token_create(name: str = typer.Option(..., "--name"), days: Optional[int] = typer.Option(None, "--days", min=1),
                 output: Output = OutputOpt) -> None:
    """A new personal token, printed once."""
    t = Client().post("/api/tokens", {"name": name, "days": days})
    if output == Output.json:
        record(t, [], output)
    else:
        typer.echo(t["token"])


@token_app.command("revoke")
def token_revoke(token_id: str) -> None:
    """Revoke one of your tokens."""
    Client().delete(f"/api/tokens/{seg(token_id)}")
    typer.echo(f"Revoked {token_id}.")


def register(root: typer.Typer) -> None:
    from .agentmcp import app as mcp_app
    from .secrets import env_app, secret_app

    agent_app.add_typer(mcp_app, name="mcp")
    agent_app.add_typer(secret_app, name="secret")
    agent_app.add_typer(env_app, name="env")
    for name, group in (("agent", agent_app), ("task", task_app), ("workspace", workspace_app), ("token", token_app)):
        root.add_typer(group, name=name)
