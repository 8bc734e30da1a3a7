from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from livecontext.protocol.kernel import (
    MAX_THREAD_ID,
    ActorId,
    Topic,
    format_message_id,
    message_id_time_ns,
    thread_id_problem,
)

_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:@+-"
_PART = st.text(alphabet=_ALPHABET, min_size=1, max_size=20)
_NS = st.integers(min_value=0, max_value=2**64 - 1)
_COUNTER = st.integers(min_value=0, max_value=2**32 - 1)
_NODE = st.integers(min_value=0, max_value=2**16 - 1)


def test_an_actor_id_is_written_kind_slash_name() -> None:
    assert str(ActorId("engine", "main")) == "engine/main"


@given(_PART, _PART)
def test_an_actor_id_parses_back_from_its_text(kind: str, name: str) -> None:
    aid = ActorId(kind, name)
    assert ActorId.parse(str(aid)) == aid


def test_parsing_text_without_a_slash_is_refused() -> None:
    with pytest.raises(ValueError, match=r"invalid ActorId 'engine': expected 'kind/name'"):
        ActorId.parse("engine")


@pytest.mark.parametrize("kind,name", [("", "main"), ("engine", ""), ("a b", "main"), ("a/b", "main"),
                                       ("engine", "x//y"), ("engine", "/x"), ("engine", "x/")])
def test_an_actor_id_part_that_is_empty_or_has_a_space_or_a_stray_slash_is_refused(kind: str, name: str) -> None:
    with pytest.raises(ValueError, match=r"invalid ActorId (kind|name) .*no spaces, not empty"):
        ActorId(kind, name)


def test_a_name_may_hold_slashes_between_parts_and_parses_back_at_the_first_slash() -> None:
    aid = ActorId("engine", "main/sub/call_1_0")
    assert str(aid) == "engine/main/sub/call_1_0"
    assert ActorId.parse(str(aid)) == aid


def test_actor_ids_compare_by_kind_then_name() -> None:
    assert sorted([ActorId("b", "a"), ActorId("a", "z"), ActorId("a", "b")]) == [
        ActorId("a", "b"), ActorId("a", "z"), ActorId("b", "a"),
    ]


def test_a_topic_is_written_with_a_hash() -> None:
    assert str(Topic("history.changes")) == "#history.changes"


@given(_NS, _COUNTER, _NODE)
def test_a_message_id_keeps_the_time_it_was_made_at(ns: int, counter: int, node: int) -> None:
    assert message_id_time_ns(format_message_id(ns, counter, node)) == ns


@given(_NS, _NS, _COUNTER, _COUNTER, _NODE, _NODE)
def test_message_ids_sort_by_time(t1: int, t2: int, c1: int, c2: int, n1: int, n2: int) -> None:
    a, b = format_message_id(t1, c1, n1), format_message_id(t2, c2, n2)
    if t1 < t2:
        assert a < b
    elif t1 > t2:
        assert a > b


@given(_NS, _COUNTER, _COUNTER, _NODE)
def test_message_ids_made_in_the_same_nanosecond_by_one_runtime_sort_by_counter(
    ns: int, c1: int, c2: int, node: int
) -> None:
    a, b = format_message_id(ns, c1, node), format_message_id(ns, c2, node)
    assert (a < b) == (c1 < c2)
    assert (a == b) == (c1 == c2)


def test_message_ids_of_two_runtimes_differ_even_at_the_same_time_and_count() -> None:
    assert format_message_id(123, 1, 1) != format_message_id(123, 1, 2)


@given(st.integers(min_value=-(2**70), max_value=2**70), st.integers(min_value=-(2**40), max_value=2**40),
       st.integers(min_value=-(2**20), max_value=2**20))
def test_a_message_id_is_16_hex_digits_of_time_then_4_of_node_and_8_of_counter(
    unix_ns: int, counter: int, node: int
) -> None:
    assert format_message_id(unix_ns, counter, node) == (
        f"{unix_ns:016x}-{node & 0xFFFF:04x}{counter & 0xFFFFFFFF:08x}")


# -- thread ids --------------------------------------------------------------------------------------

