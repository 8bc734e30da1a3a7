"""Reading a blueprint file: TOML, then its shape, then the rules between keys, then settings.

Each step reports the first problem it finds (the one nearest the top of the file) as a
:class:`BlueprintError` naming the file, the line and the key; later steps never see a file an
earlier step refused.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from typing import Any
from pathlib import Path

import attrs
import pydantic

from livecontext.protocol.kernel import thread_id_problem
from livecontext.runtime import UsageError
from livecontext.runtime.models import SPEC_FORMS, split_cassette_spec

from ..agent import AgentSettings
from ..analyzers import AnalyzerKind, AnalyzerSettings, AnalyzerTrigger
from ..mcp import mcp_servers
from ..apps import AppDefinitionError, FunctionTools, ToolDefinitionError, describe_tools, importable
from ..engine import CONTROL_TOOL_NAMES, NO_APPROVALS, ApprovalPolicy
from ..history import ContextPolicy, HistoryLimits
from ..recap import RecapSettings, RecapStrategy
from ..spend import SpendLimits
from livecontext.runtime.models import Price
from ._blueprint import AppUse, Blueprint
from ._errors import BlueprintError
from ._lines import KeyLines, Where
from ._schema import (
    SYSTEM_KEYS,
    AgentTable,
    AnalyzerTable,
    BlueprintFile,
    SpendTable,
    apps_table_as_array,
    describe,
    key_name,
    label,
)
from ._system_blueprint import DEFAULT_ASK_TIMEOUT_S, AgentBlueprint, SystemBlueprint

_TOML_POSITION = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)\s*$")
_STORE_SCHEMES = ("sqlite", "jsonl", "memory", "postgresql", "postgres")
_SYSTEM_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def load_blueprint(path: str | os.PathLike[str]) -> Blueprint:
    """Read the one-agent blueprint at ``path`` (a TOML file; docs/blueprints.md lists every key).

    Args:
        path: The file. Relative paths inside it are taken from its folder.

    Returns:
        The blueprint, its settings checked by the same rules as the actors'.

    Raises:
        BlueprintError: The file cannot be read, is not TOML, has an unknown key or a bad
            value, or describes a system of agents (``[[agents]]``: see
            :func:`load_system_blueprint`); the message names the file, the line and the key.
    """
    source = os.fspath(path)
    return parse_blueprint(_read(source), source, base=Path(source).absolute().parent)


def load_system_blueprint(path: str | os.PathLike[str]) -> SystemBlueprint:
    """Read the system blueprint at ``path``: several ``[[agents]]`` sharing one store.

    Raises:
        BlueprintError: As :func:`load_blueprint`; also when the file has no ``[[agents]]``.
    """
    source = os.fspath(path)
    return parse_system_blueprint(_read(source), source, base=Path(source).absolute().parent)


def load_any_blueprint(path: str | os.PathLike[str]) -> Blueprint | SystemBlueprint:
    """Read the blueprint at ``path``, of one agent or (with ``[[agents]]``) of a system.

    Raises:
        BlueprintError: As :func:`load_blueprint`.
    """
    source = os.fspath(path)
    return _parse(_read(source), source, Path(source).absolute().parent)


def parse_blueprint(text: str, source: str, *, base: Path) -> Blueprint:
    """Read one-agent blueprint ``text``; ``source`` names it in errors, ``base`` anchors
    relative paths.

    Raises:
        BlueprintError: As :func:`load_blueprint`.
    """
    parsed = _parse(text, source, base)
    if isinstance(parsed, SystemBlueprint):
        raise BlueprintError(source, KeyLines(text).line_of(Where(agent=0)), "agents",
                             "describes a system of agents ([[agents]]): load it with "
                             "load_system_blueprint (or open_system), or run it with `livecontext run`")
    return parsed


def parse_system_blueprint(text: str, source: str, *, base: Path) -> SystemBlueprint:
    """Read system blueprint ``text`` (see :func:`parse_blueprint`).

    Raises:
        BlueprintError: As :func:`load_system_blueprint`.
    """
    parsed = _parse(text, source, base)
    if not isinstance(parsed, SystemBlueprint):
        raise BlueprintError(source, None, "agents", "has no [[agents]] table, so it describes one agent: "
                             "load it with load_blueprint, or add an [[agents]] table per agent")
    return parsed


def _read(source: str) -> str:
    try:
        return Path(source).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BlueprintError(source, None, None, "no such blueprint file; check the path") from None
    except IsADirectoryError:
        raise BlueprintError(source, None, None, "is a directory, not a blueprint (.toml) file") from None
    except UnicodeDecodeError as exc:
        raise BlueprintError(source, None, None, f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise BlueprintError(source, None, None, f"cannot be read: {exc.strerror or exc}") from None


def _parse(text: str, source: str, base: Path) -> Blueprint | SystemBlueprint:
    lines = KeyLines(text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        m = _TOML_POSITION.search(message)
        line = (int(m.group(1)) if m.group(1) else lines.last_line) if m else None
        what = message[: m.start()] if m else message
        column = f" (column {m.group(2)})" if m and m.group(2) else ""
        raise BlueprintError(source, line, None, f"not valid TOML: {what}{column}") from None
    table_errors = apps_table_as_array(data)
    if table_errors:
        _raise_first(source, lines, [describe(error) for error in table_errors])
    try:
        doc = BlueprintFile.model_validate(data)
    except pydantic.ValidationError as exc:
        found = [describe(error) for error in exc.errors(include_url=False)]
        _raise_first(source, lines, found)
        raise AssertionError("unreachable") from None
    system = doc.system if doc.system is not None else Path(source).stem
    problems = list(_system_problems(doc, system, base, lines) if doc.agents else _rule_problems(doc, base))
    if problems:
        _raise_first(source, lines, problems)
    try:
        if doc.agents:
            return _system(doc, system, source, base)
        bp = _blueprint(doc, source, base, doc.thread, doc.store)
        return attrs.evolve(bp, settings=attrs.evolve(bp.settings, spend=_spend(doc.spend)))
    except UsageError as exc:  # a rule of the settings classes that the rules above missed
        raise BlueprintError(source, None, None, str(exc)) from None


def _raise_first(source: str, lines: KeyLines, problems: list[tuple[Where, str]]) -> None:
    """Raise the problem nearest the top of the file (the order a reader fixes them in)."""
    where, problem = min(problems, key=lambda p: lines.line_of(p[0]))
    raise BlueprintError(source, lines.line_of(where), where.dotted(), problem)


def _rule_problems(doc: BlueprintFile, base: Path) -> Iterator[tuple[Where, str]]:
    """Values that are wrong given another key, or given the world (a missing script)."""
    for key in ("system", "ask_timeout_s"):
        if key in doc.model_fields_set:
            yield Where(key=key), f"{key} is only used by a system blueprint ([[agents]]); remove it or add [[agents]] tables"
    yield from _thread_problem(Where(key="thread"), doc.thread)
    if doc.store is not None:
        problem = _store_problem(doc.store)
        if problem:
            yield Where(key="store"), f"store {problem}"
    yield from _agent_problems(doc, None, base)
    yield from _spend_problems(doc.spend, [(Where(key="model"), doc.model)])


def _spend_problems(table: SpendTable | None, models: list[tuple[Where, str]]) -> Iterator[tuple[Where, str]]:
    """``[spend]`` sets no limit, or a ``max_cost`` for a model (at ``Where``) with no price."""
    if table is None:
        return
    if table.max_input_tokens is None and table.max_output_tokens is None and table.max_cost is None:
        yield (Where("spend"), "[spend] sets none of max_input_tokens, max_output_tokens and max_cost; "
               "set one, or remove [spend]")
        return
    limits = _spend(table)
    assert limits is not None
    for where, model in models:
        missing = limits.missing_price(model)
        if missing is not None:
            yield where, f"{label(where)}{key_name(where)} {model!r}: [spend] {missing}"


def _spend(table: SpendTable | None) -> SpendLimits | None:
    if table is None:
        return None
    prices = {model: Price(p.input, p.cached_input, p.output) for model, p in table.prices.items()}
    return SpendLimits(table.max_input_tokens, table.max_output_tokens, table.max_cost, prices)


def _system_problems(doc: BlueprintFile, system: str, base: Path, lines: KeyLines) -> Iterator[tuple[Where, str]]:
    """A system blueprint's rules: the top level holds the system's keys only, names and
    threads are unique, and each agent obeys a one-agent blueprint's rules."""
    if doc.system is None and not _SYSTEM_NAME.match(system):
        yield (Where(key="agents"), f"the file's name {system!r} cannot name the system: add "
               "system = \"NAME\" (1-64 letters, digits and _ . -) at the top level")
    for key in sorted(doc.model_fields_set - set(SYSTEM_KEYS)):
        yield (Where(key=key), f"{key} is set at the top level of a system blueprint; put it in each "
               f"[[agents]] table (the top level holds {', '.join(SYSTEM_KEYS)})")
    if doc.store is not None:
        problem = _store_problem(doc.store)
        if problem:
            yield Where(key="store"), f"store {problem}"
    first: dict[str, int] = {}
    threads: dict[str, int] = {}
    for i, agent in enumerate(doc.agents):
        at = Where(key="name", agent=i)
        if agent.name in first:
            j = first[agent.name]
            yield at, (f"[[agents]] name {agent.name!r} is used twice: [[agents]] #{j + 1} "
                       f"(line {lines.line_of(Where(key='name', agent=j))}) and #{i + 1} "
                       f"(line {lines.line_of(at)}); give each agent its own name")
        else:
            first[agent.name] = i
            thread = agent.thread if agent.thread is not None else f"{system}.{agent.name}"
            where = Where(key="thread" if agent.thread is not None else "name", agent=i)
            thread_problems = list(_thread_problem(where, thread))
            yield from thread_problems
            if thread in threads and not thread_problems:
                yield where, (f"[[agents]] #{i + 1} thread {thread!r} is also [[agents]] #{threads[thread] + 1}'s; "
                              "give each agent its own thread")
            threads.setdefault(thread, i)
        yield from _agent_problems(agent, i, base)
    yield from _spend_problems(doc.spend, [(Where(key="model", agent=i), a.model) for i, a in enumerate(doc.agents)])


