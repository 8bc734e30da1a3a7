"""The shape of a blueprint file, checked by pydantic, and pydantic's errors in the file's terms.

Every table forbids unknown keys and nothing is coerced (``budget = "8000"`` is an error, not
8000). Rules that tie two keys together (``soft <= hard``, a ``model_summary`` recap needs a
``model``) are checked afterwards, by :mod:`._load`, where the key to blame is known.
"""

from __future__ import annotations

import difflib
import enum
import re
from typing import Any

import attrs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from livecontext.protocol.context import Capability

from ..agent import AgentSettings
from ..analyzers import AnalyzerKind, AnalyzerSettings, AnalyzerTrigger
from ..history import POLICIES, ContextPolicy, HistoryLimits
from ..recap import MIN_SUMMARY_CHARS, RecapSettings, RecapStrategy
from ._lines import Where

# Defaults come from the settings classes, so a blueprint that leaves a key out gets exactly
# what code that leaves the argument out gets.
_AGENT = AgentSettings()
_LIMITS = HistoryLimits()
_RECAP = RecapSettings()
_CONTEXT = ContextPolicy()
_ANALYZER = AnalyzerSettings("default")

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def _checked_name(value: str) -> str:
    """An analyzer's, an agent's or a system's name: 1-64 letters, digits and ``_ . -``."""
    if not _NAME.match(value):
        raise ValueError(f"must be 1-64 letters, digits and _ . -, got {value!r}")
    return value


def _one_of(value: str, allowed: type[enum.StrEnum]) -> str:
    """``value`` if it is one of ``allowed``'s values (the settings make it the member)."""
    if value not in {member.value for member in allowed}:
        raise ValueError(f"must be one of {', '.join(allowed)}, got {value!r}")
    return value


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class AppsTable(_Table):
    """``[apps]`` (the older form): which built-in apps the agent has."""

    notebook: bool = True


class AppTable(_Table):
    """One ``[[apps]]`` element: an app by import path (or a built-in's name) and the keyword
    arguments it is made with."""

    use: str
    options: dict[str, Any] = Field(default_factory=dict)
    approval: bool | list[str] = False
    """Every call of its tools needs a person's approval (``true``), or the calls of the tools
    it names."""


class ToolTable(_Table):
    """One ``[[tools]]`` element: a function offered as a tool, by import path."""

    use: str
    approval: bool = False
    """Every call of it needs a person's approval (as ``@tool(approval=True)``)."""


class McpTable(_Table):
    """One ``[[mcp]]`` element: an MCP server whose tools the agent is offered (see
    :class:`~livecontext.McpServer`): ``command`` (stdio) or ``url`` (streamable HTTP)."""

    name: str
    command: list[str] | None = None
    url: str | None = None
    tools: list[str] | None = None
    """The server's tools to offer (all of them if not given)."""
    env: dict[str, str] | None = None
    approval: bool = False
    """Every call of its tools needs a person's approval."""


class LimitsTable(_Table):
    """``[limits]``: :class:`~livecontext.actors.history.HistoryLimits`."""

    max_entries: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_bytes: int | None = Field(default=None, ge=1)
    soft: float = Field(default=_LIMITS.soft, gt=0, allow_inf_nan=False)
    hard: float = Field(default=_LIMITS.hard, gt=0, allow_inf_nan=False)
    truncate: float = Field(default=_LIMITS.truncate, gt=0, allow_inf_nan=False)


class ContextTable(_Table):
    """``[context]``: :class:`~livecontext.actors.history.ContextPolicy`, how each call's
    context is rendered."""

    policy: str = _CONTEXT.policy
    low_water: float = Field(default=_CONTEXT.low_water, ge=0.05, le=1, allow_inf_nan=False)
    high_water: float = Field(default=_CONTEXT.high_water, gt=0, le=1, allow_inf_nan=False)

    @field_validator("policy")
    @classmethod
    def _policy(cls, value: str) -> str:
        if value not in POLICIES:
            raise ValueError(f"must be one of {', '.join(repr(p) for p in POLICIES)}, got {value!r}")
        return value


