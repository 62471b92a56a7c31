"""`predictorx usage` and `predictorx budget set|list|remove` (issue 27 §1–2), thin over
`/api/usage` and `/api/budgets`."""

from __future__ import annotations

from typing import Any, Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from .client import Client, fail, seg
from .output import Output, table

OutputOpt = typer.Option(Output.table, "--output", "-o", help="table or json")
usage_app = typer.Typer(help="What agent runs used and cost.", invoke_without_command=True)
price_app = typer.Typer(help="The workspace's own model prices (owners and admins set them).", no_args_is_help=True)
budget_app = typer.Typer(help="Spending limits: warn or stop, per workspace, project or agent (owners and admins).",
                         no_args_is_help=True)
usage_app.add_typer(price_app, name="price")
BY = ("agent", "project", "day", "issue", "person", "model", "run")


def _money(value: Any) -> str:
    if value is None:
        return "unknown"
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def _cost_cell(row: dict[str, Any]) -> str:
    cost = _money(row["cost_usd"])
    if row.get("unknown_cost_runs") and row["cost_usd"] is not None:
        cost += f" (+{row['unknown_cost_runs']} unknown)"
    return cost


def _rows(answer: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [{**r, "name": r["label"], "cost": _cost_cell(r), "tokens": f"{r['total_tokens']:,}",
             "inout": f"{r['input_tokens']:,} / {r['output_tokens']:,}",
             "cache": f"{r['cache_read_tokens']:,} / {r['cache_write_tokens']:,}"} for r in answer["rows"]]
    t = answer["totals"]
    rows.append({"name": "total", "runs": t["runs"], "cost": _cost_cell(t), "tokens": f"{t['total_tokens']:,}",
                 "inout": f"{t['input_tokens']:,} / {t['output_tokens']:,}",
                 "cache": f"{t['cache_read_tokens']:,} / {t['cache_write_tokens']:,}"})
    return rows


@usage_app.callback()
def usage(ctx: typer.Context,
          by: str = typer.Option("agent", "--by", help="agent, project, day, issue, person, model or run."),
          since: Optional[str] = typer.Option(None, "--since", help="First UTC day, YYYY-MM-DD (default: 30 days ago)."),
          until: Optional[str] = typer.Option(None, "--until", help="Last UTC day, YYYY-MM-DD."),
          agent: Optional[str] = typer.Option(None, "--agent", help="Only this agent's runs (name or id)."),
          project: Optional[str] = typer.Option(None, "--project", help="Only this project's runs (id)."),
          issue: Optional[str] = typer.Option(None, "--issue", help="Only this issue's runs (number)."),
          output: Output = OutputOpt) -> None:
    """Runs, tokens and cost, summed per agent (or --by …). A cost no price says is "unknown"."""
    if ctx.invoked_subcommand is not None:
        return
    if by not in BY:
        fail(f"--by is one of {', '.join(BY)}", 2)
    params = {k: v for k, v in (("by", by), ("since", since), ("until", until), ("agent", agent),
                                ("project", project), ("issue", issue)) if v}
    answer = Client().get("/api/usage", params=params)
    if output == Output.json:
        from .client import emit_json

        emit_json(answer)
        return
    typer.echo(f"{answer['since']} – {answer['until'] or 'today'} (UTC), by {by}")
    table(_rows(answer), [("name", by.upper()), ("runs", "RUNS"), ("inout", "IN / OUT"),
                          ("cache", "CACHE R / W"), ("tokens", "TOKENS"), ("cost", "COST")], output)


@price_app.command("list")
def price_list(output: Output = OutputOpt) -> None:
    """The workspace's own prices (USD per million tokens); other models use the price table."""
    table(Client().get("/api/usage/prices"), [("model", "MODEL"), ("input", "INPUT"), ("output", "OUTPUT"),
                                              ("cache_read", "CACHE READ"), ("cache_write", "CACHE WRITE")],
          output, "no prices of the workspace's own: the CLIs' figures and the price table (genai-prices) apply")


@price_app.command("set")
def price_set(model: str, input: float = typer.Option(..., "--input", help="USD per million input tokens."),
              output_price: float = typer.Option(..., "--output-price", help="USD per million output tokens."),
              cache_read: Optional[float] = typer.Option(None, "--cache-read", help="Default: the input price."),
              cache_write: Optional[float] = typer.Option(None, "--cache-write", help="Default: the input price."),
              output: Output = OutputOpt) -> None:
    """Price MODEL for this workspace (negotiated, or a local model): it wins over the CLI's figure."""
    row = Client().request("PUT", "/api/usage/prices", json={"model": model, "input": input, "output": output_price,
                                                             "cache_read": cache_read, "cache_write": cache_write})
    table([row], [("model", "MODEL"), ("input", "INPUT"), ("output", "OUTPUT")], output)


@price_app.command("remove")
def price_remove(model: str) -> None:
    Client().request("DELETE", "/api/usage/prices", params={"model": model})
    typer.echo(f"Removed the workspace's price of {model}.")


BUDGET_COLUMNS = [("id", "ID"), ("target", "FOR"), ("period", "PER"), ("action", "ACTION"), ("limit_text", "LIMIT"),
                  ("spent_text", "SPENT"), ("state", "STATE")]


def _budget_row(b: dict[str, Any]) -> dict[str, Any]:
    money = b["metric"] == "cost"
    spent = _money(b["spent"]) if money else f"{b['spent']:,} tokens"
    if money and b.get("unknown_cost_runs"):
        spent += f" (+{b['unknown_cost_runs']} runs of unknown cost)"
    return {**b, "limit_text": _money(b["limit"]) if money else f"{b['limit']:,} tokens", "spent_text": spent}


@budget_app.command("list")
def budget_list(output: Output = OutputOpt) -> None:
    """Each budget, what its scope spent this day or month (UTC) and its state."""
    rows = Client().get("/api/budgets")
    table(rows if output == Output.json else [_budget_row(b) for b in rows], BUDGET_COLUMNS, output,
          "no budgets: `predictorx budget set --limit 20 --per day --action stop`")


@budget_app.command("set")
def budget_set(limit: float = typer.Option(..., "--limit", help="US dollars, or tokens with --tokens."),
               per: str = typer.Option("day", "--per", help="day or month (UTC)."),
               action: str = typer.Option("warn", "--action", help="warn (soft) or stop (hard)."),
               tokens: bool = typer.Option(False, "--tokens", help="The limit counts tokens, not dollars."),
               project: Optional[str] = typer.Option(None, "--project", help="Only this project (id)."),
               agent: Optional[str] = typer.Option(None, "--agent", help="Only this agent (name or id)."),
               output: Output = OutputOpt) -> None:
    """Add a budget for the workspace (or --project / --agent), or change the limit of the same one."""
    if project and agent:
        fail("a budget is for the workspace, one project or one agent: give --project or --agent, not both", 2)
    scope, target = ("project", project) if project else ("agent", agent) if agent else ("workspace", None)
    body = {"scope": scope, "target": target, "period": per, "metric": "tokens" if tokens else "cost",
            "limit": limit, "action": action}
    row = Client().post("/api/budgets", body)
    table([_budget_row(row)] if output != Output.json else [row], BUDGET_COLUMNS, output)


@budget_app.command("remove")
def budget_remove(budget_id: str) -> None:
    Client().delete(f"/api/budgets/{seg(budget_id)}")
    typer.echo(f"Removed budget {budget_id}; tasks it held may run now.")


def register(root: typer.Typer) -> None:
    root.add_typer(usage_app, name="usage")
    root.add_typer(budget_app, name="budget")