def _thread_problem(where: Where, thread: str) -> Iterator[tuple[Where, str]]:
    problem = thread_id_problem(thread, agent=True)
    if problem is not None:
        yield where, f"{label(where)}thread {thread!r}: {problem}"


def _agent_problems(keys: BlueprintFile | AgentTable, agent: int | None, base: Path) -> Iterator[tuple[Where, str]]:
    """One agent's rules (the top level of a one-agent blueprint, or an [[agents]] table)."""
    yield from _spec_problem(Where(key="model", agent=agent), keys.model, base)
    yield from _limit_problems(keys, agent)
    yield from _context_problems(keys, agent)
    yield from _recap_problems(keys, agent, base)
    try:
        _approval(keys, base)
    except UsageError as exc:
        key = "approval_policy" if keys.approval_policy is not None and "approval policy" in str(exc) else "approval"
        yield Where(key=key, agent=agent), f"{label(Where(key=key, agent=agent))}{exc}"
    except (AppDefinitionError, ToolDefinitionError):
        pass  # (said by the apps' and tools' own checks)
    yield from _import_problems(keys, agent, base)
    names: set[str] = set()
    for i, a in enumerate(keys.analyzers):
        if a.name in names:
            yield (Where("analyzers", i, "name", agent=agent),
                   f"{label(Where('analyzers', i, agent=agent))}name {a.name!r} is used twice; give each analyzer its own name")
        names.add(a.name)
        yield from _analyzer_problems(i, a, agent, base)


