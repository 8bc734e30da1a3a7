"""The tracer provider a traced session uses when the program gave none: the program's global
one if it set one, else one made from the ``OTEL_*`` variables by the SDK's own means.

What the SDK reads itself is left to it: the service name and resource
(``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``), the sampler (``OTEL_TRACES_SAMPLER``),
the batching (``OTEL_BSP_*``) and each exporter's settings (``OTEL_EXPORTER_OTLP_ENDPOINT``,
``..._HEADERS``, ``..._TIMEOUT``...). Only ``OTEL_TRACES_EXPORTER`` is read here, and each name
is looked up where the SDK looks it up: the ``opentelemetry_traces_exporter`` entry points.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from importlib.metadata import entry_points

import trio
from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from ._notes import warn

EXPORTER_GROUP = "opentelemetry_traces_exporter"
"""The entry-point group where exporter packages register their names (the SDK's)."""
OTLP_TIMEOUT_S = 2.0
"""How long the OTLP/HTTP exporter tries to deliver one batch (retries included), unless
``OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT`` says otherwise: the SDK's 10 s kept a run whose
collector is not there waiting ~8 s at exit, retrying."""
_TIMEOUT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")


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
        timeout_s = None
        if name == "otlp_proto_http" and not any(os.environ.get(var, "").strip() for var in _TIMEOUT_VARS):
            timeout_s = OTLP_TIMEOUT_S
        exporter = exporter_cls() if timeout_s is None else exporter_cls(timeout=timeout_s)
        made.append(_SaysWhereItFailed(exporter, given, timeout_s) if name.startswith("otlp") else exporter)
    return made


class _SaysWhereItFailed(SpanExporter):
    """An OTLP exporter that says, once, in one line, which endpoint it could not deliver spans
    to (the exporter's own log lines do not name it; they are silenced, this one says more)."""

    def __init__(self, inner: SpanExporter, given: str, timeout_s: float | None) -> None:
        self.inner = inner
        self.given = given
        self.timeout_s = timeout_s
        """The timeout given to the exporter (``None``: its own, from the variables)."""
        self.endpoint = str(getattr(inner, "_endpoint", "") or _endpoint_from_env())
        self.said = False
        quiet = logging.getLogger("opentelemetry.exporter.otlp")
        if quiet.level == logging.NOTSET:  # (unless someone configured it)
            quiet.setLevel(logging.CRITICAL)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.FAILURE and not self.said:
            self.said = True
            warn(f"OTEL_TRACES_EXPORTER={self.given}: could not deliver spans to {self.endpoint} (no collector "
                 "answered, or it refused them): they are lost; start a collector there, or point "
                 "OTEL_EXPORTER_OTLP_ENDPOINT at one")
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _endpoint_from_env() -> str:
    """Where OTLP/HTTP traces go as the variables say (the SDK's default: localhost:4318)."""
    given = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if given:
        return given
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or "http://localhost:4318"
    return base.rstrip("/") + "/v1/traces"


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

