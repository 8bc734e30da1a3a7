from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import quicktok
from hypothesis import given, settings
from hypothesis import strategies as st

from livecontext.protocol import Content, LevelText
from livecontext.runtime import UsageError
from livecontext.runtime.tokens import (
    BUNDLED_ENCODINGS,
    CACHED_COUNTS,
    CACHED_TEXT_CHARS,
    DEFAULT_ENCODING,
    MESSAGE_OVERHEAD_TOKENS,
    TOKENIZER_ENV_VAR,
    TokenCounter,
)


def test_the_default_encoding_is_cl100k_and_counts_hello_world_as_two_tokens() -> None:
    counter = TokenCounter()
    assert counter.encoding == DEFAULT_ENCODING == "cl100k_base"
    assert counter.count("hello world") == 2


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("hello world", 2), ("The quick brown fox", 4), ("你好，世界", 6)],
)
def test_known_strings_have_their_known_cl100k_counts(text: str, tokens: int) -> None:
    assert TokenCounter("cl100k_base").count(text) == tokens


@pytest.mark.parametrize("encoding", BUNDLED_ENCODINGS)
def test_counts_match_the_length_of_quicktoks_encoding_for_every_bundled_encoding(
    encoding: str,
) -> None:
    counter = TokenCounter(encoding)
    texts = ["hello world", "def f(x):\n    return x * 2\n", "naïve café — 東京", "a" * 500]
    enc = quicktok.get_encoding(encoding)
    assert [counter.count(t) for t in texts] == [len(enc.encode(t)) for t in texts]


def test_special_token_text_is_counted_as_ordinary_text_instead_of_raising() -> None:
    assert TokenCounter().count("<|endoftext|>") == 7


