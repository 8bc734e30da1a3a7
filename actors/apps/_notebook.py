"""The Memory Notebook: a text the model keeps for itself, edited by exact replacement."""

from __future__ import annotations

import json

from livecontext.protocol.history import Retention
from livecontext.protocol.kernel import Message
from livecontext.protocol.records import NotebookEdited

from ._app import App
from ._diff import unified_diff
from ._errors import AppStateError
from ._outcome import ToolFailure, ToolOutcome
from ._tool import tool

_STATE_VERSION = 1


class Notebook(App):
    """The built-in Memory Notebook: one text, shown whole in the window.

    The model edits it with :meth:`notebook_replace` (old text -> new text, matching exactly
    once) and :meth:`notebook_replace_span` (everything between two anchors). Each edit's
    result has three levels: LIVE the whole new text, RECENT a unified diff, GIST one line
    with the size change. The edit itself is a :class:`~livecontext.protocol.records.NotebookEdited`
    effect, applied once committed.

    Its tools' results are DISPOSABLE: each shows the notebook as it was, which its window
    shows as it is now; when the history is full they are the first to go.
    """

    name = "notebook"
    effects = (NotebookEdited,)

    def __init__(self) -> None:
        self._text = ""

    @property
    def text(self) -> str:
        """The notebook's current (committed) text."""
        return self._text

    def view(self) -> str:
        """The whole text, or a note that the notebook is empty."""
        return self._text if self._text else "(the notebook is empty)"

    def apply(self, effect: Message) -> None:
        """Apply a committed :class:`~livecontext.protocol.records.NotebookEdited`."""
        if isinstance(effect, NotebookEdited):
            self._text = effect.text
            return
        super().apply(effect)

    def state_text(self) -> str:
        """The text as a JSON snapshot: ``{"version": 1, "text": ...}``."""
        return json.dumps({"version": _STATE_VERSION, "text": self._text}, ensure_ascii=False)

    def load_state(self, text: str) -> None:
        """Restore a snapshot made by :meth:`state_text`.

        Raises:
            AppStateError: if ``text`` is not JSON of that shape or has another version.
        """
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise AppStateError(f"notebook snapshot is not valid JSON: {exc}") from exc
        if not isinstance(data, dict) or data.get("version") != _STATE_VERSION:
            version = data.get("version") if isinstance(data, dict) else None
            raise AppStateError(
                f"notebook snapshot has version {version!r}, this build reads version "
                f"{_STATE_VERSION}; use a snapshot made by Notebook.state_text()"
            )
        if not isinstance(data.get("text"), str):
            raise AppStateError(
                f"notebook snapshot needs a string 'text', got {data.get('text')!r}; use a "
                "snapshot made by Notebook.state_text()"
            )
        self._text = data["text"]

    @tool(idempotent=True, retention=Retention.DISPOSABLE)
    def notebook_replace(self, old_text: str, new_text: str) -> ToolOutcome:
        """Replace one exact passage of the notebook with new text.

        old_text must occur exactly once in the notebook, character for character
        (whitespace and case matter); copy it from the notebook window and include enough
        surrounding text to make it unique. To write into an empty notebook, pass an empty
        old_text. To delete a passage, pass an empty new_text.

        Args:
            old_text: The exact passage to replace; empty only when the notebook is empty.
            new_text: The text to put in its place.
        """
        text = self._text
        if not old_text:
            if text:
                raise ToolFailure(
                    "old_text is empty but the notebook is not; give the exact passage to "
                    "replace (it must occur exactly once)"
                )
            return _edited(self.name, text, new_text)
        start = _find_once("old_text", old_text, text)
        return _edited(self.name, text, text[:start] + new_text + text[start + len(old_text) :])

    @tool(idempotent=True, retention=Retention.DISPOSABLE)
    def notebook_replace_span(
        self, start_anchor: str, end_anchor: str, new_text: str
    ) -> ToolOutcome:
        """Replace a whole span of the notebook, given the text at its start and at its end.

        The span runs from the beginning of start_anchor through the end of the first
        end_anchor found after it; both anchors are replaced too, so repeat them in new_text
        to keep them. start_anchor must occur exactly once. Use this for long passages that
        would be tedious to copy whole into notebook_replace.

        Args:
            start_anchor: The exact text where the span begins; must occur exactly once.
            end_anchor: The exact text where the span ends (the first occurrence after
                start_anchor).
            new_text: The text to put in place of the whole span.
        """
        text = self._text
        if not start_anchor or not end_anchor:
            which, where = ("end_anchor", "ends") if start_anchor else ("start_anchor", "begins")
            raise ToolFailure(f"{which} is empty; give the exact text where the span {where}")
        start = _find_once("start_anchor", start_anchor, text)
        after = start + len(start_anchor)
        end = text.find(end_anchor, after)
        if end < 0:
            where = (
                "it occurs only before or overlapping start_anchor"
                if end_anchor in text
                else "it does not occur in the notebook"
            )
            raise ToolFailure(
                f"end_anchor not found after start_anchor ({where}); copy the exact text where "
                "the span ends from the notebook window"
            )
        return _edited(self.name, text, text[:start] + new_text + text[end + len(end_anchor) :])


def _occurrences(needle: str, haystack: str) -> list[int]:
    """Where ``needle`` starts in ``haystack``, overlapping occurrences included."""
    found: list[int] = []
    at = haystack.find(needle)
    while at >= 0:
        found.append(at)
        at = haystack.find(needle, at + 1)
    return found


def _find_once(what: str, needle: str, text: str) -> int:
    """The position of the one occurrence of ``needle``; a ToolFailure unless exactly one."""
    found = _occurrences(needle, text)
    if not found:
        empty = " (the notebook is empty)" if not text else ""
        raise ToolFailure(
            f"{what} not found in the notebook{empty}; copy it exactly from the notebook "
            "window (whitespace and case matter)"
        )
    if len(found) > 1:
        raise ToolFailure(
            f"{what} occurs {len(found)} times; include more surrounding text so it matches "
            "exactly once"
        )
    return found[0]


def _edited(app: str, old: str, new: str) -> ToolOutcome:
    """The outcome of changing the text from ``old`` to ``new``, at every level."""
    if new == old:
        return ToolOutcome.ok(
            new,
            "no change: the new text equals the old text",
            f"{app} unchanged: {len(new)} chars",
        )
    diff = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
        for line in unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"{app} (before)",
            tofile=f"{app} (after)",
        )
    )
    delta = len(new) - len(old)
    return ToolOutcome.ok(
        live=new,
        recent=diff.rstrip("\n"),
        gist=f"{app} edited: {len(old)} -> {len(new)} chars ({delta:+d})",
        effect=NotebookEdited(text=new),
    )
