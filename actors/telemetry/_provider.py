"""The tracer provider a traced session uses when the program gave none: the program's global
one if it set one, else one made from the ``OTEL_*`` variables by the SDK's own means.

What the SDK reads itself is left to it: the service name and resource
(``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``), the sampler (``OTEL_TRACES_SAMPLER``),
the batching (``OTEL_BSP_*``) and each exporter's settings (``OTEL_EXPORTER_OTLP_ENDPOINT``,
``..._HEADERS``, ``..._TIMEOUT``...). Only ``OTEL_TRACES_EXPORTER`` is read here, and each name
is looked up where the SDK looks it up: the ``opentelemetry_traces_exporter`` entry points.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points

import trio
from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from ._notes import warn

EXPORTER_GROUP = "opentelemetry_traces_exporter"
"""The entry-point group where exporter packages register their names (the SDK's)."""


def exporter_name(name: str) -> str:
    """The entry point ``name`` of ``OTEL_TRACES_EXPORTER`` stands for.

    ``otlp`` is OTLP over HTTP (the exporter the extra installs), unless
    ``OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL`` says ``grpc``; the SDK's own default for it is
    gRPC, whose exporter (and its grpcio) the extra does not install.
    """
    if name != "otlp":
        return name
    protocol = (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "").strip()
    return "otlp_proto_grpc" if protocol == "grpc" else "otlp_proto_http"


def exporters_from_env() -> list[SpanExporter]:
    """The exporters ``OTEL_TRACES_EXPORTER`` names (comma-separated), made with their defaults
    (each reads its own variables); a name nothing provides is skipped with a warning."""
    made: list[SpanExporter] = []
    for given in os.environ.get("OTEL_TRACES_EXPORTER", "").split(","):
        given = given.strip().lower()
        if not given or given == "none":
            continue
        name = exporter_name(given)
        found = entry_points(group=EXPORTER_GROUP, name=name)
        if not found:
            known = sorted({ep.name for ep in entry_points(group=EXPORTER_GROUP)} | {"otlp"})
            warn(f"OTEL_TRACES_EXPORTER={given}: no installed exporter is called {name!r} (installed: "
                 f"{', '.join(known)}): its spans are not exported; name one of those, or install the package "
                 "that provides it")
            continue
        exporter_cls = next(iter(found)).load()
        made.append(exporter_cls())
    return made


def provider_from_env() -> tuple[trace.TracerProvider | None, bool]:
    """The provider to trace with and whether it is ours (to shut down when the session ends).

    ``(None, False)`` when no exporter could be made: the session runs untraced.
    """
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider):
        return current, False  # the program set its own: use it, and leave it to the program
    exporters = exporters_from_env()
    if not exporters:
        return None, False
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        # (set only when the variables name no service: theirs wins)
        resource = resource.merge(Resource({SERVICE_NAME: "livecontext"}))
    provider = TracerProvider(resource=resource)
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider, True


async def shut_down(provider: trace.TracerProvider) -> None:
    """Export what is left and stop ``provider``'s exporters, in a thread (it blocks on I/O);
    a cancel does not cut it short: spans still buffered would be lost."""
    shutdown = getattr(provider, "shutdown", None)
    if shutdown is None:  # (an API-only provider has nothing to flush)
        return
    with trio.CancelScope(shield=True):
        await trio.to_thread.run_sync(shutdown)

