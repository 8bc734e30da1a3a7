"""Whether a session is traced, and :func:`open_tracing`, which traces it.

Kept free of OpenTelemetry imports: deciding that a session is not traced must cost nothing
and import nothing (a test pins it).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from livecontext.runtime import Runtime

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

from ._notes import EXTRA_HINT, warn


def tracing_configured(env: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for traces: ``OTEL_TRACES_EXPORTER`` names an exporter
    (``none`` names none) and ``OTEL_SDK_DISABLED`` is not ``true``.

    An unset ``OTEL_TRACES_EXPORTER`` means no traces here, although the SDK's own default
    is ``otlp``: a program that merely has the extra installed must not start exporting.
    """
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    return bool(exporters) and exporters != "none"


@asynccontextmanager
async def open_tracing(rt: Runtime, workflow: str, *,
                       tracer_provider: TracerProvider | None = None) -> AsyncIterator[None]:
    """Trace what the actors of ``rt`` do while the block runs, if tracing is on.

    Tracing is on when ``tracer_provider`` is given (spans go to it; it stays the caller's
    to flush and shut down) or when :func:`tracing_configured`; then spans go to the
    program's global tracer provider if it set one, else to one made from the ``OTEL_*``
    variables, flushed and shut down when the block ends. The session's own span is
    ``invoke_workflow {workflow}``.

    Configured by the environment without the ``otel`` extra, the block runs untraced and a
    warning on stderr says so in one line: the variables are often set for a whole machine or
    container, and a run that refused to start because of them would be worse than a run
    without traces.
    """
    if tracer_provider is None and not tracing_configured():
        yield
        return
    try:
        from ._spans import trace_runtime  # (imports OpenTelemetry)
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("opentelemetry"):
            raise
        warn(f"OTEL_TRACES_EXPORTER={os.environ.get('OTEL_TRACES_EXPORTER', '')} asks for traces but the otel "
             f"extra is not installed (no module {exc.name}): running without traces; install it with {EXTRA_HINT}")
        yield
        return
    async with trace_runtime(rt, workflow, tracer_provider):
        yield
