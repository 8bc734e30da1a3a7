"""Entries decoded on first use: what lets a thread open from a snapshot without building
every entry (opening renders a few dozen of them; a long thread holds tens of thousands)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, SupportsIndex, overload

from livecontext.protocol.history import HistoryEntry

from ._blocks import Block


class Raw:
    """An entry still in its snapshot form: the ``at``-th entry of a :class:`Block`."""

    __slots__ = ("at", "block")

    def __init__(self, block: Block, at: int) -> None:
        self.block = block
        self.at = at

    @property
    def id(self) -> str:
        return self.block.ids[self.at]

    @property
    def text(self) -> str | bytes:
        """Its JSON text (inflating its block's texts the first time one is read)."""
        return self.block.text(self.at)

    @property
    def row(self) -> list[Any]:
        """Its index row (see :func:`~._state.index_row`)."""
        return self.block.row(self.at)


Decoder = Callable[[str | bytes], HistoryEntry]


class LazyEntries(list):  # type: ignore[type-arg]
    """A list of entries whose items may still be :class:`Raw`; reading an item decodes it once.

    Every read path (indexing, slicing, iteration, ``reversed``, ``in``) hands out decoded
    entries, so code using it as a plain list of entries sees no difference.
    """

    __slots__ = ("_decode",)

    def __init__(self, items: Iterable[Any] = (), decode: Decoder | None = None) -> None:
        super().__init__(items)
        self._decode = decode

    def _get(self, i: int) -> HistoryEntry:
        item = list.__getitem__(self, i)
        if type(item) is Raw:
            assert self._decode is not None
            item = self._decode(item.text)
            list.__setitem__(self, i, item)
        return item  # type: ignore[no-any-return]

    @overload
    def __getitem__(self, i: SupportsIndex) -> HistoryEntry: ...
    @overload
    def __getitem__(self, i: slice) -> list[HistoryEntry]: ...
    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._get(j) for j in range(*i.indices(len(self)))]
        return self._get(i)

    def __iter__(self) -> Iterator[HistoryEntry]:
        for i in range(len(self)):
            yield self._get(i)

    def __reversed__(self) -> Iterator[HistoryEntry]:
        for i in range(len(self) - 1, -1, -1):
            yield self._get(i)

    def __contains__(self, item: object) -> bool:
        return any(e == item for e in self)

    def with_items(self, items: Iterable[Any]) -> LazyEntries:
        """Another list of ``items`` (entries or :class:`Raw` ones), decoded as this one is."""
        return LazyEntries(items, self._decode)

    def items_as_stored(self) -> list[Any]:
        """The items without decoding: entries and :class:`Raw` ones (for the next snapshot)."""
        return list(list.__iter__(self))
