"""Reading a blueprint file: TOML, then its shape, then the rules between keys, then settings.

Each step reports the first problem it finds (the one nearest the top of the file) as a
:class:`BlueprintError` naming the file, the line and the key; later steps never see a file an
earlier step refused.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pydantic

from livecontext.runtime import UsageError
from livecontext.runtime.models import SPEC_FORMS

from .._agent import AgentSettings, check_thread_id
from ..analyzers import AnalyzerSettings
from ..apps import AppDefinitionError, FunctionTools, ToolDefinitionError
from ..history import HistoryLimits
from ..recap import RecapSettings
from ._blueprint import AppUse, Blueprint, importable
from ._errors import BlueprintError
from ._lines import KeyLines, Where
from ._schema import AnalyzerTable, BlueprintFile, apps_table_as_array, describe, key_name, label

_TOML_POSITION = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)\s*$")
_STORE_SCHEMES = ("sqlite", "jsonl", "memory")


def load_blueprint(path: str | os.PathLike[str]) -> Blueprint:
    """Read the blueprint at ``path`` (a TOML file; docs/blueprints.md lists every key).

    Args:
        path: The file. Relative paths inside it are taken from its folder.

    Returns:
        The blueprint, its settings checked by the same rules as the actors'.

    Raises:
        BlueprintError: The file cannot be read, is not TOML, has an unknown key or a bad
            value; the message names the file, the line and the key.
    """
    source = os.fspath(path)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BlueprintError(source, None, None, "no such blueprint file; check the path") from None
    except IsADirectoryError:
        raise BlueprintError(source, None, None, "is a directory, not a blueprint (.toml) file") from None
    except UnicodeDecodeError as exc:
        raise BlueprintError(source, None, None, f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise BlueprintError(source, None, None, f"cannot be read: {exc.strerror or exc}") from None
    return parse_blueprint(text, source, base=Path(source).absolute().parent)


def parse_blueprint(text: str, source: str, *, base: Path) -> Blueprint:
    """Read blueprint ``text``; ``source`` names it in errors, ``base`` anchors relative paths.

    Raises:
        BlueprintError: As :func:`load_blueprint`.
    """
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
    problems = list(_rule_problems(doc, base))
    if problems:
        _raise_first(source, lines, problems)
    try:
        return _blueprint(doc, source, base)
    except UsageError as exc:  # a rule of the settings classes that _rule_problems missed
        raise BlueprintError(source, None, None, str(exc)) from None


def _raise_first(source: str, lines: KeyLines, problems: list[tuple[Where, str]]) -> None:
    """Raise the problem nearest the top of the file (the order a reader fixes them in)."""
    where, problem = min(problems, key=lambda p: lines.line_of(p[0]))
    raise BlueprintError(source, lines.line_of(where), where.dotted(), problem)


def _rule_problems(doc: BlueprintFile, base: Path) -> Iterator[tuple[Where, str]]:
    """Values that are wrong given another key, or given the world (a missing script)."""
    try:
        check_thread_id(doc.thread)
    except UsageError:
        yield Where(key="thread"), f"thread must be 1-128 letters, digits and _ . : @ + -, got {doc.thread!r}"
    yield from _spec_problem(Where(key="model"), doc.model, base)
    if doc.store is not None:
        problem = _store_problem(doc.store)
        if problem:
            yield Where(key="store"), f"store {problem}"
    yield from _limit_problems(doc)
    yield from _recap_problems(doc, base)
    yield from _import_problems(doc, base)
    names: set[str] = set()
    for i, a in enumerate(doc.analyzers):
        if a.name in names:
            yield Where("analyzers", i, "name"), f"[[analyzers]] #{i + 1} name {a.name!r} is used twice; give each analyzer its own name"
        names.add(a.name)
        yield from _analyzer_problems(i, a, base)


def _import_problems(doc: BlueprintFile, base: Path) -> Iterator[tuple[Where, str]]:
    """Apps and tools whose import path names nothing usable (imported from the blueprint's
    folder as well, as when the agent runs)."""
    with importable(str(base)):
        for i, a in enumerate(doc.apps):
            try:
                AppUse(a.use, a.options).make()
            except (AppDefinitionError, ToolDefinitionError) as exc:
                yield Where("apps", i, "use"), f"[[apps]] #{i + 1} {exc}"
            except TypeError as exc:  # a built-in made with options it does not take
                yield Where("apps", i, "options"), f"[[apps]] #{i + 1} {a.use} cannot be made with these options: {exc}"
        for i, t in enumerate(doc.tools):
            try:
                FunctionTools([t.use])
            except ToolDefinitionError as exc:
                yield Where("tools", i, "use"), f"[[tools]] #{i + 1} {exc}"
        if doc.tools:
            try:
                FunctionTools([t.use for t in doc.tools])
            except ToolDefinitionError as exc:
                yield Where("tools", 0, "use"), f"[[tools]] {exc}"


def _limit_problems(doc: BlueprintFile) -> Iterator[tuple[Where, str]]:
    lim = doc.limits
    if lim is None:
        return
    if lim.max_entries is None and lim.max_tokens is None and lim.max_bytes is None and doc.recap is None:
        yield (Where("limits"), "[limits] sets no max_entries, max_tokens or max_bytes, so its thresholds "
               "would apply to nothing; add one, or add [recap] to derive max_tokens from the budget")
    if lim.hard < lim.soft:
        yield Where("limits", key="hard"), f"[limits] hard must be >= soft ({lim.soft}), got {lim.hard}"
    if lim.truncate < lim.hard:
        yield Where("limits", key="truncate"), f"[limits] truncate must be >= hard ({lim.hard}), got {lim.truncate}"


def _recap_problems(doc: BlueprintFile, base: Path) -> Iterator[tuple[Where, str]]:
    recap = doc.recap
    if recap is None:
        return
    if recap.strategy == "model_summary" and recap.model is None:
        yield (Where("recap", key="strategy"),
               "[recap] strategy model_summary needs a model: add model = \"openai:MODEL\" (or another spec) to [recap]")
    if recap.strategy != "model_summary" and recap.model is not None:
        yield (Where("recap", key="model"),
               f"[recap] model is only used by strategy model_summary (strategy is {recap.strategy!r}); "
               "remove it or change the strategy")
    if recap.model is not None:
        yield from _spec_problem(Where("recap", key="model"), recap.model, base)


def _analyzer_problems(i: int, a: AnalyzerTable, base: Path) -> Iterator[tuple[Where, str]]:
    at = Where("analyzers", i)
    head = label(at)
    if a.kind == "model":
        if a.model is None:
            yield Where("analyzers", i, "kind"), f"{head}kind model needs a model: add model = \"openai:MODEL\" (or another spec)"
        if not (a.prompt or "").strip():
            yield Where("analyzers", i, "kind"), f"{head}kind model needs a prompt: what should it look for?"
    unused = {
        "model": a.kind != "model" and a.model is not None,
        "prompt": a.kind != "model" and a.prompt is not None,
        "threshold": a.kind != "repeated_failures" and a.threshold is not None,
    }
    for key, is_unused in unused.items():
        if is_unused:
            yield Where("analyzers", i, key), f"{head}{key} is not used by kind {a.kind!r}; remove it or change the kind"
    if a.trigger != "period" and a.period_s is not None:
        yield Where("analyzers", i, "period_s"), f"{head}period_s is only used with trigger \"period\"; remove it or change the trigger"
    if a.kind == "model" and a.model is not None:
        yield from _spec_problem(Where("analyzers", i, "model"), a.model, base)


def _spec_problem(where: Where, spec: str, base: Path) -> Iterator[tuple[Where, str]]:
    name = f"{label(where)}{key_name(where)}"
    kind, colon, rest = spec.partition(":")
    if spec == "echo" or (kind == "openai" and colon and rest):
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
        return f"must be a URL: sqlite:PATH, jsonl:DIR or memory:, got {url!r}"
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
    return f"{scheme}:{_resolve(rest.removeprefix('//'), base)}"


def _model_spec(spec: str, base: Path) -> str:
    kind, _, rest = spec.partition(":")
    return f"scripted:{_resolve(rest, base)}" if kind == "scripted" else spec


def _blueprint(doc: BlueprintFile, source: str, base: Path) -> Blueprint:
    lim = doc.limits
    limits = None if lim is None else HistoryLimits(lim.max_entries, lim.max_tokens, lim.max_bytes,
                                                    lim.soft, lim.hard, lim.truncate)
    recap = None
    if doc.recap is not None:
        r = doc.recap
        recap = RecapSettings(r.strategy, r.window, r.batch, r.max_summary_chars, r.budget, r.max_retries)
    analyzers = tuple(_analyzer(a) for a in doc.analyzers)
    settings = AgentSettings(thread_id=doc.thread, system_prompt=doc.system_prompt, budget=doc.budget,
                             snapshot_every=doc.snapshot_every, limits=limits, pin_task=doc.pin_task,
                             lifecycle=doc.lifecycle,
                             recap=recap, analyzers=analyzers)
    return Blueprint(
        path=source,
        settings=settings,
        model=_model_spec(doc.model, base),
        recap_model=None if doc.recap is None or doc.recap.model is None else _model_spec(doc.recap.model, base),
        analyzer_models={a.name: _model_spec(a.model, base) for a in doc.analyzers if a.model is not None},
        store=None if doc.store is None else _store_url(doc.store, base),
        inputs=tuple(doc.inputs),
        pins=tuple(doc.pins),
        max_steps=doc.max_steps,
        apps=tuple(AppUse(a.use, a.options) for a in doc.apps),
        tools=tuple(t.use for t in doc.tools),
        folder=str(base),
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
