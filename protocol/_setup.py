"""How a thread runs besides what it renders, as its log records it (see
:attr:`~livecontext.protocol.records.ThreadConfigured.settings`).

These are plain records of the settings the agent layer checks and uses
(``livecontext.actors``: ``HistoryLimits``, ``RecapSettings``, ``AnalyzerSettings``,
``SpendLimits``); a thread is resumed with them, so that reopening it without saying
anything runs it as it ran. Enum-valued settings are kept as their string values, which
the agent layer turns back into its enums.
"""

from __future__ import annotations

from attrs import frozen


@frozen
class RecordedLimits:
    """The limits of a thread's unfolded history, and their thresholds (fractions of each)."""

    max_entries: int | None = None
    max_tokens: int | None = None
    max_bytes: int | None = None
    soft: float = 0.6
    hard: float = 0.8
    truncate: float = 1.0


@frozen
class RecordedRecap:
    """How a thread's recap maintainer folds."""

    strategy: str = "simple_extract"
    window: int = 4
    batch: int = 4
    max_summary_chars: int = 2000
    budget: int = 2000
    max_retries: int = 8
    model: str = ""
    """The spec of its model (``model_summary``); empty: none, or a client given in Python."""


@frozen
class RecordedAnalyzer:
    """One analyzer of a thread."""

    name: str
    kind: str = "repeated_failures"
    trigger: str = "history"
    period_s: float = 5.0
    prompt: str = ""
    threshold: int = 3
    window: int = 12
    capabilities: tuple[str, ...] = ("read", "notify")
    model: str = ""
    """The spec of its model (``model`` analyzers); empty: none, or a client given in Python."""


@frozen
class RecordedPrice:
    """What one model charges, in money per million tokens."""

    model: str
    input: float
    cached_input: float
    output: float


@frozen
class RecordedSpend:
    """A thread's spend limits (``None``: no limit of that kind) and the prices they are
    counted with, in place of the known defaults."""

    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    max_cost: float | None = None
    prices: tuple[RecordedPrice, ...] = ()


@frozen
class ThreadSettings:
    """How a thread's agent runs besides its budget, tools, apps, model and context policy:
    what resuming the thread without saying otherwise runs it with."""

    limits: RecordedLimits | None = None
    """The limits given (``None``: none given; derived from the budget when a recap runs)."""
    recap: RecordedRecap | None = None
    """The recap maintainer's settings (``None``: no recap)."""
    analyzers: tuple[RecordedAnalyzer, ...] = ()
    spend: RecordedSpend | None = None
    """Its own spend limits (``None``: none)."""
    pin_task: bool = True
    """Whether its first input (the task) is pinned."""
    lifecycle: bool = True
    """Whether the control tools (``task_complete``, ``task_abandon``, ``output``,
    ``wait_user_response``; ``wait_parent`` in a sub-agent) are offered."""
    approval: tuple[str, ...] = ()
    """The tools every call of which needs a person's approval (beside those whose spec
    says so), sorted."""
    approval_policy: str = ""
    """The import path (``module:function``) of the function deciding per call which calls
    need approval; empty: none, or a function given in Python that has no import path."""
    folder: str = ""
    """The folder (absolute) its apps, tools and approval policy were imported from besides
    the current one: its blueprint's; empty: none. A resumed thread imports from it again."""
