"""How a batch of folded steps becomes recap text (seed note 004): three strategies.

Every strategy takes the recap it replaces (:class:`Recap`: its text and its data) and
returns the new one. The data is the summary layer (:mod:`._layer`) as JSON: the spans of
every step ever folded, so folded content never vanishes into a count, whatever the strategy:

- ``simple_extract``: the layer's lines, one per step while they fit, merged into range lines
  past ``max_chars``; no model.
- ``structured``: JSON fields filled from the steps (:mod:`._structured`); no model.
- ``model_summary``: a model's summary of the previous recap and the steps; the data keeps
  the layer anyway, so a model failure later falls back on it, and counts the model's calls.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import NoReturn

from livecontext.actors.history import cut_at_boundary
from livecontext.protocol.history import (
    ChatMessage,
    HistoryEntry,
    Level,
    ModelOutputEntry,
    ModelRequest,
    Role,
    ToolResultsEntry,
)
from livecontext.runtime import ModelError, UsageError
from livecontext.runtime.models import ModelClient
from livecontext.runtime.tokens import TokenCounter

from ._facts import steps_of
from ._layer import Layer, Recap, add_steps, fit

class RecapStrategy(enum.StrEnum):
    """How the recap maintainer makes a recap (see the module's docs). A closed set: the
    maintainer knows these three; an actor of your own that folds (any actor with the fold
    capability may send ``FoldIntoRecap``) names its way in the record's own ``strategy``
    text, which stays open.

    Its values are the strings blueprints use; an unknown one is refused with a
    :class:`~livecontext.runtime.UsageError` listing them.
    """

    SIMPLE_EXTRACT = "simple_extract"
    """:func:`simple_extract`: the summary layer's lines; no model."""
    MODEL_SUMMARY = "model_summary"
    """:func:`model_summary`: a model's summary (needs a model)."""
    STRUCTURED = "structured"
    """:func:`~._structured.structured`: JSON fields filled from the steps; no model."""

    @classmethod
    def _missing_(cls, value: object) -> NoReturn:
        raise UsageError(f"recap strategy must be one of {', '.join(cls)}, got {value!r}")

MIN_SUMMARY_CHARS = 300
"""The shortest ``max_summary_chars`` allowed: room for one step's longest line
(:data:`~._facts.STEP_CHARS`), for a range line of any ids down to its ids and step count, and
for ``structured``'s empty fields around one such line. Less could not keep every folded
step represented."""


def simple_extract(previous: Recap, entries: Sequence[HistoryEntry], max_chars: int) -> Recap:
    """One line per folded step (``- e12 bash: pytest -x tests/test_a.py → 3 failed, 12
    passed``) after the previous recap's lines, the oldest merged into range lines past
    ``max_chars`` (see :mod:`._layer`); no model.

    The text is at most ``max_chars`` characters (given at least :data:`MIN_SUMMARY_CHARS`);
    every step ever folded is inside one of its lines' ids. A previous recap without
    readable data (made before recaps kept it) is not carried over: the recap starts fresh.
    """
    layer = Layer.load(previous.data)
    add_steps(layer, entries)
    layer.spans, lines = fit(layer.spans, max_chars + 1, cost=lambda line: len(line) + 3)
    return Recap("\n".join(f"- {line}" for line in lines), layer.dump())


# -- model_summary ---------------------------------------------------------------------------------

_MERGED_FLOOR = 60
"""Range lines in a prompt shrink by halves while longer than this; then to the shortest line."""
SUMMARY_PROMPT = ("Summarise the agent's earlier steps for its own future reference, in at most {max_chars} "
                  "characters. Keep decisions, results and open questions; drop chatter.")
SHORTEN_PROMPT = ("Shorten this summary to at most {max_chars} characters (it has {length}). Keep decisions, "
                  "results, errors and open questions; answer with the summary only.")


async def model_summary(previous: Recap, entries: Sequence[HistoryEntry], max_chars: int, *,
                        model: ModelClient, counter: TokenCounter, budget: int, call_index: int,
                        thread_id: str) -> Recap:
    """A model's summary of the previous recap and the steps, sent within ``budget`` tokens.

    The prompt gives the previous recap, then the steps (oldest first), chosen newest first
    while they fit: at RECENT, and once one does not fit at RECENT, it and every older step at
    GIST. A step that does not fit even at GIST, and every step before it, are given as merged
    range lines (:mod:`._layer`) instead of vanishing; room for the shortest of them is kept
    while steps are chosen, and they shrink until the whole fits.

    An answer is never discarded: past ``max_chars`` the model is asked once more, with its
    answer, to shorten it (call ``call_index + 1``); what is still too long is cut at the last
    sentence end within the limit (else line end, else word). A blank answer gives way to the
    range lines of the steps. The data counts the model's calls (``call_index`` plus those
    made), so a maintainer that restarts asks for the same turns.

    Raises:
        ModelError: The first call failed (the maintainer then extracts instead).
    """
    extracted = simple_extract(previous, entries, max_chars)
    body = _prompt_body(previous.text, steps_of(entries), counter, budget, max_chars)
    system = ChatMessage(Role.SYSTEM, SUMMARY_PROMPT.format(max_chars=max_chars))
    reply = await model.complete(ModelRequest((system, ChatMessage(Role.USER, body)), (), call_index, thread_id))
    text, calls = reply.text.strip(), 1
    if not text:
        text = extracted.text
    elif len(text) > max_chars:
        calls = 2
        ask = SHORTEN_PROMPT.format(max_chars=max_chars, length=len(text)) + "\n\n" + text
        try:
            shorter = (await model.complete(ModelRequest((ChatMessage(Role.USER, ask),), (), call_index + 1,
                                                         thread_id))).text.strip()
        except ModelError:
            shorter = ""  # the first answer is still there to cut
        if shorter and len(shorter) < len(text):
            text = shorter
        text = cut_at_boundary(text, max_chars)
    layer = Layer.load(extracted.data)
    layer.model_calls = call_index + calls
    return Recap(text, layer.dump())


def _prompt_body(previous: str, steps: list[list[HistoryEntry]], counter: TokenCounter, budget: int,
                 max_chars: int) -> str:
    """The user message of a summary request: at most ``budget`` tokens unless the previous
    recap and the shortest range line of the steps alone are more (see :func:`model_summary`).

    Each step is tried in the whole body it would make, with the shortest range line the steps
    before it would need (:func:`_shortest`): counting the parts apart would miss what joining
    them costs. The range lines then shrink from ``max_chars`` until they fit, at worst to
    that shortest line, which was counted in: the body fits.
    """
    texts: list[str] = []
    detailed = True
    given = len(steps)  # steps[given:] are given as they are; the older ones as range lines
    for i in range(len(steps) - 1, -1, -1):  # newest first: the budget keeps the most recent detail
        for level in ((Level.RECENT, Level.GIST) if detailed else (Level.GIST,)):
            text = _step_text(steps[i], level)
            if counter.count(_body(previous, _shortest(steps[:i]), [text, *texts])) <= budget:
                break
            detailed = False  # older steps get their gist only
        else:
            break  # not even the gist fits: this step and the older ones are given merged
        texts.insert(0, text)
        given = i
    chars = max_chars
    while True:
        merged = _merged(steps[:given], chars) if chars > _MERGED_FLOOR else _shortest(steps[:given])
        body = _body(previous, merged, texts)
        if counter.count(body) <= budget or not merged or chars <= _MERGED_FLOOR:
            return body
        chars //= 2


def _merged(steps: list[list[HistoryEntry]], max_chars: int) -> str:
    """The range lines of ``steps`` within about ``max_chars`` (never less than one line)."""
    return simple_extract(Recap(), [e for step in steps for e in step], max_chars).text if steps else ""


def _shortest(steps: list[list[HistoryEntry]]) -> str:
    """The shortest line standing for ``steps``: their ids and how many (``""`` for none)."""
    if not steps:
        return ""
    return f"- {steps[0][0].id}–{steps[-1][0].id} ({len(steps)} steps)" if len(steps) > 1 else \
        f"- {steps[0][0].id} (1 step)"


def _body(previous: str, merged: str, texts: list[str]) -> str:
    parts = []
    if previous:
        parts.append(f"Previous recap:\n{previous}")
    if merged:
        parts.append(f"Earlier steps, merged:\n{merged}")
    parts.append("Steps:\n" + "\n\n".join(texts))
    return "\n\n".join(parts)


def _step_text(step: list[HistoryEntry], level: Level) -> str:
    """A step as the model is shown it at ``level``: each entry's text, an output's calls, the results."""
    lines = []
    for e in step:
        lines.append(f"[{e.id}] {e.content.at(level).text}".rstrip())
        if isinstance(e, ModelOutputEntry):
            lines += [f"called {c.name} {c.arguments}" for c in e.calls_at(level)]
        elif isinstance(e, ToolResultsEntry):
            lines += [f"{r.name} {r.status.value}: {r.content.at(level).text}" for r in e.results]
    return "\n".join(lines)
