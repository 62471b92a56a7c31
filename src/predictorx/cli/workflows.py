"""`predictorx workflow …` and `predictorx classify`: people drive the harness from the terminal
(R-HAR-1…4). Thin over the HTTP API; inside a task the same commands act as the agent."""

from __future__ import annotations

import json
from typing import Optional

from . import commandline as typer  # typer's API, without its start-up (commandline.py)

from .client import Client, fail, seg
from .output import Output, record, table

app = typer.Typer(help="Workflow instances on an issue: start, see enabled steps, complete, suspend, resume.",
                  no_args_is_help=True)
OutputOpt = typer.Option(Output.table, "--output", "-o", help="table or json")
STEP_COLS = [("node", "STEP"), ("name", "NAME"), ("kind", "KIND"), ("role", "ROLE"), ("gate", "GATE"),
             ("outcomes", "OUTCOMES"), ("skills", "SKILLS")]


def _facts(pairs: list[str]) -> dict:
    out = {}
    for p in pairs:
        key, sep, raw = p.partition("=")
        if not sep or not key.strip():
            fail(f"--fact {p!r} must be KEY=VALUE (VALUE as JSON when it parses: 3, true, \"x\")", 2)
        try:
            out[key.strip()] = json.loads(raw)
        except ValueError:
            out[key.strip()] = raw
    return out


@app.command("processes")
def processes(output: Output = OutputOpt) -> None:
    """The processes that can be started."""
    table(Client().get("/api/workflows/processes"), [("id", "PROCESS"), ("name", "NAME"), ("diagram", "DIAGRAM"),
                                                     ("enforcement", "ENFORCEMENT")], output)


@app.command("list")
def list_(issue: str, output: Output = OutputOpt) -> None:
    """Instances on an issue with their enabled steps."""
    rows = Client().get(f"/api/issues/{seg(issue)}/workflows")
    for r in rows:
        r["enabled_steps"] = ", ".join(f"{e['node']} ({e['role'] or 'any'})" for e in r["enabled"])
    table(rows, [("process_id", "PROCESS"), ("status", "STATUS"), ("steps", "STEPS"), ("version", "VERSION"),
                 ("enabled_steps", "ENABLED")], output, "no workflow on this issue yet")


@app.command("start")
def start(issue: str, process: str, output: Output = OutputOpt) -> None:
    """Start PROCESS on ISSUE (starting it again returns the same instance)."""
    r = Client().post(f"/api/issues/{seg(issue)}/workflows", {"process": process})
    if output == Output.json:
        record(r, [], output)
        return
    typer.echo(f"{'Started' if r['created'] else 'Already running:'} {r['process_id']} on #{r['issue_number']}; "
               f"enabled: {', '.join(e['node'] for e in r['enabled']) or 'nothing'}.")
    if r.get("question"):
        typer.echo(f"Waiting for an answer: {r['question']['question']} "
                   f"(`predictorx workflow answer {r['issue_number']} suspend|bean`)")


@app.command("next")
def next_(issue: str, process: str, output: Output = OutputOpt) -> None:
    """The enabled steps of an instance and who may take them."""
    table(Client().get(f"/api/issues/{seg(issue)}/workflows/{seg(process)}")["enabled"], STEP_COLS, output,
          "no enabled step (the instance is completed or suspended)")


@app.command("complete")
def complete(issue: str, process: str, step: str,
             fact: list[str] = typer.Option([], "--fact", help="KEY=VALUE a decision reads (repeatable)."),
             outcome: Optional[str] = typer.Option(None, "--outcome", help="A judgement's branch."),
             reason: Optional[str] = typer.Option(None, "--reason", help="Why (mandatory with --outcome)."),
             produced: list[str] = typer.Option([], "--produced", help="KEY=VALUE: bean, branch, commit… (repeatable)."),
             if_version: Optional[int] = typer.Option(None, "--if-version", help="Refuse if the instance moved."),
             output: Output = OutputOpt) -> None:
    """Complete an enabled step (or pass a gate)."""
    body = {"step": step, "facts": _facts(fact), "outcome": outcome, "reason": reason,
            "produced": {k: str(v) for k, v in _facts(produced).items()}, "if_version": if_version}
    r = Client().post(f"/api/issues/{seg(issue)}/workflows/{seg(process)}/steps", body)
    if output == Output.json:
        record(r, [], output)
        return
    st = r["step"]
    how = f" → {st['outcome']}" + (" (computed)" if st["computed"] else "") if st["outcome"] else ""
    typer.echo(f"Done: {st['node_id']}{how}. Next: {', '.join(e['node'] for e in r['enabled']) or r['instance']['status']}.")


