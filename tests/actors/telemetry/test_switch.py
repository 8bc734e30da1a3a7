"""When tracing is on, and what a traced run gives (issue 18, point 3): nothing of
OpenTelemetry is imported unless asked for; without the extra, a configured run goes on
untraced and says so in one line; ``console`` prints the spans, ``otlp`` posts them to a
collector; a provider the program set is used as it is.

Each run is a real process (the module fixture starts them together: each spends most of its
time importing), so that what it imports and prints is its own.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from attrs import frozen
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import livecontext
from livecontext.actors.telemetry import EXTRA_HINT, tracing_configured
from livecontext.runtime.models import ScriptedModel

SCRIPT = {"turns": [
    {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
    {"text": "five"},
]}

TOOLS = '''
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''

BLOCK_OPENTELEMETRY = '''
import sys
class _NoOpenTelemetry:
    """Makes the otel extra look uninstalled: every opentelemetry module fails to import."""
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _NoOpenTelemetry())
'''

CLI = "from livecontext._command import main; main()"

UNTRACED_AGENT = '''
import sys, trio, livecontext
from livecontext.actors.cli import main
from livecontext.runtime.models import ScriptedModel
from tools_for_otel import add

async def run() -> None:
    model = ScriptedModel.from_turns(TURNS)
    async with livecontext.open_agent(model=model, tools=[add]) as agent:
        assert (await agent.send("add 2 and 3")).text == "five"

trio.run(run)
try:
    main(["run", "--store", "memory:", "--model", "scripted:script.json", "--tool", "tools_for_otel:add",
          "--input", "add 2 and 3"])
except SystemExit as done:
    assert not done.code, done.code
print(sorted(name for name in sys.modules if name.startswith("opentelemetry")))
'''

THEIR_PROVIDER = '''
import trio, livecontext
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from livecontext.runtime.models import ScriptedModel
from tools_for_otel import add

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

async def run() -> None:
    async with livecontext.open_agent(model=ScriptedModel.from_turns(TURNS), tools=[add]) as agent:
        await agent.send("add 2 and 3")

trio.run(run)
print("THEIRS", sorted(span.name for span in exporter.get_finished_spans()))
'''


@frozen
class Ran:
    code: int
    out: str
    err: str


class Collector(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP collector that keeps every ``POST /v1/traces`` body it gets."""

    posts: list[tuple[str, str, bytes]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Collector.posts.append((self.path, self.headers.get("Content-Type", ""), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
        pass


@pytest.fixture(scope="module")
def collector() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory, collector: str) -> dict[str, Ran]:
    tmp = tmp_path_factory.mktemp("otel")
    (tmp / "script.json").write_text(json.dumps(SCRIPT))
    (tmp / "tools_for_otel.py").write_text(TOOLS)
    turns = f"TURNS = {SCRIPT['turns']!r}\n"
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    base.update(COLUMNS="200", NO_COLOR="1", PYTHONPATH=str(tmp))
    run_args = ["run", "--store", "memory:", "--model", "scripted:script.json", "--tool", "tools_for_otel:add",
                "--input", "add 2 and 3"]
    runs = {
        "untraced": ([turns + UNTRACED_AGENT], {}),
        "no_extra": ([BLOCK_OPENTELEMETRY + CLI, *run_args], {"OTEL_TRACES_EXPORTER": "console"}),
        "console": ([CLI, *run_args], {"OTEL_TRACES_EXPORTER": "console"}),
        "otlp": ([CLI, *run_args], {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": collector,
                                    "OTEL_SERVICE_NAME": "otel-test"}),
        "theirs": ([turns + THEIR_PROVIDER], {"OTEL_TRACES_EXPORTER": "console"}),
        "no_collector": ([CLI, *run_args], {"OTEL_TRACES_EXPORTER": "otlp",
                                            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{closed_port()}"}),
    }
    procs = {name: subprocess.Popen([sys.executable, "-c", *args], cwd=tmp, env={**base, **env}, text=True,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for name, (args, env) in runs.items()}
    results = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        results[name] = Ran(proc.returncode, out, err)
    return results


def closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on (bound, then let go: connecting to it is refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_otlp_with_no_collector_says_in_one_line_which_endpoint_it_could_not_reach(ran: dict[str, Ran]) -> None:
    result = ran["no_collector"]
    assert result.code == 0, result.err
    assert "five" in result.out
    (line,) = result.err.strip().splitlines()  # (the exporter's own lines, which name no endpoint, are not shown)
    assert line.startswith("livecontext: warning: OTEL_TRACES_EXPORTER=otlp: could not deliver spans to "
                           "http://127.0.0.1:"), line
    assert line.endswith("/v1/traces (no collector answered, or it refused them): they are lost; start a collector "
                         "there, or point OTEL_EXPORTER_OTLP_ENDPOINT at one"), line


def test_the_otlp_exporter_gives_up_on_a_batch_after_a_short_timeout_unless_told_otherwise(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from livecontext.actors.telemetry._provider import OTLP_TIMEOUT_S, exporters_from_env

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    for var in ("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_PROTOCOL",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_ENDPOINT",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    (made,) = exporters_from_env()
    assert made.timeout_s == OTLP_TIMEOUT_S == 2.0  # type: ignore[attr-defined]
    assert made.endpoint == "http://localhost:4318/v1/traces"  # type: ignore[attr-defined]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "7")
    (made,) = exporters_from_env()
    assert made.timeout_s is None  # type: ignore[attr-defined]  # (the exporter reads the variable itself)


def spans_printed(out: str) -> list[dict[str, object]]:
    """The span objects the console exporter printed (each a JSON object) among other lines."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (start := out.find('{\n    "name": ', at)) != -1:
        span, at = decoder.raw_decode(out, start)
        found.append(span)
    return found


def test_an_untraced_run_imports_nothing_of_opentelemetry_although_it_is_installed(ran: dict[str, Ran]) -> None:
    result = ran["untraced"]
    assert result.code == 0, result.err
    assert result.out.strip().splitlines()[-1] == "[]"


def test_a_run_asked_for_traces_without_the_extra_goes_on_untraced_and_says_so_in_one_line(
        ran: dict[str, Ran]) -> None:
    result = ran["no_extra"]
    assert result.code == 0, result.err
    assert "five" in result.out and not spans_printed(result.out)
    (line,) = result.err.strip().splitlines()
    assert line == ("livecontext: warning: OTEL_TRACES_EXPORTER=console asks for traces but the otel extra is not "
                    f"installed (no module opentelemetry): running without traces; install it with {EXTRA_HINT}")


def test_the_console_exporter_prints_the_spans_of_a_cli_run_as_json(ran: dict[str, Ran]) -> None:
    result = ran["console"]
    assert result.code == 0, result.err
    spans = spans_printed(result.out)
    names = sorted(str(span["name"]) for span in spans)
    assert names == ["chat scripted", "chat scripted", "execute_tool add", "invoke_agent main",
                     "invoke_workflow main"]
    (chat, _) = [s for s in spans if s["name"] == "chat scripted"]
    attributes = chat["attributes"]
    assert isinstance(attributes, dict) and attributes["gen_ai.operation.name"] == "chat"
    resource = spans[0]["resource"]
    assert isinstance(resource, dict) and resource["attributes"]["service.name"] == "livecontext"


def test_the_otlp_exporter_posts_the_spans_to_the_collector_the_variables_name(ran: dict[str, Ran]) -> None:
    result = ran["otlp"]
    assert result.code == 0, result.err
    posts = [(path, kind, body) for path, kind, body in Collector.posts]
    assert posts and {(path, kind) for path, kind, _ in posts} == {("/v1/traces", "application/x-protobuf")}
    names, services = [], set()
    for _, _, body in posts:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            services |= {a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"}
            names += [span.name for scope in resource_spans.scope_spans for span in scope.spans]
    assert sorted(names) == ["chat scripted", "chat scripted", "execute_tool add", "invoke_agent main",
                             "invoke_workflow main"]
    assert services == {"otel-test"}  # OTEL_SERVICE_NAME, read by the SDK itself


def test_a_tracer_provider_the_program_set_gets_the_spans_instead_of_one_made_from_the_variables(
        ran: dict[str, Ran]) -> None:
    result = ran["theirs"]
    assert result.code == 0, result.err
    assert not spans_printed(result.out)  # (OTEL_TRACES_EXPORTER=console made no exporter of ours)
    assert result.out.strip().splitlines()[-1] == (
        "THEIRS ['chat scripted', 'chat scripted', 'execute_tool add', 'invoke_agent main', 'invoke_workflow main']")


def test_traces_are_asked_for_by_naming_an_exporter_unless_the_sdk_is_disabled() -> None:
    assert not tracing_configured({})
    assert not tracing_configured({"OTEL_TRACES_EXPORTER": "none"})
    assert not tracing_configured({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "TRUE"})
    assert tracing_configured({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "false"})
    assert tracing_configured({"OTEL_TRACES_EXPORTER": "otlp,console"})


async def test_an_exporter_nothing_provides_is_named_in_one_line_and_the_run_goes_on(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
    model = ScriptedModel.from_turns([{"text": "hello back"}])
    async with livecontext.open_agent(model=model) as agent:
        reply = await agent.send("hello")
    assert reply.text == "hello back"
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == ("livecontext: warning: OTEL_TRACES_EXPORTER=zipkin: no installed exporter is called 'zipkin' "
                    "(installed: console, otlp, otlp_proto_http): its spans are not exported; name one of those, "
                    "or install the package that provides it")


def test_the_block_of_opentelemetry_in_these_tests_is_what_a_missing_extra_looks_like(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", BLOCK_OPENTELEMETRY + textwrap.dedent('''
        try:
            import opentelemetry.trace
        except ModuleNotFoundError as exc:
            print(exc.name)
        ''')], capture_output=True, text=True, timeout=60, check=True, cwd=tmp_path)
    assert done.stdout.strip() == "opentelemetry"