class RecapTable(_Table):
    """``[recap]``: :class:`~livecontext.actors.recap.RecapSettings` and the recap's model."""

    strategy: str = _RECAP.strategy.value
    window: int = Field(default=_RECAP.window, ge=0)
    batch: int = Field(default=_RECAP.batch, ge=1)
    max_summary_chars: int = Field(default=_RECAP.max_summary_chars, ge=MIN_SUMMARY_CHARS)
    budget: int = Field(default=_RECAP.budget, ge=1)
    max_retries: int = Field(default=_RECAP.max_retries, ge=1)
    model: str | None = None

    @field_validator("strategy")
    @classmethod
    def _strategy(cls, value: str) -> str:
        return _one_of(value, RecapStrategy)


class AnalyzerTable(_Table):
    """One ``[[analyzers]]`` element: :class:`~livecontext.actors.analyzers.AnalyzerSettings`."""

    name: str
    kind: str = _ANALYZER.kind.value
    trigger: str = _ANALYZER.trigger.value
    period_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """``None``: not given (the settings' default applies; only ``trigger = "period"`` uses it)."""
    model: str | None = None
    prompt: str | None = None
    threshold: int | None = Field(default=None, ge=2)
    """``None``: not given (only ``repeated_failures`` uses it)."""
    window: int = Field(default=_ANALYZER.window, ge=1)
    capabilities: list[str] = Field(default_factory=lambda: list(_ANALYZER.capabilities))

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _checked_name(value)

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        return _one_of(value, AnalyzerKind)

    @field_validator("trigger")
    @classmethod
    def _trigger(cls, value: str) -> str:
        return _one_of(value, AnalyzerTrigger)

    @field_validator("capabilities")
    @classmethod
    def _capabilities(cls, value: list[str]) -> list[str]:
        # (the app host's own, and a person's)
        known = tuple(c.value for c in Capability if c not in (Capability.APP_STATE, Capability.DECIDE))
        for item in value:
            if item not in known:
                raise ValueError(f"may list only {', '.join(known)}; got {item!r}")
        if len(set(value)) != len(value):
            raise ValueError(f"lists a capability twice: {value}")
        return value


class PriceTable(_Table):
    """One ``[spend.prices."MODEL"]`` table: what a model charges, in money per million tokens."""

    input: float = Field(ge=0, allow_inf_nan=False)
    cached_input: float = Field(ge=0, allow_inf_nan=False)
    output: float = Field(ge=0, allow_inf_nan=False)


class SpendTable(_Table):
    """``[spend]``: :class:`~livecontext.actors.spend.SpendLimits` (at the top level of a
    system blueprint: the system's, for all its agents)."""

    max_input_tokens: int | None = Field(default=None, ge=1)
    max_output_tokens: int | None = Field(default=None, ge=1)
    max_cost: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    prices: dict[str, PriceTable] = Field(default_factory=dict)


class _AgentKeys(_Table):
    """The keys that describe one agent: a one-agent blueprint's top level, and each
    ``[[agents]]`` table of a system blueprint (one list, so that the two never drift apart)."""

    system_prompt: str | None = None
    model: str = "echo"
    budget: int = Field(default=_AGENT.budget, ge=1)
    snapshot_every: int = Field(default=_AGENT.snapshot_every, ge=1)
    inputs: list[str] = Field(default_factory=list)
    pins: list[str] = Field(default_factory=list)
    pin_task: bool = _AGENT.pin_task
    lifecycle: bool = _AGENT.lifecycle
    max_steps: int | None = Field(default=None, ge=1)
    apps: list[AppTable] = Field(default_factory=lambda: [AppTable(use="notebook")])
    tools: list[ToolTable] = Field(default_factory=list)
    mcp: list[McpTable] = Field(default_factory=list)
    limits: LimitsTable | None = None
    context: ContextTable | None = None
    recap: RecapTable | None = None
    analyzers: list[AnalyzerTable] = Field(default_factory=list)
    approval: list[str] = Field(default_factory=list)
    """Tools every call of which needs a person's approval, by name."""
    approval_policy: str | None = None
    """A function ``module:function`` deciding per call which calls need approval."""