_CONTROLS = st.sampled_from([chr(c) for c in range(0x20)] + ["\x7f"])
_STORABLE = st.text(st.characters(exclude_categories=("Cc", "Cs")), min_size=1, max_size=MAX_THREAD_ID)
"""Text a store took in every release: 1-200 characters, no control character, no surrogate."""
_SUB_NAME = st.text(alphabet=_ALPHABET, min_size=1, max_size=64)


@given(_STORABLE)
def test_a_store_holds_every_thread_id_of_1_to_200_characters_without_control_characters(thread_id: str) -> None:
    assert thread_id_problem(thread_id) is None


@given(st.text(max_size=20), _CONTROLS, st.text(max_size=20))
def test_a_thread_id_with_a_control_character_anywhere_is_refused(before: str, control: str, after: str) -> None:
    assert thread_id_problem(before + control + after) == "control characters are not allowed"


@pytest.mark.parametrize("thread_id", ["", "x" * 201, "é" * 201, "x" * 128 + "/sub/" + "y" * 64 + "/sub/z"])
def test_a_thread_id_that_is_empty_or_longer_than_200_characters_is_refused_saying_how_long(thread_id: str) -> None:
    assert thread_id_problem(thread_id) == "use 1 to 200 characters"
    assert thread_id_problem(thread_id, agent=True) == "use 1 to 200 characters"


def test_a_thread_id_that_is_no_text_or_no_utf8_is_refused_saying_so() -> None:
    assert thread_id_problem(b"main") == "expected a str, got bytes"
    assert thread_id_problem("t\udc80") == "it is not valid UTF-8"


_NAMESPACE = st.text(alphabet=_ALPHABET, min_size=1, max_size=64).filter(lambda ns: ns != "sub")
_TOP = st.text(alphabet=_ALPHABET, min_size=1, max_size=60)
@given(st.none() | _NAMESPACE, _TOP, st.lists(_SUB_NAME, max_size=2))
def test_an_agent_runs_in_a_thread_named_by_actor_id_characters_and_its_sub_agents_under_it(
    namespace: str | None, top: str, subs: list[str]
) -> None:
    assume(namespace is None or top != "sub")  # (NS/sub would read as sub-agent 'sub'... of NS)
    thread_id = (f"{namespace}/" if namespace is not None else "") + top + "".join(f"/sub/{name}" for name in subs)
    assert thread_id_problem(thread_id, agent=True) is None
    assert ActorId("history", thread_id).name == thread_id  # (it names the agent's actors)


@pytest.mark.parametrize("thread_id", ["batch/t1", "batch/t1.lead", "a/b/sub/c", "a/b/sub/c/sub/d", "sub/sub/x"])
def test_an_agent_thread_may_have_one_namespace_before_its_name(thread_id: str) -> None:
    assert thread_id_problem(thread_id, agent=True) is None


def test_a_sub_mark_right_after_the_first_name_still_names_a_sub_agent_not_a_namespace() -> None:
    # (``a/sub/b`` is sub-agent b of a: so ``sub`` is refused as a namespace, and as the name after one)
    assert thread_id_problem("a/sub/b", agent=True) is None
    assert thread_id_problem("sub/b", agent=True) is not None
    assert thread_id_problem("a/sub", agent=True) is not None


@pytest.mark.parametrize("thread_id", ["a b", "x" * 129, "a/b/c", "sub/x", "a/sub", "a/sub/sub/b", "x" * 65 + "/y",
                                       "/a", "a/", "main/sub/", "main/sub/" + "x" * 65, "é", "main/sub/a b"])
def test_an_agent_thread_id_outside_the_naming_rule_is_refused_saying_what_to_use(thread_id: str) -> None:
    problem = thread_id_problem(thread_id, agent=True)
    assert problem is not None and problem.startswith("use 1-128 letters, digits and _ . : @ + - for an agent's thread")
    assert thread_id_problem(thread_id) is None  # (a store still holds it)


@given(st.text(max_size=210) | st.text(alphabet=_ALPHABET + "/", max_size=210)
       | st.lists(st.sampled_from(["a", "sub", "b.c", "x" * 64, "x" * 65, ""]), max_size=6).map("/".join))
def test_every_thread_id_an_agent_runs_in_is_one_a_store_holds(thread_id: str) -> None:
    if thread_id_problem(thread_id, agent=True) is None:
        assert thread_id_problem(thread_id) is None
