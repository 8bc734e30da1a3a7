"""A snapshot's entries in blocks, one snapshot part each: what lets a snapshot write only
the blocks that changed since the last one, and opening read entries without decoding them.

Entries are grouped by id number (``id_number(entry.id) // BLOCK``); ids increase along a
thread's entry list, so a block is a run of it, an append changes only the last block, and an
edit, fold or removal only the blocks of the entries it touches. A part holds one block:

- a line of JSON: the block's number and its index, one array per column (``ids``, ``kinds``,
  ``folded``, ``tokens``, ``sizes``, ``retention``: what opening needs of an entry without
  decoding it, see :func:`~._state.index_row`) and ``ends``, where each entry's text ends;
- then the entries' JSON texts, one after the other, compressed as one zlib stream (RFC 1950).

Opening reads the index (a few columns per entry) and keeps the stream as it is: a block's
texts are inflated the first time one of its entries is decoded, so a thread opens without
reading most of its entries' text, and the bytes hashed when reading a part are few.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

from livecontext.protocol.history import id_number
from livecontext.protocol.wire import LivecontextError, dump_json, load_json

BLOCK = 256
"""Entry ids per block: a snapshot rewrites at most this many entries per block changed (the
last block, at each snapshot), and a thread of n entries has about n / BLOCK parts."""
LEVEL = 6
"""zlib's level for a block's texts (its default; the work is done off the actor)."""


def block_of(entry_id: str) -> int:
    """The number of the block that the entry with this id belongs to."""
    return id_number(entry_id) // BLOCK


class MalformedPartError(LivecontextError, ValueError):
    """A snapshot part whose bytes hash to its key but do not hold a block (a bug, or a part
    of another format)."""


class Block:
    """One block's entries as a snapshot part holds them: its index, by column, and its texts,
    inflated on first use (a snapshot written before parts gives its entries as one block of
    texts, :meth:`whole`)."""

    __slots__ = ("_ends", "_packed", "_texts", "folded", "ids", "kinds", "number", "retention", "sizes", "tokens")

    def __init__(self, number: int, columns: dict[str, list[Any]], packed: bytes | None,
                 texts: Sequence[str | bytes] | None = None) -> None:
        self.number = number
        self.ids: list[str] = columns["ids"]
        self.kinds: list[str] = columns["kinds"]
        self.folded: list[bool] = columns["folded"]
        self.tokens: list[int] = columns["tokens"]
        self.sizes: list[int] = columns["sizes"]
        self.retention: list[str | None] = columns["retention"]
        self._ends: list[int] = columns.get("ends", [])
        self._packed = packed
        self._texts = texts
        """The entries' texts, once inflated (or given)."""

    @classmethod
    def whole(cls, rows: list[list[Any]], texts: Sequence[str]) -> Block:
        """The entries of a snapshot written before parts: its index rows and texts (rows
        written before retention have five columns)."""
        columns: dict[str, list[Any]] = {"ids": [], "kinds": [], "folded": [], "tokens": [], "sizes": [],
                                         "retention": []}
        for row in rows:
            columns["ids"].append(row[0])
            columns["kinds"].append(row[1])
            columns["folded"].append(row[2])
            columns["tokens"].append(row[3])
            columns["sizes"].append(row[4])
            columns["retention"].append(row[5] if len(row) > 5 else None)
        return cls(-1, columns, None, texts)

    def __len__(self) -> int:
        return len(self.ids)

    def text(self, i: int) -> str | bytes:
        """The JSON text of the block's ``i``-th entry."""
        texts = self._texts
        if texts is None:
            assert self._packed is not None
            data = zlib.decompress(self._packed)
            ends = self._ends
            texts = self._texts = [data[start:end] for start, end in zip([0, *ends], ends)]
        return texts[i]

    def row(self, i: int) -> list[Any]:
        """The index row of the block's ``i``-th entry (see :func:`~._state.index_row`)."""
        return [self.ids[i], self.kinds[i], self.folded[i], self.tokens[i], self.sizes[i], self.retention[i]]


def encode_part(number: int, entries: Sequence[tuple[str | bytes, list[Any]]]) -> bytes:
    """The part of block ``number`` holding ``entries``: each its JSON text and index row."""
    ids, kinds, folded, tokens, sizes, retention, ends = [], [], [], [], [], [], []
    texts = []
    end = 0
    for text, row in entries:
        data = text.encode("utf-8") if isinstance(text, str) else text
        texts.append(data)
        end += len(data)
        ends.append(end)
        ids.append(row[0])
        kinds.append(row[1])
        folded.append(row[2])
        tokens.append(row[3])
        sizes.append(row[4])
        retention.append(row[5])
    head = dump_json({"block": number, "ids": ids, "kinds": kinds, "folded": folded, "tokens": tokens,
                      "sizes": sizes, "retention": retention, "ends": ends})
    return head.encode("utf-8") + b"\n" + zlib.compress(b"".join(texts), LEVEL)


def decode_part(data: bytes) -> Block:
    """The block in a part (its texts still compressed).

    Raises:
        MalformedPartError: the bytes do not hold a block.
    """
    nl = data.find(b"\n")
    try:
        head = load_json(data[:nl])
        number = head["block"]
        columns = {name: head[name] for name in ("ids", "kinds", "folded", "tokens", "sizes", "retention", "ends")}
    except (ValueError, KeyError, TypeError) as exc:
        raise MalformedPartError(f"its index does not read ({exc})") from None
    size = len(columns["ids"])
    if nl < 0 or not isinstance(number, int) or any(
            not isinstance(column, list) or len(column) != size for column in columns.values()):
        raise MalformedPartError("its index columns are not all as long as its list of ids")
    return Block(number, columns, data[nl + 1 :])
