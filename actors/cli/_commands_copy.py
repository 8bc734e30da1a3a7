"""``livecontext copy``: what can be read of a store, copied into a new one.

What to do with a damaged store when there is no backup: copy it. Each thread is copied as
it was recorded (the same log, not a replay) up to its first record that cannot be read;
the target is a new store of any backend. See :mod:`livecontext.runtime.persistence._copy`.
"""

from __future__ import annotations

import click

from livecontext.runtime import LivecontextError, UsageError
from livecontext.runtime.persistence import StoreCorruptError, ThreadCopy, ThreadInfo, copy_thread, open_store

from ..agent import open_existing_store
from ._commands_store import ThreadMissingError
from ._main import main, run_async, store_option


class TargetNotEmptyError(UsageError):
    """``copy --to`` named a store that already holds threads (nothing is written there)."""

    def __init__(self, url: str, threads: list[ThreadInfo]) -> None:
        self.url = url
        self.threads = tuple(t.thread_id for t in threads)
        named = ", ".join(self.threads[:3]) + (", …" if len(self.threads) > 3 else "")
        super().__init__(f"the store {url} already holds {len(self.threads)} thread(s) ({named}); "
                         "copy into a store that does not exist yet, or an empty one: nothing was written")


class ThreadListDamagedError(LivecontextError):
    """The source store's list of threads cannot be read: there is nothing to copy from."""

    def __init__(self, url: str, detail: str) -> None:
        self.url = url
        self.detail = detail
        super().__init__(f"the store {url} cannot list its threads: its file is damaged where the list is kept "
                         f"({' '.join(detail.split())}); nothing was copied; restore it from a backup")


@main.command("copy")
@store_option
@click.option("--to", "target_url", required=True, metavar="URL",
              help="The new store to copy into (it must not exist yet, or be empty): sqlite:PATH, jsonl:DIR "
                   "or postgresql://USER@HOST:PORT/DB.")
@click.option("--thread", "thread_ids", multiple=True, metavar="ID",
              help="Copy only this thread (repeat for more; default: every thread).")
def copy_cmd(store_url: str, target_url: str, thread_ids: tuple[str, ...]) -> None:
    """Copy what can be read of a store into a new store (of any backend): what to do with
    a damaged store that has no backup.

    Each thread is copied as it was recorded, with its creation time and fork link: every
    record as stored (seqs, senders, times, system seqs), up to its first record that cannot
    be read; a thread does not go on past a hole. Snapshots are not copied (the state is
    rebuilt from the records). One line per thread, then a summary; exit 1 if anything was
    left behind.
    """
    async def go() -> list[ThreadCopy]:
        if target_url.strip().lower().startswith("memory:"):
            raise UsageError("a copy into memory: is gone when the command ends; copy --to sqlite:PATH, "
                             "jsonl:DIR or postgresql://USER@HOST:PORT/DB")
        source = await open_existing_store(store_url)
        async with source:
            try:
                infos = await source.threads()
            except StoreCorruptError as exc:
                raise ThreadListDamagedError(store_url, exc.detail) from None
            known = {info.thread_id for info in infos}
            for thread_id in thread_ids:
                if thread_id not in known:
                    raise ThreadMissingError(thread_id, store_url)
            if thread_ids:
                infos = [info for info in infos if info.thread_id in thread_ids]
            target = await open_store(target_url)
            async with target:
                held = await target.threads()
                if held:
                    raise TargetNotEmptyError(target_url, held)
                copies = []
                for info in infos:
                    done = await copy_thread(source, info, target)
                    click.echo(done.text)
                    copies.append(done)
        return copies

    copies = run_async(go)
    records = sum(c.copied for c in copies)
    damaged = [c for c in copies if not c.whole]
    click.echo(f"copied {len(copies)} thread(s), {records} record(s) from {store_url} to {target_url}")
    if damaged:
        left = sum(c.left for c in damaged)
        click.echo(f"livecontext: error: {len(damaged)} thread(s) copied only up to their damage, {left} record(s) "
                   f"left behind (the lines above say where); `livecontext audit --store {store_url} --thread T` "
                   "shows what is readable past it", err=True)
        raise SystemExit(1)