def _import_problems(keys: BlueprintFile | AgentTable, agent: int | None, base: Path) -> Iterator[tuple[Where, str]]:
    """Apps and tools whose import path names nothing usable (imported from the blueprint's
    folder as well, as when the agent runs)."""
    with importable(str(base)):
        for i, a in enumerate(keys.apps):
            head = label(Where("apps", i, agent=agent))
            try:
                _app_use(a.use, a.options, base).make()
            except (AppDefinitionError, ToolDefinitionError) as exc:
                yield Where("apps", i, "use", agent=agent), f"{head}{exc}"
            except UsageError as exc:  # (the sub-agents' model spec)
                yield Where("apps", i, "options", agent=agent), f"{head}{a.use} options: {exc}"
            except TypeError as exc:  # a built-in made with options it does not take
                yield Where("apps", i, "options", agent=agent), f"{head}{a.use} cannot be made with these options: {exc}"
        for i, t in enumerate(keys.tools):
            try:
                FunctionTools([t.use])
            except ToolDefinitionError as exc:
                yield Where("tools", i, "use", agent=agent), f"{label(Where('tools', i, agent=agent))}{exc}"
        if keys.tools:
            try:
                FunctionTools([t.use for t in keys.tools])
            except ToolDefinitionError as exc:
                yield Where("tools", 0, "use", agent=agent), f"{label(Where(agent=agent))}[[tools]] {exc}"


