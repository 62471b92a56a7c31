"""`predictorx server oidc add|list|remove|map|unmap`: the server's OpenID providers (issue 28 §1),
managed on the server's machine against its database (PREDICTORX_DATABASE_URL or the state dir's),
as `server rotate-key` is: configuring who may sign in is the operator's, not a workspace's.

The client secret is never an argument (argv is readable by every process and lands in shell
history): `--secret-stdin`, `--secret-env NAME`, or a prompt that does not echo. It is sealed at once
(service/secretbox.py) and never shown again.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, Optional

from .cli import commandline as typer  # typer's API, without its start-up (cli/commandline.py)

from .apiclient import fail

oidc_app = typer.Typer(help="OpenID Connect providers people sign in with (docs/security.md).", no_args_is_help=True)


def _in_db(work: Callable[[Any], Any]) -> Any:
    from .service.errors import ServiceError
    from .service.secretbox import SecretError
    from .store.db import Database

    db = Database()
    try:
        db.migrate()
        with db.write() as s:
            return work(s)
    except (ServiceError, SecretError) as e:
        fail(e.message)
    finally:
        db.dispose()


def _secret(from_stdin: bool, env_name: Optional[str], public: bool) -> Optional[str]:
    if public:
        if from_stdin or env_name:
            fail("--public-client takes no secret", 2)
        return None
    if from_stdin and env_name:
        fail("give the client secret one way: --secret-stdin or --secret-env", 2)
    if from_stdin:
        return sys.stdin.readline().strip() or fail("no client secret on standard input", 2)
    if env_name:
        return os.environ.get(env_name, "").strip() or fail(f"the environment variable {env_name} is empty or unset", 2)
    if not sys.stdin.isatty():
        fail("give the client secret with --secret-stdin (piped) or --secret-env NAME; it is never an argument", 2)
    return typer.prompt("Client secret", hide_input=True).strip() or fail("no client secret given", 2)


@oidc_app.command("add")
def add(name: str = typer.Argument(..., help="Short name: lower-case letters, digits, dashes (e.g. okta)."),
        issuer: str = typer.Option(..., "--issuer", help="The issuer URL, exactly as the provider publishes it."),
        client_id: str = typer.Option(..., "--client-id"),
        display_name: Optional[str] = typer.Option(None, "--display-name", help='Shown as "Sign in with …".'),
        scopes: str = typer.Option("openid email profile", "--scopes",
                                   help="Requested scopes; add the one that carries groups (e.g. `groups`)."),
        secret_stdin: bool = typer.Option(False, "--secret-stdin", help="Read the client secret from stdin."),
        secret_env: Optional[str] = typer.Option(None, "--secret-env", metavar="NAME",
                                                 help="Read the client secret from the environment variable NAME."),
        public_client: bool = typer.Option(False, "--public-client", help="A client without a secret (PKCE only).")) -> None:
    """Add a provider. Register <this server's public URL>/auth/oidc/callback as its redirect URI
    and <public URL>/login as its post-logout redirect URI."""
    from .service import oidc_discovery, oidc_providers

    secret = _secret(secret_stdin, secret_env, public_client)

    def work(s: Any) -> None:
        row = oidc_providers.add(s, name=name, issuer=issuer.strip(), client_id=client_id, client_secret=secret,
                                 display_name=display_name, scopes=scopes)
        oidc_discovery.metadata(row.issuer, refresh=True)  # unreachable or another issuer: nothing is added

    _in_db(work)
    typer.echo(f"Added OpenID provider {name}: the sign-in page offers it now. Map its groups to roles with "
               f"`predictorx server oidc map {name} --value GROUP --workspace SLUG --role member`.")


@oidc_app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help="JSON instead of lines.")) -> None:
    """The providers (the client secret only as set or not) and their group → role rules."""
    from dataclasses import asdict

    from .service import oidc_providers

    rows = _in_db(lambda s: [asdict(oidc_providers.view(p)) for p in oidc_providers.all_providers(s)])
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("no OpenID providers: add one with `predictorx server oidc add NAME --issuer URL --client-id ID`")
    for p in rows:
        typer.echo(f"{p['name']}  {p['display_name']}  {p['issuer']}  client {p['client_id']}  "
                   f"secret {'set' if p['secret_set'] else 'none'}  scopes {p['scopes']!r}")
        for r in p["role_map"]:
            typer.echo(f"    {r['claim']} = {r['value']!r} → {r['role']} in workspace {r['workspace_id']}")


@oidc_app.command("remove")
def remove(name: str) -> None:
    """Remove a provider: its sign-in button and its links to accounts (accounts and roles stay)."""
    from .service import oidc_providers

    _in_db(lambda s: oidc_providers.remove(s, name))
    typer.echo(f"Removed OpenID provider {name}.")


@oidc_app.command("map")
def map_(name: str, value: str = typer.Option(..., "--value", help="The group (or claim value)."),
         workspace: str = typer.Option(..., "--workspace", help="Workspace id or slug."),
         role: str = typer.Option(..., "--role", help="member, admin or owner."),
         claim: str = typer.Option("groups", "--claim", help="The ID token claim to look in.")) -> None:
    """A person whose CLAIM holds VALUE has ROLE in WORKSPACE, from their next sign-in on; when it no
    longer does, the role the mapping gave is taken back at their next sign-in."""
    from .service import oidc_providers

    _in_db(lambda s: oidc_providers.map_group(s, name, value=value, workspace=workspace, role=role, claim=claim))
    typer.echo(f"{claim} = {value!r} → {role} in {workspace}, through {name}.")


@oidc_app.command("unmap")
def unmap(name: str, value: str = typer.Option(..., "--value"), workspace: str = typer.Option(..., "--workspace"),
          claim: str = typer.Option("groups", "--claim")) -> None:
    """Drop a rule (the roles it gave are taken back at each person's next sign-in)."""
    from .service import oidc_providers

    _in_db(lambda s: oidc_providers.unmap_group(s, name, value=value, workspace=workspace, claim=claim))
    typer.echo(f"Dropped the rule {claim} = {value!r} in {workspace} of {name}.")
