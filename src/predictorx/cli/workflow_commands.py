"""The workflow commands (workflow, bean, check, prov, classify, classify-rules, mcp), registered on the main app in
one call (SPEC §10)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from . import beans, checks, classify_rules, workflows


def register(app: typer.Typer) -> None:
    """workflow, bean, check, prov, classify, classify-rules and mcp (SPEC §10)."""
    app.add_typer(workflows.app, name="workflow")
    app.add_typer(beans.app, name="bean")
    app.add_typer(checks.check_app, name="check")
    app.add_typer(checks.prov_app, name="prov")
    app.command("classify")(workflows.classify_cmd)
    app.add_typer(classify_rules.app, name="classify-rules")
    app.command("mcp")(mcp)


def mcp(env_file: Optional[Path] = typer.Option(None, "--env-file", help="A JSON file of PREDICTORX_* values "
                                                                      "(the daemon writes one per run, 0600).")) -> None:
    """The harness's MCP server over stdio, for the agent of a task (uses PREDICTORX_TOKEN)."""
    from ..workflowmcp.mcp_stdio import load_env_file, run  # the SDK is imported on the first tool call only

    if env_file is not None:
        try:
            load_env_file(env_file)
        except SystemExit:
            raise typer.BadParameter(f"{env_file} is not a readable JSON file of PREDICTORX_* values") from None
    run()
