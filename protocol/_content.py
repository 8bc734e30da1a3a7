"""Levels of detail and retention classes of history content (seed note 001)."""

from __future__ import annotations

import enum

from attrs import frozen


class Level(enum.Enum):
    """How much detail of an entry is rendered.

    All three are written when the entry is written; rendering only chooses among them.
    """

    LIVE = "live"
    """Everything: the latest observation, with the apps' windows."""
    RECENT = "recent"
    """The detail of recent steps: diffs, anchors, full tool output."""
    GIST = "gist"
    """A line or two."""


class Retention(enum.Enum):
    """What the recap maintainer and limits may do with an entry."""

    CRITICAL = "critical"
    """Never folded or removed."""
    COMPRESSIBLE = "compressible"
    """May be folded into a recap one entry at a time."""
    BATCH_COMPRESSIBLE = "batch_compressible"
    """May be folded into a recap, in batches."""
    DISPOSABLE = "disposable"
    """May be dropped outright when a limit is reached."""
    EPHEMERAL = "ephemeral"
    """Gone when the session ends; never persisted across a restart."""


class Shown(enum.Enum):
    """How an entry appears in one rendered context (``render --json``, :class:`Rendered`)."""

    LIVE = "live"
    """In full: the latest observation, with the apps' windows."""
    RECENT = "recent"
    """At its RECENT level."""
    GIST = "gist"
    """At its GIST level."""
    RECAP = "recap"
    """Folded: a recap stands for it (or, for a recap, rendered)."""
    OMITTED = "omitted"
    """Left out for want of budget (said in one line of the context)."""


@frozen
class LevelText:
    """One level of an entry's content and its cached token count."""

    text: str
    """The text rendered at this level."""
    tokens: int
    """Token count of ``text``, computed once when the entry was written."""


@frozen
class Content:
    """An entry's content at every level of detail."""

    live: LevelText
    """Full detail."""
    recent: LevelText
    """Recent-step detail."""
    gist: LevelText
    """One line or two."""

    def at(self, level: Level) -> LevelText:
        """The text at ``level``."""
        if level is Level.LIVE:
            return self.live
        if level is Level.RECENT:
            return self.recent
        return self.gist
