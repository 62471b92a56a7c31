"""The harness's commands, registered on the main app in one call (SPEC §10)."""

from __future__ import annotations

import typer

from . import beans, checks, workflows


def register(app: typer.Typer) -> None:
    app.add_typer(workflows.app, name="workflow")
    app.add_typer(beans.app, name="bean")
    app.add_typer(checks.check_app, name="check")
    app.add_typer(checks.prov_app, name="prov")
    app.command("classify")(workflows.classify_cmd)
    app.command("mcp")(mcp)


def mcp() -> None:
    """The harness's MCP server over stdio, for the agent of a task (uses PREDICTORX_TOKEN)."""
    from ..harness.mcp_server import run

    run()
