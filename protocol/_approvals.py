"""Approvals: a person approves, edits or denies a tool call before it runs.

A tool may require approval (``ToolSpec.approval``, or the agent's approval policy). The
first time the engine reaches such a call of a model output, it has the history store record
an :class:`ApprovalRequested` naming every call of that output still to run that needs one
(one commit), and stops: the status is ``waiting_approval``. A person decides each call,
one by one, in any order (:class:`DecideApproval`, recorded as :class:`ApprovalDecided`
with who decided: ``by``, and the sender of the record); the engine runs the calls in the
output's order and stops again at the first one not yet decided. An approved call runs (with
the edited arguments, if any); a denied one is not run, and its result tells the model who
denied it and why.

Both records hold for the current model output only: the next model output (or input) and
the tool-results entry clear them, as they clear the recorded results.
"""

from __future__ import annotations

from attrs import frozen

from ._message import Message
from ._tools import ToolCall

DENIED_REASON = "denied"
"""The reason of a deny given none."""


@frozen
class ApprovalRequested(Message):
    """Log record: these calls of the current model output wait for a person's decision."""

    calls: tuple[ToolCall, ...]


@frozen
class ApprovalDecided(Message):
    """Log record: a person approved or denied a call (the record's sender is who sent it)."""

    call_id: str
    approved: bool
    arguments: str | None = None
    """Edited arguments (a JSON object, as text) the call runs with instead of the model's
    (``None``: the model's own); an approval only."""
    reason: str = ""
    """Why it was denied (the model reads it); empty for an approval."""
    by: str = ""
    """Who decided, as the caller named them (a person's name; ``user`` by default)."""


@frozen
class Approval:
    """One call's approval: the call as the model made it, and the decision if one was made."""

    call: ToolCall
    decided: ApprovalDecided | None = None

    @property
    def pending(self) -> bool:
        """Whether the call still waits for a decision."""
        return self.decided is None


@frozen
class RecordApprovalRequest(Message):
    """The engine asks the history store to record that ``calls`` wait for approval
    (ask: ``Tail``). Calls already requested are left as they are."""

    calls: tuple[ToolCall, ...]


@frozen
class DecideApproval(Message):
    """Approve or deny a call waiting for approval (ask: :class:`ApprovalRecorded`).

    Refused with a one-line ``HistoryConflictError`` if no pending approval has that call id,
    if it is decided already, or if ``arguments`` is not a JSON object. A deny with no reason
    is recorded with the reason ``denied``.
    """

    call_id: str
    approved: bool
    arguments: str | None = None
    """Edited arguments (a JSON object as text), for an approval."""
    reason: str = ""
    """Why it is denied (empty: ``denied``)."""
    by: str = ""
    """Who decides (empty: ``user``)."""


@frozen
class ApprovalRecorded(Message):
    """The answer to :class:`DecideApproval`: the decision as recorded, and the calls still
    waiting for one (their ids)."""

    decided: ApprovalDecided
    pending: tuple[str, ...] = ()


ApprovalRecord = ApprovalRequested | ApprovalDecided
"""Log records of approvals."""

ApprovalRequest = RecordApprovalRequest | DecideApproval
"""What the engine and a person's client ask the history store about approvals."""

ApprovalReply = ApprovalRecorded
"""The history store's answer to :class:`DecideApproval`."""


def approval_waits(approvals: tuple[Approval, ...]) -> str:
    """What the agent waits for, in words: ``approval of pay call c1, send_mail call c2``."""
    return "approval of " + ", ".join(f"{a.call.name} call {a.call.id}" for a in approvals if a.pending)


@frozen
class ApprovalsRequested(Message):
    """Published when the engine stops for a person's approval (recorded as
    :class:`ApprovalRequested`): the calls that wait (those of the output still undecided)."""

    thread_id: str
    calls: tuple[ToolCall, ...]
