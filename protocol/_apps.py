"""Effects of apps' tools: state changes committed to the log with the tool result."""

from __future__ import annotations

from attrs import frozen

from ._message import Message


@frozen
class NotebookEdited(Message):
    """The Memory Notebook's text after an edit (an app's state is a fold of these)."""

    app: str
    """The app's name (``notebook``)."""
    text: str
    """The whole text after the edit."""
