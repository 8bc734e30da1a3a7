"""A model that answers from a script: deterministic, offline, for demos and tests."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from trio import sleep

from livecontext.protocol.history import ModelReply, ModelRequest, ToolCall

from .. import UsageError
from ._client import ModelClient, TextCallback, stream_in_pieces
from ._errors import FailureKind, ScriptExhaustedError, TransientModelError, UnusedTurnsError
from ._script import Script, load_script, parse_script


class ScriptedModel(ModelClient):
    """Answers the call whose ``call_index`` is ``k`` with turn ``k`` of a script.

    Because the turn is chosen by the request's ``call_index`` (how many model outputs the
    thread has recorded) and not by how many calls this instance saw, a thread resumed after a
    restart gets the same answers it would have got without one. Tool call ids are
    deterministic too: ``call_<call_index>_<position>``.

    A turn can fail its first attempts on purpose (``"fail": {"error": "rate_limit",
    "times": 2}``) to exercise retries; attempts are counted per ``call_index`` by this
    instance. A turn can also take time (``"delay_s"``): a cancellable ``trio.sleep``, on Trio's
    clock (a ``MockClock`` makes it instant in tests).

    Tests should end with :meth:`check_all_used`: a script with turns left over usually means
    the agent stopped earlier than the test meant it to.

    Build one with :meth:`from_file` or :meth:`from_turns`.
    """

    def __init__(self, script: Script, *, name: str, source: str) -> None:
        self.name = name
        self.source = source
        """The script's file, or the name of an in-code script: errors name it."""
        self._turns = script.turns
        self._attempts: dict[int, int] = {}
        self._answered: set[int] = set()

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ScriptedModel:
        """Load the script in the JSON file at ``path``.

        Raises:
            ScriptError: The file is missing, is not JSON, or has the wrong shape; the
                message names the file and what is wrong.
        """
        source = os.fspath(path)
        return cls(load_script(source), name=f"scripted:{source}", source=source)

    @classmethod
    def from_turns(cls, turns: Sequence[Mapping[str, Any]], *, name: str = "inline") -> ScriptedModel:
        """Build a script in code: ``turns`` are the turn objects a script file would hold.

        Raises:
            ScriptError: A turn has the wrong shape.
        """
        script = parse_script({"turns": [dict(turn) for turn in turns]}, name)
        return cls(script, name=f"scripted:{name}", source=name)

    @property
    def turn_count(self) -> int:
        """How many turns the script has."""
        return len(self._turns)

    def attempts(self, call_index: int) -> int:
        """How many attempts were made at turn ``call_index`` (failed ones included)."""
        return self._attempts.get(call_index, 0)

    def unused_turns(self) -> tuple[int, ...]:
        """The indices of the turns never answered, in order."""
        return tuple(i for i in range(len(self._turns)) if i not in self._answered)

    def check_all_used(self) -> None:
        """Complain if some turns were never answered.

        Raises:
            UnusedTurnsError: Some turns were never answered; the message lists them.
        """
        unused = self.unused_turns()
        if unused:
            raise UnusedTurnsError(self.source, unused)

    async def complete(self, request: ModelRequest, on_text: TextCallback | None = None) -> ModelReply:
        """Answer with turn ``request.call_index``, or fail as that turn says.

        Raises:
            TransientModelError: The turn's ``fail`` asks for this attempt to fail.
            ScriptExhaustedError: The script has no turn ``request.call_index``.
            UsageError: ``request.call_index`` is negative.
        """
        index = request.call_index
        if index < 0:
            raise UsageError(f"call_index must be 0 or more, got {index}")
        if index >= len(self._turns):
            # this instance answered no earlier turn: the thread was resumed past them
            used_before = not any(i < index for i in self._answered)
            raise ScriptExhaustedError(index, len(self._turns), self.source, thread_id=request.thread_id,
                                       used_before=used_before)
        turn = self._turns[index]
        attempt = self._attempts[index] = self._attempts.get(index, 0) + 1
        if turn.fail is not None and attempt <= turn.fail.times:
            raise TransientModelError(
                FailureKind(turn.fail.error),
                f"scripted failure {attempt} of {turn.fail.times} for turn {index}",
            )
        if turn.delay_s and (turn.delay_times is None or attempt <= turn.delay_times):
            await sleep(turn.delay_s)
        await stream_in_pieces(turn.text, on_text, checkpointed=bool(turn.delay_s))
        tool_calls = tuple(
            ToolCall(id=f"call_{index}_{position}", name=call.name, arguments=call.arguments_json())
            for position, call in enumerate(turn.tool_calls)
        )
        self._answered.add(index)
        return ModelReply(text=turn.text, tool_calls=tool_calls, model="scripted")
