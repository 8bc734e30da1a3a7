"""What a tool call produced: its result at each level of detail, and the effect to commit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attrs import frozen

from livecontext.protocol.history import ToolCall, ToolResult, ToolStatus
from livecontext.protocol.kernel import Message
from livecontext.protocol.wire import LivecontextError

from ..history import result_content

if TYPE_CHECKING:
    from livecontext.runtime.tokens import TokenCounter


class ToolFailure(LivecontextError):
    """Raised inside a tool to fail the call with a message the model reads and can act on.

    Use it for the model's mistakes ("old_text not found"). Any *other* exception escaping a
    tool is a bug in the tool; :func:`invoke_tool` still reports it to the model, as
    ``"<tool> raised <Type>: <message>"``, but never as a plain explanation.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        """What the model reads."""


@frozen
class ToolOutcome:
    """The result of one tool call at every level of detail, plus its effect.

    A tool never changes its app's state. It returns the change as :attr:`effect`; the
    history store commits the effect together with the result, and only then does the host
    call :meth:`App.apply` with it (DESIGN.md, "One writer"). Build one with :meth:`ok` or
    :meth:`failed`.
    """

    status: ToolStatus
    """How the call ended."""
    live: str
    """Everything the model should see right after the call (e.g. the whole new text)."""
    recent: str | None = None
    """The detail for a recent step (e.g. a diff); ``None``: the runtime makes it from
    :attr:`live` (its head and tail lines when it is long, else all of it)."""
    gist: str | None = None
    """One line for old history (e.g. ``notebook edited: 120 -> 184 chars (+64)``); ``None``:
    the runtime makes it (the tool, its status, the size and the line that says most)."""
    effect: Message | None = None
    """The state change to commit with the result; ``None`` when nothing changes."""

    def __attrs_post_init__(self) -> None:
        if self.status is not ToolStatus.OK and self.effect is not None:
            raise ValueError(
                f"a {self.status.value} tool outcome cannot carry an effect "
                f"({type(self.effect).__name__}): only a successful call changes state"
            )

    @classmethod
    def ok(cls, live: str, recent: str | None = None, gist: str | None = None,
           effect: Message | None = None) -> ToolOutcome:
        """A successful call: its full text, the shorter levels if the tool has better ones
        than the runtime would make, and the effect to commit, if any."""
        return cls(ToolStatus.OK, live, recent, gist, effect)

    @classmethod
    def failed(cls, message: str) -> ToolOutcome:
        """A failed call: ``message`` in full, its shorter levels made by the runtime, and
        nothing changes."""
        return cls(ToolStatus.FAILED, message)

    def to_result(self, call: ToolCall, tokens: TokenCounter) -> ToolResult:
        """The :class:`~livecontext.protocol.history.ToolResult` answering ``call``, with token counts.

        Text that is not valid Unicode (a lone surrogate, as ``bytes.decode(errors=
        "surrogateescape")`` leaves) cannot be counted, stored or sent: such characters are
        replaced by U+FFFD and the output says how many were, so the model still reads what
        the tool said (the tool ran; its result is not a failure of ours)."""
        live, replaced = _valid(self.live)
        recent = _valid(self.recent)[0] if self.recent is not None else None
        gist = _valid(self.gist)[0] if self.gist is not None else None
        if replaced:
            live += f"\n[{replaced} characters that are not valid Unicode replaced by \ufffd]"
        return ToolResult(
            call_id=call.id,
            name=call.name,
            status=self.status,
            content=result_content(call.name, self.status, live, recent, gist, tokens),
        )


def _valid(text: str) -> tuple[str, int]:
    """``text`` with its lone surrogates replaced by U+FFFD, and how many there were."""
    try:
        text.encode("utf-8")  # (the common case, checked at C speed)
    except UnicodeEncodeError:
        bad = sum(1 for ch in text if "\ud800" <= ch <= "\udfff")
        return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text), bad
    return text, 0
