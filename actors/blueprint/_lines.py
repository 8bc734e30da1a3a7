"""Where a key of a TOML file is: ``tomllib`` parses without positions, so we scan the text.

The scan knows just enough TOML to find key and table lines: ``[table]`` and
``[[array.of.tables]]`` headers, ``key = value`` lines (bare, quoted and dotted keys), comments,
and multi-line strings (whose lines are never taken for keys). It never decides whether the
file is valid; ``tomllib`` does that first.
"""

from __future__ import annotations

import re

from attrs import frozen

_KEY_PART = r'(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|\'[^\']*\')'
_KEY = re.compile(rf"^\s*({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*=\s*(.*)$")
_ARRAY_HEADER = re.compile(rf"^\s*\[\[\s*({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*\]\]")
_TABLE_HEADER = re.compile(rf"^\s*\[\s*({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*\]")
_PART = re.compile(_KEY_PART)


@frozen
class Where:
    """A place in a blueprint: a key of the top level, of a table, or of one array element."""

    table: str | None = None
    """``None`` for the top level, else the table's name (``limits``, ``analyzers``)."""
    index: int | None = None
    """For an array of tables (``[[analyzers]]``): which element, from 0."""
    key: str | None = None
    """The key, or ``None`` for the table itself."""
    item: int | None = None
    """For a list value (``inputs``, ``capabilities``): which item, from 0."""

    def dotted(self) -> str | None:
        """The key as one dotted name (``recap.strategy``, ``analyzers[1].kind``)."""
        parts = []
        if self.table is not None:
            parts.append(self.table if self.index is None else f"{self.table}[{self.index}]")
        if self.key is not None:
            parts.append(self.key if self.item is None else f"{self.key}[{self.item}]")
        return ".".join(parts) or None


def _name(dotted: str) -> tuple[str, ...]:
    return tuple(p.strip("\"'") for p in _PART.findall(dotted))


def _multiline_opened(value: str) -> str | None:
    """The delimiter of a multi-line string that ``value`` opens and does not close."""
    for delim in ('"""', "'''"):
        if value.startswith(delim) and delim not in value[3:]:
            return delim
    return None


class KeyLines:
    """The line of each key and table header of one TOML text."""

    def __init__(self, text: str) -> None:
        self._keys: dict[tuple[str | None, int | None, str], int] = {}
        self._tables: dict[tuple[str, int | None], int] = {}
        self.last_line = max(1, len(text.splitlines()))
        self._scan(text)

    def _scan(self, text: str) -> None:
        table: str | None = None
        index: int | None = None
        counts: dict[str, int] = {}
        closing: str | None = None
        for number, line in enumerate(text.splitlines(), start=1):
            if closing is not None:
                if closing in line:
                    closing = None
                continue
            if (m := _ARRAY_HEADER.match(line)) is not None:
                table = ".".join(_name(m.group(1)))
                index = counts.get(table, 0)
                counts[table] = index + 1
                self._tables.setdefault((table, index), number)
            elif (m := _TABLE_HEADER.match(line)) is not None:
                table, index = ".".join(_name(m.group(1))), None
                self._tables.setdefault((table, None), number)
            elif (m := _KEY.match(line)) is not None:
                parts = _name(m.group(1))
                self._keys.setdefault((table, index, parts[0]), number)
                if table is None and len(parts) > 1:  # limits.max_entries = 5
                    self._keys.setdefault((".".join(parts[:-1]), None, parts[-1]), number)
                closing = _multiline_opened(m.group(2).strip())

    def line_of(self, where: Where) -> int:
        """The line of ``where``, else of its table, else of the key holding its table, else 1."""
        if where.key is not None:
            found = self._keys.get((where.table, where.index, where.key))
            if found is not None:
                return found
            if where.table is None:  # a whole table given where a value was expected, or unknown
                found = self._tables.get((where.key, None), self._tables.get((where.key, 0)))
                if found is not None:
                    return found
        if where.table is not None:
            found = self._tables.get((where.table, where.index))
            if found is not None:
                return found
            found = self._keys.get((None, None, where.table))  # an inline table or array
            if found is not None:
                return found
        return 1
