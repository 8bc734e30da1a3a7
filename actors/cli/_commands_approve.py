"""``livecontext approve`` and ``deny``: a person decides a tool call waiting for approval, then
the thread carries on as ``livecontext run --thread T`` carries it on (unless ``--no-run``)."""

from __future__ import annotations

import contextlib
import os
from typing import Any

import click

from livecontext.protocol.history import ApprovalRecorded, DecideApproval

from ..agent import Session, decide_approval
from ..front import AgentSpec
from ._commands_agent import _open, run_agent
from ._main import import_from_cwd, main, print_json, run_async, store_option


def _decider() -> str:
    """Who decides when ``--by`` is not given: ``$USER``, else ``user``."""
    return os.environ.get("USER", "").strip() or "user"


def _decision_options(fn: Any) -> Any:
    fn = click.option("--json", "as_json", is_flag=True,
                      help="JSON: the decision on one line, then what `run --json` prints.")(fn)
    fn = click.option("--no-run", "no_run", is_flag=True, help="Record the decision only; do not carry the thread on.")(fn)
    fn = click.option("--max-steps", default=None, type=click.IntRange(min=1), help="Stop after this many steps.")(fn)
    fn = click.option("--by", "by", default=None, metavar="NAME",
                      help="Who decides, recorded with the decision (default: $USER, else user).")(fn)
    fn = click.option("--thread", "thread_id", required=True, help="Thread id.")(fn)
    return store_option(fn)


@main.command()
@_decision_options
@click.option("--arguments", "arguments", default=None, metavar="JSON",
              help="Edited arguments (a JSON object) the call runs with instead of the model's.")
@click.argument("call_id")
def approve(store_url: str, thread_id: str, by: str | None, max_steps: int | None, no_run: bool, as_json: bool,
            arguments: str | None, call_id: str) -> None:
    """Approve tool call CALL_ID of a thread waiting for approval, then carry the thread on
    (as `livecontext run --thread T` does) unless --no-run.

    `livecontext state --thread T` lists the calls waiting, with their ids.
    """
    _decide(store_url, thread_id, DecideApproval(call_id, True, arguments, "", by or _decider()),
            max_steps=max_steps, no_run=no_run, as_json=as_json)


@main.command()
@_decision_options
@click.option("--reason", "reason", default="", metavar="TEXT",
              help="Why (the model reads it; default: denied).")
@click.argument("call_id")
def deny(store_url: str, thread_id: str, by: str | None, max_steps: int | None, no_run: bool, as_json: bool,
         reason: str, call_id: str) -> None:
    """Deny tool call CALL_ID of a thread waiting for approval: it is never run, and its result
    tells the model who denied it and why. Then carry the thread on unless --no-run."""
    _decide(store_url, thread_id, DecideApproval(call_id, False, None, reason, by or _decider()),
            max_steps=max_steps, no_run=no_run, as_json=as_json)


def _decide(store_url: str, thread_id: str, decision: DecideApproval, *, max_steps: int | None, no_run: bool,
            as_json: bool) -> None:
    from livecontext.runtime import UsageError

    try:
        spec = AgentSpec(thread=thread_id, store=store_url, max_steps=max_steps)
    except UsageError as exc:
        click.echo(f"livecontext: error: {exc}", err=True)
        raise SystemExit(1) from None
    run_async(lambda: _existing(store_url, thread_id))  # (deciding never makes a store or a thread)

    async def before(session: Session) -> None:
        await _record(session, decision, thread_id, as_json)

    if not no_run:
        run_agent(spec, as_json=as_json, before=before)
        return

    async def go() -> None:
        import_from_cwd()  # (the thread's recorded tools and apps import from here, as for run)
        async with contextlib.AsyncExitStack() as stack:
            opened = await _open(stack, spec, None, None)
            await before(opened.session)
    run_async(go)


async def _existing(store_url: str, thread_id: str) -> None:
    """Refuse a store or a thread that does not exist, or an agent's thread of a system, in one
    line: a system's agent runs with the others (its messages, its turns, the system's clock),
    so its calls are decided through the system."""
    from livecontext.runtime import UsageError

    from ._commands_store import _reader

    async with _reader(store_url, thread_id) as reader:
        first = await reader.read(1, 1)
    if first and first[0].system_seq is not None:
        raise UsageError(f"thread {thread_id} is an agent of a system (its records carry system seqs): decide its "
                         "calls through the system, with System.approve or System.deny in Python "
                         "(docs/approvals.md); the command line does not decide a system's calls yet")


async def _record(session: Session, decision: DecideApproval, thread_id: str, as_json: bool) -> None:
    client = session.rt.client("approval" if decision.approved else "denial")
    recorded: ApprovalRecorded = await decide_approval(client, session.agent.history, decision)
    d = recorded.decided
    if as_json:
        print_json({"thread": thread_id, "call_id": d.call_id, "approved": d.approved, "by": d.by,
                    **({"arguments": d.arguments} if d.arguments is not None else {}),
                    **({"reason": d.reason} if not d.approved else {}), "pending": list(recorded.pending)})
        return
    what = (f"approved by {d.by}" + (f" with arguments {d.arguments}" if d.arguments is not None else "")
            if d.approved else f"denied by {d.by}: {d.reason}")
    waiting = f"; still waiting for approval: {', '.join(recorded.pending)}" if recorded.pending else ""
    click.echo(f"thread {thread_id}: call {d.call_id} {what}{waiting}")
