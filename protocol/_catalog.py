"""The closed list of tagged protocol classes the converter knows."""

from __future__ import annotations

from ._apps import NotebookEdited
from ._entries import ModelInputEntry, ModelOutputEntry, RecapEntry, ToolResultsEntry
from ._kernel import Ack, ActorEscalated, ActorRestarted, ErrorReply

TAGGED_TYPES: tuple[type, ...] = (
    # kernel
    Ack,
    ActorEscalated,
    ActorRestarted,
    ErrorReply,
    # app effects
    NotebookEdited,
    # history entries
    ModelInputEntry,
    ModelOutputEntry,
    ToolResultsEntry,
    RecapEntry,
)
"""Every tagged class; a test checks that each ``Message`` subclass in protocol/ is here."""
