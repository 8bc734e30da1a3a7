"""Tools for examples/approvals.toml: invoices to pay, each payment approved by a person first.

`pay_invoice` acts on the world outside the thread, so it is marked `side_effects=True` and
writes each payment under the call's idempotency key to a ledger (a JSONL file:
`$PAYMENTS_LEDGER`, else `payments-ledger.jsonl` in the current folder). Its `check` looks the
key up there: a payment cut short by a crash is found done, or run once, never twice.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import livecontext

DUE = {"A-17": 120, "B-4": 75}
"""The invoices due, by number, with their amounts."""


def _ledger() -> Path:
    return Path(os.environ.get("PAYMENTS_LEDGER", "payments-ledger.jsonl"))


def paid(key: str) -> str | None:
    """What the ledger says was paid under idempotency key ``key`` (``None``: nothing)."""
    ledger = _ledger()
    if not ledger.exists():
        return None
    for line in ledger.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry["key"] == key:
            return f"paid {entry['invoice']}: {entry['amount']} (found in the ledger)"
    return None


@livecontext.tool(idempotent=True)
def list_invoices() -> str:
    """List the invoices that are due, with their amounts."""
    return "\n".join(f"{number}: {amount}" for number, amount in DUE.items())


@livecontext.tool(approval=True, side_effects=True, check=paid)
def pay_invoice(invoice: str, amount: int, ctx: livecontext.ToolContext) -> str:
    """Pay an invoice.

    Args:
        invoice: The invoice's number.
        amount: How much to pay.
    """
    if invoice not in DUE:
        raise livecontext.ToolFailure(f"no invoice {invoice} is due; the ones due: {', '.join(DUE)}")
    with _ledger().open("a", encoding="utf-8") as ledger:
        ledger.write(json.dumps({"key": ctx.key, "invoice": invoice, "amount": amount}) + "\n")
    return f"paid {invoice}: {amount}"