def _limit_problems(keys: BlueprintFile | AgentTable, agent: int | None) -> Iterator[tuple[Where, str]]:
    lim = keys.limits
    if lim is None:
        return
    head = label(Where("limits", agent=agent))
    if lim.max_entries is None and lim.max_tokens is None and lim.max_bytes is None and keys.recap is None:
        yield (Where("limits", agent=agent), f"{head}sets no max_entries, max_tokens or max_bytes, so its thresholds "
               "would apply to nothing; add one, or add [recap] to derive max_tokens from the budget")
    if lim.hard < lim.soft:
        yield Where("limits", key="hard", agent=agent), f"{head}hard must be >= soft ({lim.soft}), got {lim.hard}"
    if lim.truncate < lim.hard:
        yield Where("limits", key="truncate", agent=agent), f"{head}truncate must be >= hard ({lim.hard}), got {lim.truncate}"


def _context_problems(keys: BlueprintFile | AgentTable, agent: int | None) -> Iterator[tuple[Where, str]]:
    ctx = keys.context
    if ctx is not None and ctx.high_water < ctx.low_water:
        head = label(Where("context", agent=agent))
        yield (Where("context", key="high_water", agent=agent),
               f"{head}high_water must be >= low_water ({ctx.low_water}), got {ctx.high_water}")


def _recap_problems(keys: BlueprintFile | AgentTable, agent: int | None, base: Path) -> Iterator[tuple[Where, str]]:
    recap = keys.recap
    if recap is None:
        return
    head = label(Where("recap", agent=agent))
    if recap.strategy == RecapStrategy.MODEL_SUMMARY and recap.model is None:
        yield (Where("recap", key="strategy", agent=agent),
               f"{head}strategy model_summary needs a model: add model = \"openai:MODEL\" (or another spec) to [recap]")
    if recap.strategy != RecapStrategy.MODEL_SUMMARY and recap.model is not None:
        yield (Where("recap", key="model", agent=agent),
               f"{head}model is only used by strategy model_summary (strategy is {recap.strategy!r}); "
               "remove it or change the strategy")
    if recap.model is not None:
        yield from _spec_problem(Where("recap", key="model", agent=agent), recap.model, base)


def _analyzer_problems(i: int, a: AnalyzerTable, agent: int | None, base: Path) -> Iterator[tuple[Where, str]]:
    at = Where("analyzers", i, agent=agent)
    head = label(at)
    if a.kind == AnalyzerKind.MODEL:
        if a.model is None:
            yield Where("analyzers", i, "kind", agent=agent), f"{head}kind model needs a model: add model = \"openai:MODEL\" (or another spec)"
        if not (a.prompt or "").strip():
            yield Where("analyzers", i, "kind", agent=agent), f"{head}kind model needs a prompt: what should it look for?"
    unused = {
        "model": a.kind != AnalyzerKind.MODEL and a.model is not None,
        "prompt": a.kind != AnalyzerKind.MODEL and a.prompt is not None,
        "threshold": a.kind != AnalyzerKind.REPEATED_FAILURES and a.threshold is not None,
    }
    for key, is_unused in unused.items():
        if is_unused:
            yield Where("analyzers", i, key, agent=agent), f"{head}{key} is not used by kind {a.kind!r}; remove it or change the kind"
    if a.trigger != AnalyzerTrigger.PERIOD and a.period_s is not None:
        yield Where("analyzers", i, "period_s", agent=agent), f"{head}period_s is only used with trigger \"period\"; remove it or change the trigger"
    if a.kind == AnalyzerKind.MODEL and a.model is not None:
        yield from _spec_problem(Where("analyzers", i, "model", agent=agent), a.model, base)


