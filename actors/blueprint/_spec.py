"""One agent's settings as one value: :class:`AgentSpec`, what a blueprint's keys, the keywords
of :func:`~livecontext.open_agent` and the flags of ``livecontext run`` / ``chat`` all say.

Every way of building an agent makes one and opens it with
:func:`~livecontext.actors.front.open_agent_from`, so that defaults, checks and the rules for
resuming a thread live in one place.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

import attrs
from attrs import field, frozen

from livecontext.runtime import UsageError
from livecontext.runtime.models import ModelClient
from livecontext.runtime.persistence import EventStore

from ..agent import SETTINGS, AgentSettings
from ..agent import check_thread_id
from ..analyzers import AnalyzerSettings
from ..apps import App, FunctionTools, Notebook, importable
from ..mcp import McpServer, McpTools, mcp_servers
from ..engine import ApprovalPolicy
from ..history import ContextPolicy, HistoryLimits
from ..recap import RecapSettings
from ..spend import SpendLimits, override_limits
from ._blueprint import AppUse, Blueprint


class NotGiven(enum.Enum):
    """The type of :data:`NOT_GIVEN`, its one value (as PEP 484 writes a sentinel)."""

    NOT_GIVEN = "not given"

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Final = NotGiven.NOT_GIVEN
"""A setting left out: a resumed thread keeps the value it recorded, a new one gets the
default (``None``, where a setting takes it, means "none": no recap, no limits)."""

ToolLike = Callable[..., Any] | str
"""A tool: a function (marked with ``@tool`` or not) or its import path ``module:function``."""

def _tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value)


def _maybe_tuple(value: Any) -> Any:
    return value if value is NOT_GIVEN else tuple(value)


def _apps(value: Any) -> tuple[App | AppUse, ...] | None:
    if value is None:
        return None
    return tuple(AppUse(a) if isinstance(a, str) else a for a in value)


def _approval(value: Any) -> ApprovalPolicy | NotGiven:
    return value if value is NOT_GIVEN else ApprovalPolicy.of(value)


def _readonly(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


@frozen(kw_only=True)
class AgentSpec:
    """Everything that says how to build one agent: its thread, model, settings, apps, tools
    and what it is fed (a blueprint's keys, one field each).

    A resumable setting (``budget``, ``context``, ``limits``, ``recap``, ``analyzers``,
    ``spend``, ``pin_task``, ``lifecycle``) left :data:`NOT_GIVEN` is the one a resumed thread
    recorded, else the default; one given that differs from the recorded one is used and
    said in one line. Values are checked when it is made: a bad one raises
    :class:`~livecontext.UsageError` naming the field.
    """

    thread: str = "main"
    """The thread id; an existing thread is resumed."""
    model: str | ModelClient | None = None
    """A model spec (``echo``, ``scripted:PATH``, ``openai:MODEL``) or an open client;
    ``None``: the one a resumed thread recorded, else ``echo``."""
    system_prompt: str | None = None
    """``None``: a resumed thread keeps its own (a new one gets the default prompt)."""
    budget: int | NotGiven = NOT_GIVEN
    """Token budget of each model call's context (default 8000)."""
    context: ContextPolicy | NotGiven = NOT_GIVEN
    """How each call's context is rendered (default: the ``stable`` policy)."""
    limits: HistoryLimits | None | NotGiven = NOT_GIVEN
    """Limits of the unfolded history (default none: derived from the budget when a recap runs)."""
    recap: RecapSettings | None | NotGiven = NOT_GIVEN
    """Run a recap maintainer with these settings (default none)."""
    analyzers: tuple[AnalyzerSettings, ...] | NotGiven = field(default=NOT_GIVEN, converter=_maybe_tuple)
    """Analyzers run beside the engine (default none)."""
    spend: SpendLimits | None | NotGiven = NOT_GIVEN
    """Spend limits (default none)."""
    spend_override: SpendLimits | None = None
    """Limits put in place of the same limits of the spend the thread runs with (``spend``,
    else the recorded one): what ``run --max-cost`` and its kin give."""
    pin_task: bool | NotGiven = NOT_GIVEN
    """Pin the thread's first input (default ``True``)."""
    lifecycle: bool | NotGiven = NOT_GIVEN
    """Offer the control tools ``task_complete``, ``task_abandon``, ``output`` and
    ``wait_user_response`` (default ``True``)."""
    approval: ApprovalPolicy | NotGiven = field(default=NOT_GIVEN, converter=_approval)
    """Which tool calls wait for a person's approval besides those whose tool requires it:
    tool names, a function ``(call, spec) -> bool`` or its import path ``module:function``
    (given as any of those; default none)."""
    snapshot_every: int = AgentSettings().snapshot_every
    """Snapshot the thread every this many log records (0: never)."""
    recap_model: str | ModelClient | None = None
    """The recap's model (``model_summary``); ``None``: the one a resumed thread recorded."""
    analyzer_models: Mapping[str, str | ModelClient] = field(factory=dict, converter=_readonly, hash=False)
    """Each ``model`` analyzer's model, by analyzer name (one not named: the recorded one)."""
    apps: tuple[App | AppUse, ...] | None = field(default=None, converter=_apps)
    """The apps (instances, or how to make them); ``None``: with no :attr:`tools`, the ones a
    resumed thread recorded, else a Memory Notebook."""
    tools: tuple[ToolLike, ...] = field(default=(), converter=_tuple)
    """Functions (or their import paths) offered as tools, in one app beside :attr:`apps`."""
    mcp: tuple[McpServer, ...] = field(default=(), converter=mcp_servers)
    """MCP servers whose tools are offered, one app each (``mcp.NAME``) beside :attr:`apps`
    (given as :class:`McpServer` or mappings of its keys)."""
    folder: str = ""
    """A folder importable while the apps and tools are made (a blueprint's)."""
    store: str | EventStore | None = None
    """A store URL or an open store; ``None``: ``memory:``."""
    inputs: tuple[str, ...] = field(default=(), converter=_tuple)
    """Inputs fed when the agent opens."""
    pins: tuple[str, ...] = field(default=(), converter=_tuple)
    """Pinned inputs fed when the agent opens, before :attr:`inputs`."""
    max_steps: int | None = None
    """Default step limit of each run."""
    cut_oversized: bool = False
    """Take a pinned input larger than the room and send it cut, rather than refuse it."""
    given_by: Mapping[str, str] = field(factory=dict, converter=_readonly, eq=False, hash=False)
    """How each setting given was given, as a change is said (``--budget``, ``blueprint
    PATH``); default ``NAME=``. Not part of the spec's value."""

    def __attrs_post_init__(self) -> None:
        check_thread_id(self.thread)
        _at_least("budget", self.budget, 1)
        _at_least("max_steps", self.max_steps, 1)
        _at_least("snapshot_every", self.snapshot_every, 0)
        _one_of("model", self.model, (str, ModelClient), "a model spec (echo, scripted:PATH, openai:MODEL) or a ModelClient")
        _one_of("recap_model", self.recap_model, (str, ModelClient), "a model spec or a ModelClient")
        _one_of("system_prompt", self.system_prompt, (str,), "text")
        _one_of("context", self.context, (ContextPolicy,), "a ContextPolicy")
        _one_of("limits", self.limits, (HistoryLimits,), "HistoryLimits")
        _one_of("recap", self.recap, (RecapSettings,), "RecapSettings")
        _one_of("spend", self.spend, (SpendLimits,), "SpendLimits")
        for name in ("pin_task", "lifecycle", "cut_oversized"):
            _one_of(name, getattr(self, name), (bool,), "True or False", optional=False)
        if self.analyzers is not NOT_GIVEN:
            for a in self.analyzers:
                _one_of("analyzers", a, (AnalyzerSettings,), "a list of AnalyzerSettings", optional=False)
        for name in ("inputs", "pins"):
            for text in getattr(self, name):
                _one_of(name, text, (str,), "a list of texts", optional=False)

    @classmethod
    def from_blueprint(cls, bp: Blueprint) -> AgentSpec:
        """The spec a blueprint describes: every setting given (said ``blueprint PATH``)."""
        s = bp.settings
        return cls(
            thread=s.thread_id, model=bp.model, system_prompt=s.system_prompt, budget=s.budget, context=s.context,
            limits=s.limits, recap=s.recap, analyzers=s.analyzers, spend=s.spend, pin_task=s.pin_task,
            lifecycle=s.lifecycle, approval=s.approval, snapshot_every=s.snapshot_every, recap_model=bp.recap_model,
            analyzer_models=bp.analyzer_models, apps=bp.apps, tools=bp.tools, mcp=bp.mcp, folder=bp.folder, store=bp.store,
            inputs=bp.inputs, pins=bp.pins, max_steps=bp.max_steps,
            given_by={name: f"blueprint {bp.path}" for name in SETTINGS})

    def given(self, **values: Any) -> AgentSpec:
        """A copy with ``values`` in place of its own, each said as ``NAME=`` if it changes
        what a resumed thread recorded (an existing ``given_by`` label of it is dropped)."""
        return attrs.evolve(self, **values, given_by={k: v for k, v in self.given_by.items() if k not in values})

    def label(self, name: str) -> str:
        """How setting ``name`` was given, as a change of it is said."""
        return self.given_by.get(name, f"{name}=")

    def settings(self) -> tuple[AgentSettings, dict[str, str]]:
        """The settings it gives (defaults for those not given) and, for each setting given,
        its :meth:`label`; :attr:`spend_override` is not applied (see :meth:`with_override`)."""
        values = {name: getattr(self, name) for name in SETTINGS}
        given = {name: value for name, value in values.items() if value is not NOT_GIVEN}
        settings = AgentSettings(thread_id=self.thread, system_prompt=self.system_prompt,
                                 snapshot_every=self.snapshot_every,
                                 folder=os.path.abspath(self.folder) if self.folder else "", **given)
        return settings, {name: self.label(name) for name in given}

    def make_apps(self) -> list[App]:
        """New instances of its apps (those given as instances: themselves), then one
        :class:`FunctionTools` app for its tools; :attr:`folder` is importable meanwhile.
        No apps given: a Memory Notebook.

        Raises:
            AppDefinitionError: an app's path names no App class, or it cannot be made so.
            ToolDefinitionError: a tool's path names no function, or it cannot be a tool.
        """
        with importable(self.folder):
            apps: list[App] = [a.make() if isinstance(a, AppUse) else a for a in self.apps] if (
                self.apps is not None) else [Notebook()]
            if self.tools:
                apps.append(FunctionTools(self.tools))
        apps += [McpTools.of(server) for server in self.mcp]
        return apps

    def with_override(self, settings: AgentSettings) -> AgentSettings:
        """``settings`` with :attr:`spend_override`'s limits in place of its spend's."""
        o = self.spend_override
        if o is None:
            return settings
        return attrs.evolve(settings, spend=override_limits(
            settings.spend, max_input_tokens=o.max_input_tokens, max_output_tokens=o.max_output_tokens,
            max_cost=o.max_cost))


def _at_least(name: str, value: object, least: int) -> None:
    if value is None or value is NOT_GIVEN:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise UsageError(f"{name} must be >= {least}, got {value!r}")


def _one_of(name: str, value: object, kinds: tuple[type, ...], what: str, *, optional: bool = True) -> None:
    if value is NOT_GIVEN or (optional and value is None) or isinstance(value, kinds):
        return
    raise UsageError(f"{name} must be {what}, got {type(value).__name__} {value!r}")
