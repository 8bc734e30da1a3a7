"""A loaded blueprint: the agent's settings, its models' specs, and what ``run`` should feed it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs
from attrs import field, frozen

from livecontext.runtime import UsageError

from ..agent import AgentSettings
from ..agent import SubAgents
from ..agent import check_thread_id
from ..apps import App, FunctionTools, Notebook, importable, make_app
from ..mcp import McpServer, McpTools

BUILTIN_APPS: Mapping[str, type[App]] = MappingProxyType({"notebook": Notebook, "subagents": SubAgents})
"""The apps a blueprint (``[[apps]] use = NAME``) and ``--app NAME`` name by name: the Memory
Notebook, and the sub-agents (``spawn_subagent``; options ``model``, ``timeout_s``,
``max_steps``; without ``model`` they run on the agent's own model)."""


def _readonly(value: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(value))


def _options(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


@frozen
class AppUse:
    """One app of a blueprint: a built-in's name (see :data:`BUILTIN_APPS`) or the import path
    ``module:Class`` of an App class, and the keyword arguments it is made with."""

    use: str
    options: Mapping[str, Any] = field(factory=dict, converter=_options, hash=False)

    def make(self) -> App:
        """A new instance (the blueprint's folder is importable: see :meth:`Blueprint.make_apps`).

        Raises:
            AppDefinitionError: the path names no App class, or it cannot be made so.
        """
        if self.use in BUILTIN_APPS:
            return BUILTIN_APPS[self.use](**self.options)
        return make_app(self.use, self.options)


@frozen
class Blueprint:
    """Everything a blueprint file describes, ready for :func:`~livecontext.actors.spawn_agent`.

    Model specs are strings (``echo``, ``scripted:PATH``, ``openai:MODEL``): a blueprint
    describes a system and opens nothing; :func:`open_blueprint_models` opens the recap's and
    the analyzers' clients. Relative paths in the file (a ``scripted:`` script, a ``sqlite:``
    or ``jsonl:`` store) are already resolved against the blueprint's folder.
    """

    path: str
    """The file it was loaded from, as it was given."""
    settings: AgentSettings
    """The thread id, system prompt, budget, snapshots, limits, recap and analyzers."""
    model: str = "echo"
    """The agent's model spec."""
    recap_model: str | None = None
    """The recap's model spec (only for the ``model_summary`` strategy)."""
    analyzer_models: Mapping[str, str] = field(factory=dict, converter=_readonly, hash=False)
    """The model spec of each ``model`` analyzer, by analyzer name."""
    store: str | None = None
    """The event store URL; ``None``: the default store."""
    inputs: tuple[str, ...] = ()
    """Inputs fed, in order, each time the engine waits for input."""
    pins: tuple[str, ...] = ()
    """Pinned inputs (CRITICAL: never folded, always rendered), fed before :attr:`inputs`."""
    max_steps: int | None = None
    """Stop after this many engine steps; ``None``: run until idle."""
    apps: tuple[AppUse, ...] = (AppUse("notebook"),)
    """The agent's apps (``[[apps]]``, or the built-ins switched on under ``[apps]``)."""
    tools: tuple[str, ...] = ()
    """Functions offered as tools, by import path ``module:function`` (``[[tools]]``)."""
    mcp: tuple[McpServer, ...] = ()
    """MCP servers whose tools are offered (``[[mcp]]``), one app each (``mcp.NAME``)."""
    folder: str = ""
    """The blueprint's folder: importable while its apps and tools are made."""

    def make_apps(self) -> list[App]:
        """New instances of the blueprint's apps, then one :class:`FunctionTools` app for its
        tools, for ``spawn_agent(apps=...)``; modules are imported from the blueprint's folder
        too.

        Raises:
            AppDefinitionError: an app's path names no App class, or it cannot be made so.
            ToolDefinitionError: a tool's path names no function, or it cannot be a tool.
        """
        with importable(self.folder):
            apps = [app.make() for app in self.apps]
            if self.tools:
                apps.append(FunctionTools(self.tools))
        apps += [McpTools.of(server) for server in self.mcp]
        return apps

    def override(
        self, *, model: str | None = None, store: str | None = None, thread: str | None = None,
        inputs: Sequence[str] | None = None, system_prompt: str | None = None,
        budget: int | None = None, max_steps: int | None = None, pins: Sequence[str] | None = None,
        pin_task: bool | None = None, lifecycle: bool | None = None,
    ) -> Blueprint:
        """A copy with the given values in place of the file's; ``None`` keeps the file's value.

        This is what ``livecontext run BLUEPRINT.toml`` does with the flags given on its
        command line. ``inputs`` (and ``pins``) replace the file's as a whole. Paths in ``model`` and
        ``store`` are taken as they are (from the current directory, like any flag).

        Raises:
            UsageError: ``thread`` is not a usable thread id, or ``budget`` / ``max_steps``
                is below 1.
        """
        settings = self.settings
        if thread is not None:
            settings = attrs.evolve(settings, thread_id=check_thread_id(thread))
        if system_prompt is not None:
            settings = attrs.evolve(settings, system_prompt=system_prompt)
        if budget is not None:
            if budget < 1:
                raise UsageError(f"budget must be >= 1, got {budget}")
            settings = attrs.evolve(settings, budget=budget)
        if pin_task is not None:
            settings = attrs.evolve(settings, pin_task=pin_task)
        if lifecycle is not None:
            settings = attrs.evolve(settings, lifecycle=lifecycle)
        if max_steps is not None and max_steps < 1:
            raise UsageError(f"max_steps must be >= 1, got {max_steps}")
        return attrs.evolve(
            self,
            settings=settings,
            model=self.model if model is None else model,
            store=self.store if store is None else store,
            inputs=self.inputs if inputs is None else tuple(inputs),
            pins=self.pins if pins is None else tuple(pins),
            max_steps=self.max_steps if max_steps is None else max_steps,
        )

