"""Pure data: ids, envelopes, messages, history entries, levels of detail, tool specs.

No I/O and no trio here: everything in this package can be built, compared and serialized
(through :func:`livecontext.protocol.wire.make_converter`) without a running runtime.

Its names live in a few public modules, each named for what it holds; import them from
there (``from livecontext.protocol.agent import RunUntilIdle``):

- :mod:`livecontext.protocol.kernel`: what the actor kernel moves: actor ids, topics,
  message ids, the ``Message`` base class, the ``Envelope``, the kernel's own messages;
- :mod:`livecontext.protocol.history`: what a thread's history holds and a model is shown:
  content and its levels of detail, tools, history entries, chat, the engine's state and
  the task's status;
- :mod:`livecontext.protocol.agent`: messages between the actors of one agent (engine,
  history store, app host, input source, status, spend ledger);
- :mod:`livecontext.protocol.context`: messages of context management (reflection, edits,
  folds into a recap, limits);
- :mod:`livecontext.protocol.system`: messages of a system of agents (switchboard, its log);
- :mod:`livecontext.protocol.records`: what a thread's event log stores (records, settings,
  apps' effects and windows, lifecycle marks);
- :mod:`livecontext.protocol.mcp`: messages to the actors holding MCP servers' connections,
  and the record of a server restarted;
- :mod:`livecontext.protocol.wire`: the converter and schema versions, JSON, the catalog of
  tagged classes, the registry of apps' effect types, and the protocol's errors.

Each holds a short ``__all__``; a name is exported by one of them only. The underscored
modules are their implementation.
"""

_MODULES = ("kernel", "history", "agent", "context", "system", "records", "wire", "mcp")


def __getattr__(name: str) -> object:
    """A name imported from the package itself, as before it had public modules (``from
    livecontext.protocol import RunUntilIdle``): the object of the module that holds it now,
    with a :class:`DeprecationWarning` naming that module. Anything else is an AttributeError
    (so that ``from livecontext.protocol import agent`` imports the module)."""
    if not name.startswith("_"):
        import importlib
        import warnings

        for module_name in _MODULES:
            module = importlib.import_module(f"{__name__}.{module_name}")
            if name in module.__all__:
                warnings.warn(f"import {name} from {__name__}.{module_name}: {__name__} itself re-exports "
                              f"no names any more (this import still works, with this warning)",
                              DeprecationWarning, stacklevel=2)
                return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
