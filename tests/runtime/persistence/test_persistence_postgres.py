"""The PostgreSQL store: what a bad connection says (one line each), the lease fenced inside
every append (two writers on one database), and the schema shared by two stores."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
import trio

from livecontext.runtime.persistence import (
    LeaseLostError,
    NewRecord,
    StoreOpenError,
    ThreadLockedError,
    open_store,
)
from tests.support.postgres import PASSWORD, PASSWORD_USER, Cluster, free_port


def _records(n: int) -> list[NewRecord]:
    now = dt.datetime(2025, 1, 2, tzinfo=dt.timezone.utc)
    return [NewRecord(sender="w", sent_at=now, sent_mono_ns=i, kind="entry", payload=json.dumps({"i": i}))
            for i in range(n)]


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text
    return text


async def test_an_unreachable_server_is_one_line_naming_its_host_and_port() -> None:
    port = free_port()
    with pytest.raises(StoreOpenError) as info:
        await open_store(f"postgresql://someone@127.0.0.1:{port}/db")
    text = _one_line(info.value)
    assert f"cannot reach PostgreSQL at 127.0.0.1:{port}" in text
    assert "start the server" in text


async def test_a_wrong_password_is_one_line_that_does_not_show_it(postgres_cluster: Cluster) -> None:
    url = postgres_cluster.url("postgres", PASSWORD_USER, "wrong-one")
    with pytest.raises(StoreOpenError) as info:
        await open_store(url)
    text = _one_line(info.value)
    assert f"PostgreSQL refused the password of user '{PASSWORD_USER}'" in text
    assert "wrong-one" not in text


async def test_the_right_password_opens_the_store(postgres_cluster: Cluster, postgres_url: str) -> None:
    database = postgres_url.rsplit("/", 1)[1]
    postgres_cluster.sql(f"GRANT ALL ON DATABASE {database} TO {PASSWORD_USER}")
    postgres_cluster.sql(f"ALTER DATABASE {database} OWNER TO {PASSWORD_USER}")
    async with await open_store(postgres_cluster.url(database, PASSWORD_USER, PASSWORD)) as store:
        assert PASSWORD not in store.url
        assert await store.threads() == []


async def test_a_missing_database_is_one_line_naming_it(postgres_cluster: Cluster) -> None:
    with pytest.raises(StoreOpenError) as info:
        await open_store(postgres_cluster.url("no_such_db"))
    text = _one_line(info.value)
    assert f"PostgreSQL at 127.0.0.1:{postgres_cluster.port} has no database 'no_such_db'" in text
    assert "createdb" in text


async def test_a_missing_role_is_one_line_naming_it_and_how_to_make_it(postgres_cluster: Cluster) -> None:
    with pytest.raises(StoreOpenError) as info:
        await open_store(postgres_cluster.url("postgres", "no_such_role"))
    text = _one_line(info.value)
    assert f"PostgreSQL at 127.0.0.1:{postgres_cluster.port} has no role 'no_such_role'" in text
    assert f"createuser -h 127.0.0.1 -p {postgres_cluster.port} no_such_role" in text
    assert "choose a path you can write to" not in text


async def test_a_url_libpq_cannot_read_is_one_line_saying_how_to_write_it() -> None:
    with pytest.raises(StoreOpenError, match=re.escape(
            'cannot open the store at postgresql://lc@[::1:5432/runs: not a PostgreSQL URL (end of string reached '
            'when looking for matching "]" in IPv6 host address in URI: "postgresql://lc@[::1:5432/runs"); write '
            "it as postgresql://USER@HOST:PORT/DATABASE ([::1] for an IPv6 host)")):
        await open_store("postgresql://lc@[::1:5432/runs")


async def test_a_second_writer_of_a_live_holder_is_refused(postgres_url: str) -> None:
    async with await open_store(postgres_url) as one, await open_store(postgres_url) as two:
        async with await one.open_thread("t", owner="first"):
            with pytest.raises(ThreadLockedError, match="'first'"):
                await two.open_thread("t", owner="second")


async def test_a_writer_that_lost_its_lease_appends_nothing(
    postgres_cluster: Cluster, postgres_url: str
) -> None:
    async with await open_store(postgres_url) as one, await open_store(postgres_url) as two:
        first = await one.open_thread("t", owner="first")
        await first.append(_records(2))
        # the first holder looks dead (another host, not renewed for longer than the TTL)
        database = postgres_url.rsplit("/", 1)[1]
        with psycopg.connect(postgres_cluster.url(database), autocommit=True) as conn:
            conn.execute("UPDATE leases SET host = 'elsewhere', renewed_at = 0 WHERE thread_id = 't'")
        second = await two.open_thread("t", owner="second")
        with pytest.raises(LeaseLostError):
            await first.append(_records(1))
        await second.append(_records(1))
        async with await two.open_reader("t") as reader:
            assert [r.sender for r in await reader.read()] == ["w", "w", "w"]
            assert await reader.last_seq() == 3
        await second.aclose()
        await first.aclose()


async def test_two_stores_opening_a_new_database_at_once_share_one_schema(postgres_url: str) -> None:
    stores = []

    async def open_one() -> None:
        stores.append(await open_store(postgres_url))

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(open_one)
    for index, store in enumerate(stores):
        async with store, await store.open_thread(f"t{index}", owner="o") as log:
            await log.append(_records(1))
    async with await open_store(postgres_url) as store:
        assert [t.thread_id for t in await store.threads()] == ["t0", "t1", "t2"]


def test_without_psycopg_the_package_works_and_a_postgresql_url_says_what_to_install(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None; sys.modules['psycopg_pool'] = None\n"
        "import trio, livecontext\n"
        "from livecontext.runtime.persistence import open_store, StoreOpenError\n"
        "async def main():\n"
        f"    async with await open_store('sqlite:{tmp_path}/s.db') as store:\n"
        "        print(len(await store.threads()))\n"
        "    try:\n"
        "        await open_store('postgresql://u@127.0.0.1:1/db')\n"
        "    except StoreOpenError as exc:\n"
        "        print(exc)\n"
        "trio.run(main)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.splitlines()[0] == "0"
    assert "psycopg is not installed" in out and "pip install 'livecontext[postgres]'" in out
