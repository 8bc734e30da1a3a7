"""OpenTelemetry spans of a running agent or system (optional: ``pip install 'livecontext[otel]'``).

A session is traced when the program gives a ``tracer_provider`` to
:func:`~livecontext.open_agent` / :func:`~livecontext.open_system`, or when the environment
asks for traces the OpenTelemetry way: ``OTEL_TRACES_EXPORTER`` names an exporter (``console``,
``otlp``...) and ``OTEL_SDK_DISABLED`` is not ``true``. Otherwise nothing of OpenTelemetry is
imported, even with the extra installed, and nothing runs differently. Configured without the
extra, a session runs untraced and says so in one warning line (see :func:`open_tracing`).

The spans follow the OpenTelemetry GenAI semantic conventions: ``invoke_workflow {name}`` for
the session, ``invoke_agent {thread}`` for each turn of an agent (from the input it takes to
its answer), ``chat {model}`` for each model call and ``execute_tool {name}`` for each tool
call, parented along the messages' causation ids (a sub-agent's turn under the tool call that
ran it); folds, edits and notifications of a history are span events. :mod:`._spans` says
how each is read from the runtime's audit records.

This package imports OpenTelemetry only inside :func:`open_tracing`, once tracing is on: the
kernel and the actors know nothing of it.
"""

from __future__ import annotations

from ._notes import EXTRA_HINT
from ._switch import open_tracing, tracing_configured

__all__ = ["EXTRA_HINT", "open_tracing", "tracing_configured"]