def _spec_problem(where: Where, spec: str, base: Path) -> Iterator[tuple[Where, str]]:
    name = f"{label(where)}{key_name(where)}"
    kind, colon, rest = spec.partition(":")
    if spec == "echo" or (kind == "openai" and colon and rest):
        return
    if kind == "cassette" and colon:  # (its file may not exist yet: it is recorded)
        try:
            inner = split_cassette_spec(spec)[1]
        except UsageError as exc:
            yield where, f"{name}: {exc}"
            return
        yield from _spec_problem(where, inner, base)
        return
    if kind == "scripted" and colon and rest:
        script = _resolve(rest, base)
        if not script.is_file():
            yield where, f"{name} names no script file: {script} (scripted: paths are taken from the blueprint's folder)"
        return
    yield where, f"{name} must be one of {', '.join(SPEC_FORMS)}, got {spec!r}"


def _store_problem(url: str) -> str | None:
    scheme, sep, rest = url.partition(":")
    if not sep or scheme.lower() not in _STORE_SCHEMES:
        return f"must be a URL: sqlite:PATH, jsonl:DIR, memory: or postgresql://USER@HOST:PORT/DB, got {url!r}"
    if scheme.lower() == "memory" and rest:
        return f"memory: takes no path, got {url!r}"
    if scheme.lower() != "memory" and not rest.removeprefix("//").strip():
        return f"{scheme}: needs a path, got {url!r}"
    return None


def _resolve(path: str, base: Path) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else Path(os.path.normpath(base / p))


def _store_url(url: str, base: Path) -> str:
    scheme, _, rest = url.partition(":")
    scheme = scheme.lower()
    if scheme == "memory":
        return "memory:"
    if scheme in ("postgresql", "postgres"):
        return url  # (a server's address, not a path: nothing to resolve)
    return f"{scheme}:{_resolve(rest.removeprefix('//'), base)}"


def _model_spec(spec: str, base: Path) -> str:
    kind, _, rest = spec.partition(":")
    if kind == "cassette":  # the cassette's file is the blueprint folder's, as a script is
        path, inner = split_cassette_spec(spec)
        return f"cassette:{_resolve(path, base)}:{_model_spec(inner, base)}"
    return f"scripted:{_resolve(rest, base)}" if kind == "scripted" else spec


def _blueprint(keys: BlueprintFile | AgentTable, source: str, base: Path, thread: str,
               store: str | None) -> Blueprint:
    lim = keys.limits
    limits = None if lim is None else HistoryLimits(lim.max_entries, lim.max_tokens, lim.max_bytes,
                                                    lim.soft, lim.hard, lim.truncate)
    recap = None
    if keys.recap is not None:
        r = keys.recap
        recap = RecapSettings(r.strategy, r.window, r.batch, r.max_summary_chars, r.budget, r.max_retries)
    analyzers = tuple(_analyzer(a) for a in keys.analyzers)
    c = keys.context
    context = ContextPolicy() if c is None else ContextPolicy(c.policy, c.low_water, c.high_water)
    settings = AgentSettings(thread_id=thread, system_prompt=keys.system_prompt, budget=keys.budget,
                             snapshot_every=keys.snapshot_every, limits=limits, pin_task=keys.pin_task,
                             lifecycle=keys.lifecycle, approval=_approval(keys, base),
                             recap=recap, analyzers=analyzers, context=context)
    return Blueprint(
        path=source,
        settings=settings,
        model=_model_spec(keys.model, base),
        recap_model=None if keys.recap is None or keys.recap.model is None else _model_spec(keys.recap.model, base),
        analyzer_models={a.name: _model_spec(a.model, base) for a in keys.analyzers if a.model is not None},
        store=None if store is None else _store_url(store, base),
        inputs=tuple(keys.inputs),
        pins=tuple(keys.pins),
        max_steps=keys.max_steps,
        apps=tuple(_app_use(a.use, a.options, base) for a in keys.apps),
        tools=tuple(t.use for t in keys.tools),
        mcp=mcp_servers([t.model_dump(exclude_none=True, exclude_defaults=True) | {"name": t.name}
                         for t in keys.mcp]),
        folder=str(base),
    )