class AgentTable(_AgentKeys):
    """One ``[[agents]]`` element of a system blueprint: the keys of a one-agent blueprint's
    top level (but ``store``, which the system's agents share), a name and a description."""

    name: str
    description: str | None = None
    thread: str | None = None
    """``None``: not given (the agent's thread is ``SYSTEM.NAME``)."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _checked_name(value)


class BlueprintFile(_AgentKeys):
    """The whole file: one agent's keys, or a system's (``system``, ``store``,
    ``ask_timeout_s``, ``[[agents]]``)."""

    thread: str = _AGENT.thread_id
    store: str | None = None
    system: str | None = None
    """A system blueprint's name (``None``: the file's name without ``.toml``)."""
    ask_timeout_s: float | None = Field(default=None, gt=0, lt=300, allow_inf_nan=False)
    """``None``: not given (the default applies; only a system blueprint uses it)."""
    spend: SpendTable | None = None
    """The agent's spend limits (a system's: all its agents')."""
    agents: list[AgentTable] = Field(default_factory=list)

    @field_validator("system")
    @classmethod
    def _system(cls, value: str | None) -> str | None:
        return None if value is None else _checked_name(value)


SYSTEM_KEYS = ("system", "store", "ask_timeout_s", "spend", "agents")
"""The top-level keys of a system blueprint; every other key belongs in each ``[[agents]]``."""

TABLES: dict[str, type[_Table]] = {"apps": AppTable, "tools": ToolTable, "mcp": McpTable, "limits": LimitsTable, "context": ContextTable,
                                   "recap": RecapTable, "analyzers": AnalyzerTable, "agents": AgentTable,
                                   "spend": SpendTable}
"""The tables of a blueprint, by name (see :data:`ARRAYS`)."""
ARRAYS = frozenset({"apps", "tools", "mcp", "analyzers", "agents"})
"""The arrays of tables (``[[analyzers]]``); ``apps`` may also be the table ``[apps]``."""


def label(where: Where) -> str:
    """How a message names the table of ``where``: ``[limits] ``, ``[[analyzers]] #2 ``,
    ``[[agents]] #2 [limits] `` or ``""``."""
    agent = "" if where.agent is None else f"[[agents]] #{where.agent + 1} "
    if where.table is None:
        return agent
    if where.index is None:
        return f"{agent}[{where.table}] "
    return f"{agent}[[{where.table}]] #{where.index + 1} "


def key_name(where: Where) -> str:
    """The key of ``where`` as a message names it: ``inputs[2]``, ``strategy``."""
    if where.key is None:
        return ""
    return where.key if where.item is None else f"{where.key}[{where.item}]"


def where_of(loc: tuple[int | str, ...]) -> Where:
    """The place a pydantic error location points at."""
    head, rest = str(loc[0]), loc[1:]
    if head == "agents" and rest and isinstance(rest[0], int):
        if len(rest) == 1:
            return Where(agent=rest[0])
        return attrs.evolve(where_of(rest[1:]), agent=rest[0])
    if head in TABLES and rest and not isinstance(rest[0], int):
        return Where(head, None, str(rest[0]), _int_or_none(rest[1:]))
    if head in ARRAYS and rest and isinstance(rest[0], int):
        if len(rest) == 1:
            return Where(head, rest[0])
        return Where(head, rest[0], str(rest[1]), _int_or_none(rest[2:]))
    return Where(None, None, head, _int_or_none(rest))


def _int_or_none(rest: tuple[int | str, ...]) -> int | None:
    return rest[0] if rest and isinstance(rest[0], int) else None


_EXPECTED = {
    "string_type": "a string",
    "float_type": "a number",
    "int_type": "an integer",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
}


