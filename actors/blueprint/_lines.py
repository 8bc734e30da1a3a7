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


AGENTS = "agents"
"""The array of tables of a system blueprint, one element per agent (``[[agents]]``)."""


@frozen
class Where:
    """A place in a blueprint: a key of the top level, of a table, or of one array element;
    in a system blueprint, maybe inside one ``[[agents]]`` element (:attr:`agent`)."""

    table: str | None = None
    """``None`` for the top level (or the agent's own table), else the table's name
    (``limits``, ``analyzers``)."""
    index: int | None = None
    """For an array of tables (``[[analyzers]]``): which element, from 0."""
    key: str | None = None
    """The key, or ``None`` for the table itself."""
    item: int | None = None
    """For a list value (``inputs``, ``capabilities``): which item, from 0."""
    agent: int | None = None
    """For a place inside an ``[[agents]]`` element: which one, from 0; the other fields are
    then relative to that element (``Where("limits", key="hard", agent=1)``)."""

    def dotted(self) -> str | None:
        """The key as one dotted name (``recap.strategy``, ``analyzers[1].kind``,
        ``agents[1].limits.hard``)."""
        parts = [] if self.agent is None else [f"{AGENTS}[{self.agent}]"]
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
                table = self._inside_agent(_name(m.group(1)), counts)
                index = counts.get(table, 0)
                counts[table] = index + 1
                self._tables.setdefault((table, index), number)
            elif (m := _TABLE_HEADER.match(line)) is not None:
                table, index = self._inside_agent(_name(m.group(1)), counts), None
                self._tables.setdefault((table, None), number)
            elif (m := _KEY.match(line)) is not None:
                parts = _name(m.group(1))
                self._keys.setdefault((table, index, parts[0]), number)
                if len(parts) > 1 and (table is None or (table == AGENTS and index is not None)):
                    # limits.max_entries = 5, at the top level or in an [[agents]] element
                    inner = ".".join(parts[:-1])
                    holder = inner if table is None else f"{AGENTS}[{index}].{inner}"
                    self._keys.setdefault((holder, None, parts[-1]), number)
                closing = _multiline_opened(m.group(2).strip())

    @staticmethod
    def _inside_agent(parts: tuple[str, ...], counts: dict[str, int]) -> str:
        """A header's table name; under ``[[agents]]`` (``[agents.limits]``) it names the
        element it belongs to, the latest one: ``agents[1].limits``."""
        if len(parts) > 1 and parts[0] == AGENTS and counts.get(AGENTS):
            return f"{AGENTS}[{counts[AGENTS] - 1}]." + ".".join(parts[1:])
        return ".".join(parts)

    def line_of(self, where: Where) -> int:
        """The line of ``where``, else of its table, else of the key holding its table, else 1
        (inside an ``[[agents]]`` element: else of the element's header)."""
        if where.agent is not None:
            return self._line_in_agent(where, where.agent)
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

    def _line_in_agent(self, where: Where, agent: int) -> int:
        own = f"{AGENTS}[{agent}]"
        if where.table is None:
            found = self._keys.get((AGENTS, agent, where.key)) if where.key is not None else None
            if found is None and where.key is not None:  # a whole table given, or unknown
                found = self._tables.get((f"{own}.{where.key}", None), self._tables.get((f"{own}.{where.key}", 0)))
        else:
            table = f"{own}.{where.table}"
            found = self._keys.get((table, where.index, where.key)) if where.key is not None else None
            if found is None:
                found = self._tables.get((table, where.index))
            if found is None:  # an inline table or array in the element
                found = self._keys.get((AGENTS, agent, where.table))
        if found is None:
            found = self._tables.get((AGENTS, agent))
        return found if found is not None else 1