SYSTEM_AGENT_TOOLS = ("ask_agent", "send_message")
"""The tools every agent of a system has besides its own (its messaging app, made by
``livecontext.actors.system``; tests/actors/system checks that the two agree)."""


def _approval(keys: BlueprintFile | AgentTable, base: Path) -> ApprovalPolicy:
    """The approval policy the keys give: ``approval`` (tool names) and ``approval_policy``
    (a function's import path), with the tools of each ``[[tools]]`` and ``[[apps]]`` with
    ``approval``; the names are checked against the agent's tools (apps and tools are made,
    from the blueprint's folder, as the agent makes them; an agent of a system, an
    ``[[agents]]`` table, has :data:`SYSTEM_AGENT_TOOLS` too).

    Raises:
        UsageError: a name is no tool of the agent, or the policy is not importable.
    """
    wanted = bool(keys.approval or keys.approval_policy or any(t.approval for t in keys.tools)
                  or any(a.approval for a in keys.apps))
    if not wanted:
        return NO_APPROVALS
    names: set[str] = set()
    known: set[str] = set(CONTROL_TOOL_NAMES)
    if isinstance(keys, AgentTable):
        known.update(SYSTEM_AGENT_TOOLS)
    with importable(str(base)):
        policy = ApprovalPolicy.of(keys.approval_policy) if keys.approval_policy else NO_APPROVALS
        for a in keys.apps:
            tools = [spec.name for spec in describe_tools(_app_use(a.use, a.options, base).make())]
            known.update(tools)
            if a.approval is True:
                names.update(tools)
            elif isinstance(a.approval, list):
                unknown = [n for n in a.approval if n not in tools]
                if unknown:
                    raise UsageError(f"[[apps]] {a.use} approval names {', '.join(map(repr, unknown))}, not tools "
                                     f"of the app: its tools are {', '.join(tools) or 'none'}")
                names.update(a.approval)
        for t in keys.tools:
            tools = [spec.name for spec in describe_tools(FunctionTools([t.use]))]
            known.update(tools)
            if t.approval:
                names.update(tools)
    known.update(name for server in keys.mcp for name in server.tools or ())  # (others are known once it runs)
    unknown = [n for n in keys.approval if n not in known and not keys.mcp]
    if unknown:
        raise UsageError(f"approval names {', '.join(map(repr, unknown))}, not tools of the agent: its tools are "
                         f"{', '.join(sorted(known - set(CONTROL_TOOL_NAMES)))}")
    return policy.with_names([*names, *keys.approval])


def _app_use(use: str, options: Mapping[str, Any], base: Path) -> AppUse:
    """An app as the blueprint names it; the sub-agents' ``model`` spec is taken from the
    blueprint's folder, as the agent's own is."""
    model = options.get("model")
    if use == "subagents" and isinstance(model, str):
        options = {**options, "model": _model_spec(model, base)}
    return AppUse(use, options)


def _system(doc: BlueprintFile, system: str, source: str, base: Path) -> SystemBlueprint:
    agents = tuple(
        AgentBlueprint(a.name, _blueprint(a, source, base, a.thread or f"{system}.{a.name}", None),
                       a.description or "")
        for a in doc.agents)
    return SystemBlueprint(
        path=source, name=system, agents=agents,
        store=None if doc.store is None else _store_url(doc.store, base),
        ask_timeout_s=DEFAULT_ASK_TIMEOUT_S if doc.ask_timeout_s is None else doc.ask_timeout_s,
        spend=_spend(doc.spend),
    )


def _analyzer(a: AnalyzerTable) -> AnalyzerSettings:
    defaults = AnalyzerSettings(a.name)
    return AnalyzerSettings(
        name=a.name, kind=a.kind, trigger=a.trigger,
        period_s=defaults.period_s if a.period_s is None else a.period_s,
        prompt=a.prompt or "",
        threshold=defaults.threshold if a.threshold is None else a.threshold,
        window=a.window, capabilities=tuple(a.capabilities),
    )
