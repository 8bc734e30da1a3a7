"""The context-quality benchmark's transcript generator (``benchmarks/transcripts.py``)."""

from __future__ import annotations

import functools

import pytest

from benchmarks.transcripts import STEPS, WHOLE_TOKENS, Transcript, generate
from livecontext.runtime.tokens import TokenCounter


@functools.cache
def count(text: str) -> int:
    return _counter().count(text)


@functools.cache
def _counter() -> TokenCounter:
    return TokenCounter()


@functools.cache
def transcript(seed: str, steps: int | None = None) -> Transcript:
    return generate(seed, steps=steps, count=count)


def test_the_same_seed_gives_the_same_transcript_and_another_seed_another() -> None:
    first = transcript("a", 60)
    again = generate("a", steps=60, count=count)
    assert again == first
    assert again.turns() == first.turns()
    assert generate("b", steps=60, count=count).task != first.task


@pytest.mark.parametrize(("seed", "steps"), [("s1", STEPS[0]), ("s2", 90), ("s3", STEPS[1]), ("s4", None)])
def test_steps_tokens_and_outputs_fall_in_the_stated_ranges(seed: str, steps: int | None) -> None:
    t = transcript(seed, steps)
    assert STEPS[0] <= len(t.steps) <= STEPS[1]
    assert WHOLE_TOKENS[0] <= t.whole_tokens(count) <= WHOLE_TOKENS[1]
    assert 200 <= count(t.task) <= 800  # a few hundred tokens, with a traceback and a snippet
    assert "Traceback (most recent call last):" in t.task and "```python" in t.task
    outputs = sorted(count(c.output) for c in t.calls())
    assert outputs[0] <= 10 and outputs[-1] <= 6000  # from a line (or nothing) to a few thousand
    assert sum(1 for n in outputs if n > 3000) <= 4  # up to ~3,000 tokens, a few larger
    assert t.turns()[-1] == {"text": t.final}  # the answer calls no tool
    assert all(s.thought and s.calls for s in t.steps)


def test_heredoc_arguments_of_a_thousand_tokens_and_more_occur() -> None:
    for seed in ("s1", "s2", "s3"):
        heredocs = [c for c in transcript(seed, {"s1": 40, "s2": 90, "s3": 140}[seed]).calls()
                    if c.name == "bash" and "<<'EOF'" in c.arguments["command"]]
        assert max(count(c.arguments_json()) for c in heredocs) >= 1000


def test_the_ground_truth_agrees_with_the_outputs() -> None:
    t = transcript("s2", 90)
    for error in t.errors:
        shown = t.steps[error.appeared]
        assert error.id in shown.errors
        assert any(error.line in c.output for c in shown.calls)
        if error.fixed is not None:
            assert error.appeared < error.fixed and t.steps[error.fixed].edited
    assert [e.id for e in t.errors][0] == "E1" and t.errors[0].fixed is not None
    edited = {p for s in t.steps for p in s.edited}
    assert "reproduce.py" in edited and any(p.startswith("src/") for p in edited)
    assert any(p.startswith("tests/") and p.endswith("_regression.py") for p in edited)


def test_every_tool_kind_of_a_coding_session_occurs() -> None:
    commands = [c.arguments.get("command", "") for seed in ("s2", "s3") for c in transcript(
        seed, {"s2": 90, "s3": 140}[seed]).calls()]
    for start in ("ls", "find ", "grep -rn", "python -m pytest", "cat > ", "python reproduce.py", "git diff",
                  "view", "str_replace"):
        assert any(c.startswith(start) for c in commands), start
    assert any(c.startswith(("cat -n", "sed -n")) for c in commands)