@app.command("show")
def show(issue: str, process: str, output: Output = OutputOpt) -> None:
    """An instance: status, enabled steps and the history with verdicts."""
    r = Client().get(f"/api/issues/{seg(issue)}/workflows/{seg(process)}")
    if output == Output.json:
        record(r, [], output)
        return
    typer.echo(f"{r['process_id']} on #{r['issue_number']}: {r['status']}, version {r['version']}")
    table(r["history"], [("seq", "#"), ("node_id", "STEP"), ("status", "STATUS"), ("actor_name", "BY"),
                         ("role", "ROLE"), ("outcome", "OUTCOME"), ("reason", "REASON"), ("verdict", "VERDICT")],
          output, "no steps yet")
    if r["enabled"]:
        typer.echo("enabled: " + ", ".join(f"{e['node']} ({e['role'] or 'any'})" for e in r["enabled"]))


@app.command("state")
def state(issue: str, agent: Optional[str] = typer.Option(None, "--agent"), output: Output = OutputOpt) -> None:
    """The interaction state of an agent's session on ISSUE: idle or workflow, and the suspended stack."""
    r = Client().get(f"/api/issues/{seg(issue)}/workflow-state", params={"agent": agent} if agent else None)
    _print_state(r, output)


def _print_state(r: dict, output: Output) -> None:
    if output == Output.json:
        record(r, [], output)
        return
    active = r["active"]
    typer.echo(f"#{r['issue']}: {r['state']}" + (f" — {active['process']}" if active else ""))
    for i, f in enumerate(r["stack"]):
        typer.echo(f"  suspended {i + 1}: {f['process']} at {', '.join(f['activity']) or '-'} (since {f['at']})")
    if r.get("pending"):
        typer.echo(f"  question: {r['pending']['question']} (`predictorx workflow answer {r['issue']} suspend|bean`)")


@app.command("answer")
def answer(issue: str, choice: str = typer.Argument(..., help="suspend (take the platform change now) or bean "
                                                             "(file it for later)."),
           reason: Optional[str] = typer.Option(None, "--reason"), agent: Optional[str] = typer.Option(None, "--agent"),
           output: Output = OutputOpt) -> None:
    """Answer the waiting question: content work is in progress and a platform change arrived."""
    r = Client().post(f"/api/issues/{seg(issue)}/workflow-state/answer",
                      {"answer": choice, "reason": reason, "agent": agent})
    if output == Output.json:
        record(r, [], output)
        return
    typer.echo(f"Answered {r['answer']}" + (f": bean {r['bean']} filed." if r.get("bean") else "."))
    _print_state(r["state"], output)


@app.command("exit")
def exit_(issue: str, process: str, exit_id: str = typer.Argument(..., metavar="EXIT", help="A declared exit, e.g. defer."),
          reason: str = typer.Option(..., "--reason", help="Why (mandatory)."), output: Output = OutputOpt) -> None:
    """Leave a workflow by a declared exit (feature-request: defer — the user defers the remaining work)."""
    r = Client().post(f"/api/issues/{seg(issue)}/workflows/{seg(process)}/exit", {"exit": exit_id, "reason": reason})
    if output == Output.json:
        record(r, [], output)
        return
    st = r["step"]
    typer.echo(f"{r['instance']['process_id']} left by {st['outcome']} ({st['node_name']}); "
               f"open beans left: {st['facts'].get('open_beans', 0)}.")


