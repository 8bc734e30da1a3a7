"""One thread-id rule (:func:`livecontext.protocol.kernel.thread_id_problem`) for the two layers that
check ids: an agent runs only in a thread its actors can be named after; a store holds more,
and keeps opening every thread it was ever given."""

from __future__ import annotations

import pytest

from livecontext.actors import check_thread_id, parent_thread_id, sub_thread_id
from livecontext.runtime import UsageError
from livecontext.runtime.persistence import InvalidThreadIdError, open_store

_AGENT_RULE = (r"use 1-128 letters, digits and _ \. : @ \+ - for an agent's thread, optionally after one "
               r"NAMESPACE/ of 1-64 of them \(not sub/; a sub-agent's: PARENT/sub/NAME, at most 200 characters in all\)$")


def test_an_agent_thread_id_outside_the_naming_rule_is_refused_saying_what_to_use() -> None:
    with pytest.raises(UsageError, match=r"^invalid thread id 'my thread': " + _AGENT_RULE):
        check_thread_id("my thread")


def test_an_agent_thread_id_too_long_for_any_store_is_refused_saying_how_long() -> None:
    with pytest.raises(UsageError, match=r"^invalid thread id 'x+': use 1 to 200 characters$"):
        check_thread_id("x" * 201)


def test_a_sub_agent_thread_is_its_parents_with_sub_and_its_name() -> None:
    thread_id = sub_thread_id("main", "helper")
    assert thread_id == check_thread_id("main/sub/helper")
    assert parent_thread_id(thread_id) == "main"
    with pytest.raises(UsageError, match=r"^invalid thread id 'main/sub/a b': " + _AGENT_RULE):
        sub_thread_id("main", "a b")


def test_a_namespaced_thread_has_sub_agents_under_it_and_no_parent_itself() -> None:
    assert check_thread_id("batch/t1") == "batch/t1"
    assert sub_thread_id("batch/t1", "helper") == "batch/t1/sub/helper"
    assert parent_thread_id("batch/t1/sub/helper") == "batch/t1"
    assert parent_thread_id("batch/t1") is None
    assert parent_thread_id("a/sub/b") == "a"  # (still sub-agent b of a, not thread b of namespace a)
    with pytest.raises(UsageError, match=r"^invalid thread id 'a/b/c': " + _AGENT_RULE):
        check_thread_id("a/b/c")


async def test_a_store_keeps_holding_a_thread_no_agent_could_run_in() -> None:
    # a thread written through the store's own API (as any release let it): its id is fine
    # for a log, and the store must keep opening it, though no agent can be named after it
    async with await open_store("memory:") as store:
        async with await store.open_thread("my thread", owner="me"):
            pass
        assert await store.exists("my thread")
        with pytest.raises(UsageError):
            check_thread_id("my thread")


async def test_a_store_refuses_a_thread_id_with_a_control_character_with_the_same_words() -> None:
    async with await open_store("memory:") as store:
        with pytest.raises(InvalidThreadIdError, match=r"^invalid thread id 'a\\nb': control characters are not allowed$"):
            await store.exists("a\nb")
    with pytest.raises(UsageError, match=r"^invalid thread id 'a\\nb': control characters are not allowed$"):
        check_thread_id("a\nb")