def describe(error: ErrorDetails) -> tuple[Where, str]:
    """One pydantic error as the place it is about and one line in the blueprint's terms."""
    loc = tuple(error["loc"])
    where = where_of(loc)
    kind = error["type"]
    got = error.get("input")
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    name = f"{label(where)}{key_name(where)}"
    if loc[:2] == ("spend", "prices") and len(loc) > 2:
        return _price_problem(error, loc)
    if kind == "extra_forbidden" and where.agent is not None and where.table is None and where.key == "spend":
        return where, (f"{label(where)}has a [spend] table, but a system's spend limits cover all its agents: "
                       "put [spend] at the top level of the system blueprint")
    if kind == "extra_forbidden":
        return where, _unknown_key(where)
    if kind == "missing":
        return where, f"{label(where)}needs a {where.key} (it is required)"
    if kind == "value_error":
        return where, f"{name} {ctx.get('error', error['msg'])}"
    if kind in ("greater_than_equal", "greater_than"):
        op, bound = (">=", ctx.get("ge")) if kind == "greater_than_equal" else (">", ctx.get("gt"))
        return where, f"{name} must be {op} {bound}, got {got!r}"
    if kind == "less_than":
        return where, f"{name} must be < {ctx.get('lt')}, got {got!r}"
    if kind == "finite_number":
        return where, f"{name} must be a finite number, got {got!r}"
    if kind in _EXPECTED:
        return where, f"{name} must be {_EXPECTED[kind]}, got {_toml_type(got)} {_short(got)}"
    return where, f"{name}: {error['msg']}"


def _price_problem(error: ErrorDetails, loc: tuple[int | str, ...]) -> tuple[Where, str]:
    """An error inside ``[spend.prices."MODEL"]``, in that table's terms."""
    where = Where("spend", None, "prices")
    table = f'[spend.prices."{loc[2]}"]'
    kind, got = error["type"], error.get("input")
    fields = ", ".join(PriceTable.model_fields)
    if len(loc) == 3:
        return where, f"{table} must be a table of {fields} (money per million tokens), got {_toml_type(got)}"
    key = str(loc[3])
    if kind == "extra_forbidden":
        return where, f"unknown key {key!r} in {table}; known keys: {fields}"
    if kind == "missing":
        return where, f"{table} needs {key} (money per million tokens); it takes {fields}"
    if kind == "greater_than_equal":
        return where, f"{table} {key} must be >= 0, got {got!r}"
    if kind == "finite_number":
        return where, f"{table} {key} must be a finite number, got {got!r}"
    if kind in _EXPECTED:
        return where, f"{table} {key} must be {_EXPECTED[kind]}, got {_toml_type(got)} {_short(got)}"
    return where, f"{table} {key}: {error['msg']}"


def _unknown_key(where: Where) -> str:
    key = where.key or ""
    if where.table is None:
        fields = AgentTable.model_fields if where.agent is not None else BlueprintFile.model_fields
        known = [k if k not in TABLES else (f"[[{k}]]" if k in ARRAYS else f"[{k}]") for k in fields]
        place = "at the top level" if where.agent is None else f"in {label(where).strip()}"
        candidates = list(fields)
    else:
        table = AppsTable if where.table == "apps" and where.index is None else TABLES[where.table]
        known = list(table.model_fields)
        place = f"in {label(where).strip()}"
        candidates = known
    close = difflib.get_close_matches(key, candidates, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown key {key!r} {place}{hint}; known keys: {', '.join(known)}"


def _toml_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__}"


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def apps_table_as_array(data: dict[str, Any]) -> list[ErrorDetails]:
    """Rewrite ``[apps]`` (the table of built-in switches) in ``data`` as the ``[[apps]]`` it
    means, and ``[agents.apps]`` in each ``[[agents]]`` element; the errors of the tables,
    located under ``apps`` (``agents``, N, ``apps``), if they have any."""
    errors = _apps_table_as_array(data, ())
    agents = data.get("agents")
    if isinstance(agents, list):
        for i, agent in enumerate(agents):
            if isinstance(agent, dict):
                errors += _apps_table_as_array(agent, ("agents", i))
    return errors


def _apps_table_as_array(data: dict[str, Any], at: tuple[str | int, ...]) -> list[ErrorDetails]:
    value = data.get("apps")
    if not isinstance(value, dict):
        return []
    try:
        table = AppsTable.model_validate(value)
    except ValidationError as exc:
        return [{**error, "loc": (*at, "apps", *error["loc"])} for error in exc.errors(include_url=False)]
    data["apps"] = [{"use": name} for name, on in table.model_dump().items() if on]
    return []