@app.command("stop")
def stop(issue: str, process: str, reason: str = typer.Option(..., "--reason", help="Why (mandatory; kept in the record)."),
         output: Output = OutputOpt) -> None:
    """Stop a running workflow (one the classifier started by mistake, say): it takes no more steps."""
    r = Client().post(f"/api/issues/{seg(issue)}/workflows/{seg(process)}/stop", {"reason": reason})
    if output == Output.json:
        record(r, [], output)
        return
    typer.echo(f"{r['instance']['process_id']} stopped: {r['step']['reason']}")


@app.command("suspend")
def suspend(issue: str, agent: Optional[str] = typer.Option(None, "--agent"), output: Output = OutputOpt) -> None:
    """Suspend the active workflow onto the stack (recording where it was)."""
    _print_state(Client().post(f"/api/issues/{seg(issue)}/workflow-state/suspend", {"agent": agent}), output)


@app.command("resume")
def resume(issue: str, agent: Optional[str] = typer.Option(None, "--agent"), output: Output = OutputOpt) -> None:
    """Resume the most recently suspended workflow."""
    _print_state(Client().post(f"/api/issues/{seg(issue)}/workflow-state/resume", {"agent": agent}), output)


@app.command("bind")
def bind(project: str, role: str, name: str, kind: str = typer.Option("agent", "--kind", help="agent or member"),
         output: Output = OutputOpt) -> None:
    """Bind ROLE in PROJECT to an agent (its lane's steps become its tasks) or a member."""
    if kind not in ("agent", "member"):
        fail("--kind must be agent or member", 2)
    r = Client().post(f"/api/projects/{seg(project)}/roles", {"role": role, "kind": kind, "name": name})
    record(r, [("role", "role"), ("kind", "kind"), ("principal_id", "bound to")], output)


def classify_cmd(text: str = typer.Argument(..., help="The request."),
                 issue: Optional[str] = typer.Option(None, "--issue", help="Record a judgement on this issue's "
                                                     "pending classification instead."),
                 category: Optional[str] = typer.Option(None, "--category"),
                 reason: Optional[str] = typer.Option(None, "--reason"),
                 folio: Optional[str] = typer.Option(None, "--folio", help="Content authoring: the folio it is for, "
                                                     "paper or document (selects the authoring workflow)."),
                 classification: Optional[str] = typer.Option(None, "--classification", help="Which pending "
                                                              "classification (default: the latest)."),
                 output: Output = OutputOpt) -> None:
    """Classify a request with the decision table; with --issue, --category and --reason, record a judgement."""
    if issue:
        if not category or not (reason or "").strip():
            fail("a judgement needs --category and --reason", 2)
        body = ({"category": category, "reason": reason} | ({"folio": folio} if folio else {})
                | ({"classification": classification} if classification else {}))
        r = Client().post(f"/api/issues/{seg(issue)}/classifications", body)
    else:
        r = Client().post("/api/classify", {"text": text})
    record(r, [("category", "category"), ("method", "method"), ("rule", "rule"), ("reason", "reason"),
               ("workflow", "workflow"), ("question", "question")], output)


@app.command("handoff")
def handoff(done: str = typer.Option(..., "--done", help="What this task did."),
            next_step: str = typer.Option(..., "--next", help="Where the next task starts."),
            question: list[str] = typer.Option([], "--question", help="An open question (repeatable)."),
            task: Optional[str] = typer.Option(None, "--task", help="Default: PREDICTORX_TASK_ID (inside a task).")) -> None:
    """Inside a task: leave the handoff for the next task on this issue (R-HAR-7)."""
    import os

    task_id = task or os.environ.get("PREDICTORX_TASK_ID")
    if not task_id:
        fail("no task: run this inside a task, or pass --task", 2)
    r = Client().post(f"/api/tasks/{seg(task_id)}/harness/handoff",
                      {"done": done, "next_step": next_step, "open_questions": question})
    typer.echo(f"Handoff stored; position: {r.get('position_text') or '-'}.")


@app.command("handoffs")
def handoffs(issue: str, output: Output = OutputOpt) -> None:
    """The handoffs left on an issue, newest first."""
    rows = Client().get(f"/api/issues/{seg(issue)}/handoffs")
    table(rows, [("task", "TASK"), ("done", "DONE"), ("next_step", "NEXT"), ("position_text", "POSITION"),
                 ("branch", "BRANCH")], output, "no handoffs on this issue")