def test_counting_works_with_the_network_off() -> None:
    # A fresh interpreter whose sockets all fail: loading the encoding must not need them.
    script = textwrap.dedent(
        """
        import socket

        def refuse(*args, **kwargs):
            raise OSError("network is off")

        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse

        from livecontext.runtime.tokens import TokenCounter

        print(TokenCounter("o200k_base").count("hello world"), TokenCounter().count("hello world"))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "2"]


def test_an_unknown_encoding_is_a_usage_error_listing_the_bundled_ones() -> None:
    with pytest.raises(
        UsageError,
        match=(
            r"^unknown tokenizer encoding 'gpt2': choose one of cl100k_base, o200k_base, "
            r"o200k_harmony, llama3, qwen3 \(pass encoding=\.\.\. or set LIVECONTEXT_TOKENIZER\)$"
        ),
    ):
        TokenCounter("gpt2")


def test_from_env_uses_the_encoding_named_by_the_environment_variable() -> None:
    assert TokenCounter.from_env({TOKENIZER_ENV_VAR: "o200k_base"}).encoding == "o200k_base"


def test_from_env_falls_back_to_the_default_when_the_variable_is_unset_or_blank() -> None:
    assert TokenCounter.from_env({}).encoding == DEFAULT_ENCODING
    assert TokenCounter.from_env({TOKENIZER_ENV_VAR: "  "}).encoding == DEFAULT_ENCODING


def test_from_env_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKENIZER_ENV_VAR, "qwen3")
    assert TokenCounter.from_env().encoding == "qwen3"


def test_from_env_with_an_unknown_encoding_names_the_variable_and_the_choices() -> None:
    with pytest.raises(
        UsageError,
        match=(
            r"^LIVECONTEXT_TOKENIZER='nope' is not a known tokenizer encoding: set it to one of "
            r"cl100k_base, o200k_base, o200k_harmony, llama3, qwen3, or unset it to use "
            r"cl100k_base$"
        ),
    ):
        TokenCounter.from_env({TOKENIZER_ENV_VAR: "nope"})


def test_content_holds_each_level_with_its_token_count() -> None:
    counter = TokenCounter()
    content = counter.content("hello world", "The quick brown fox", "")
    assert content == Content(
        live=LevelText("hello world", 2),
        recent=LevelText("The quick brown fox", 4),
        gist=LevelText("", 0),
    )


def _spied(monkeypatch: pytest.MonkeyPatch) -> tuple[TokenCounter, list[str]]:
    """A counter that records the texts it counts (in order)."""
    counter = TokenCounter()
    counted: list[str] = []
    real_count = counter.count

    def spy(text: str) -> int:
        counted.append(text)
        return real_count(text)

    monkeypatch.setattr(counter, "count", spy)
    return counter, counted


def test_content_counts_a_text_shared_by_several_levels_only_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter, counted = _spied(monkeypatch)
    content = counter.content("same text", "same text", "gist")
    assert counted == ["same text", "gist"]
    assert content.live == content.recent == LevelText("same text", 2)


def test_message_overhead_is_four_tokens_per_message() -> None:
    assert MESSAGE_OVERHEAD_TOKENS == 4


def test_a_counter_shows_its_encoding_in_its_repr() -> None:
    assert repr(TokenCounter("llama3")) == "TokenCounter(encoding='llama3')"


_LEVEL_TEXTS = ["", "hello world", "The quick brown fox", "gist: one line", "é ü 漢字"]


@pytest.mark.parametrize("live", _LEVEL_TEXTS)
@pytest.mark.parametrize("recent", _LEVEL_TEXTS)
@pytest.mark.parametrize("gist", _LEVEL_TEXTS)
def test_content_gives_every_level_its_text_and_count_counting_each_distinct_text_once(
    live: str, recent: str, gist: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter, counted = _spied(monkeypatch)
    content = counter.content(live, recent, gist)
    real_count = TokenCounter().count
    assert content == Content(LevelText(live, real_count(live)), LevelText(recent, real_count(recent)),
                              LevelText(gist, real_count(gist)))
    assert counted == list(dict.fromkeys([live, recent, gist]))


class _CountingTokenizer:
    """Stands in for quicktok's tokenizer and records what it is asked to count."""

    def __init__(self, real: object) -> None:
        self.real = real
        self.asked: list[str] = []

    def count(self, text: str) -> int:
        self.asked.append(text)
        return self.real.count(text)  # type: ignore[attr-defined]


def _with_counting_tokenizer() -> tuple[TokenCounter, _CountingTokenizer]:
    counter = TokenCounter()
    tokenizer = _CountingTokenizer(counter._tokenizer)
    counter._tokenizer = tokenizer
    return counter, tokenizer


def test_a_short_text_counted_again_is_not_tokenized_again() -> None:
    counter, tokenizer = _with_counting_tokenizer()
    assert [counter.count("hello world") for _ in range(3)] == [2, 2, 2]
    assert tokenizer.asked == ["hello world"]


def test_a_text_longer_than_the_cached_length_is_tokenized_every_time() -> None:
    counter, tokenizer = _with_counting_tokenizer()
    long_text = "word " * (CACHED_TEXT_CHARS // 5 + 1)
    assert len(long_text) > CACHED_TEXT_CHARS
    first, second = counter.count(long_text), counter.count(long_text)
    assert first == second == len(quicktok.get_encoding("cl100k_base").encode(long_text))
    assert tokenizer.asked == [long_text, long_text]


def test_the_counter_keeps_at_most_its_cached_number_of_counts_dropping_the_least_recent() -> None:
    counter, tokenizer = _with_counting_tokenizer()
    texts = [f"text {i}" for i in range(CACHED_COUNTS + 1)]
    for text in texts:
        counter.count(text)
    tokenizer.asked.clear()
    counter.count(texts[-1])  # kept
    counter.count(texts[0])  # the least recently used: dropped when the last one came in
    assert tokenizer.asked == [texts[0]]


def test_a_value_that_is_not_text_is_still_refused_by_the_tokenizer_with_its_own_error() -> None:
    with pytest.raises(TypeError, match="incompatible function arguments"):
        TokenCounter().count(["not", "text"])  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=30))
def test_remembered_counts_always_equal_a_fresh_tokenization(texts: list[str]) -> None:
    counter = TokenCounter()
    encoding = quicktok.get_encoding("cl100k_base")
    for text in texts + texts[::-1]:
        assert counter.count(text) == len(encoding.encode(text))
