"""OpenTelemetry across the SDK boundary, both ways (`cargo xtask interop`'s OpenTelemetry cells).

    python otel_interop.py --rust-server PATH --rust-client PATH
    python otel_interop.py serve --http PORT     (interop_server.py, its spans exported)

An OTLP/HTTP receiver on loopback decodes what it receives with OpenTelemetry's own protobuf
definitions (`opentelemetry-proto`). Then, in each era:

- python → rust: the Python SDK's client (its spans exported by the Python OpenTelemetry SDK)
  runs every interop flow inside one root span against our `interop-server` (exporting with
  the `otel` feature, `OTEL_EXPORTER_OTLP_ENDPOINT`). Every server span of ours must be in the
  Python root's trace, the child of the Python client span that sent its request.
- rust → python: our `interop-client` (exporting the same way) runs every flow against the
  Python twin server (`serve` below). Every Python server span must be the child of the span
  of ours that sent its request, in its trace; in 2025-11-25, where the Python server asks its
  questions mid-call, our client's handling of each question must be the child of the Python
  span that sent it.

One line per check; exit status 1 if any fails.
"""

import argparse
import os
import runpy
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
SERVER, CLIENT = 2, 3  # opentelemetry.proto.trace.v1.Span.SpanKind


@dataclass
class Span:
    service: str
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent: str
    attributes: dict[str, str] = field(default_factory=dict)


class Receiver:
    """An OTLP/HTTP receiver: decodes each `/v1/traces` body as an `ExportTraceServiceRequest`."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        spans: list[Span] = []
        lock = threading.Lock()
        self.spans = spans
        self.lock = lock

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server API)
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.path == "/v1/traces":
                    request = ExportTraceServiceRequest()
                    request.ParseFromString(body)
                    with lock:
                        spans.extend(decode(request))
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self) -> list[Span]:
        with self.lock:
            taken = list(self.spans)
            self.spans.clear()
        return taken


def text(value: Any) -> str:
    kind = value.WhichOneof("value")
    return str(getattr(value, kind)) if kind else ""


def decode(request: Any) -> list[Span]:
    spans = []
    for resource_spans in request.resource_spans:
        resource = {a.key: text(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    Span(
                        service=resource.get("service.name", ""),
                        name=span.name,
                        kind=span.kind,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent=span.parent_span_id.hex(),
                        attributes={a.key: text(a.value) for a in span.attributes},
                    )
                )
    return spans


def install_tracing(service: str) -> Any:
    """The Python OpenTelemetry SDK exporting to OTEL_EXPORTER_OTLP_ENDPOINT, span by span."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the server did not accept connections within 60 s")


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (our servers drain and flush their exporters), then SIGKILL after 20 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def otel_env(receiver: Receiver, service: str) -> dict[str, str]:
    return {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": service}


Check = tuple[str, Callable[[], str | None]]


def python_to_rust(receiver: Receiver, rust_server: str, era: str, logs: Path) -> list[Check]:
    """The Python client's trace, continued by our server."""
    import anyio
    from opentelemetry import trace

    sys.path.insert(0, str(HERE))
    import interop_client

    port = free_port()
    log = open(logs / f"otel-py-client-{era}.server.log", "wb")
    server = subprocess.Popen(
        [rust_server, "--http", f"127.0.0.1:{port}"], env=otel_env(receiver, "interop-server"), stdout=log, stderr=log
    )
    try:
        wait_ready(port, server)
        tracer = trace.get_tracer("otel-interop")
        with tracer.start_as_current_span(f"python client, {era}") as root:
            failures = anyio.run(interop_client.run, f"http://127.0.0.1:{port}/mcp", era)
            trace_id = format(root.get_span_context().trace_id, "032x")
    finally:
        stop(server)
    spans = receiver.take()
    ours = [s for s in spans if s.service == "interop-server" and s.kind == SERVER]
    theirs = {s.span_id: s for s in spans if s.service == "python-client" and s.kind == CLIENT}

    def flows() -> str | None:
        return None if failures == 0 else f"{failures} flow(s) failed"

    def same_trace() -> str | None:
        if len(ours) < 10:
            return f"only {len(ours)} server spans of ours arrived"
        strays = [s.name for s in ours if s.trace_id != trace_id]
        return f"{len(strays)} of our spans are not in the Python trace: {strays[:5]}" if strays else None

    def parents() -> str | None:
        orphans = [s.name for s in ours if s.parent not in theirs]
        if orphans:
            return f"{len(orphans)} of our spans have no Python client span as parent: {orphans[:5]}"
        wrong = [
            (s.name, theirs[s.parent].name) for s in ours if theirs[s.parent].name != f"MCP send {s.name}"
        ]
        return f"parented on the wrong request: {wrong[:5]}" if wrong else None

    def conventions() -> str | None:
        calls = [s for s in ours if s.name == "tools/call order"]
        want = {
            "mcp.method.name": "tools/call",
            "gen_ai.tool.name": "order",
            "gen_ai.operation.name": "execute_tool",
            "mcp.protocol.version": era,
        }
        if not calls:
            return "no 'tools/call order' span of ours"
        for span in calls:
            got = {k: span.attributes.get(k) for k in want}
            if got != want:
                return f"attributes {got}, want {want}"
        if era == MODERN and len(calls) < 4:
            return f"{len(calls)} 'tools/call order' spans, want one per round (4 or more)"
        return None

    return [
        (f"python client → rust server, {era}: every flow", flows),
        (f"python client → rust server, {era}: one trace id ({trace_id[:8]}…)", same_trace),
        (f"python client → rust server, {era}: each server span a child of its request's span", parents),
        (f"python client → rust server, {era}: conventions' name and attributes", conventions),
    ]


def rust_to_python(receiver: Receiver, rust_client: str, era: str, logs: Path) -> list[Check]:
    """Our client's traces, continued by the Python server (and, mid-call, back in our client)."""
    port = free_port()
    log = open(logs / f"otel-rust-client-{era}.server.log", "wb")
    server = subprocess.Popen(
        [sys.executable, __file__, "serve", "--http", str(port)],
        env={**otel_env(receiver, "python-server"), "PYTHONUNBUFFERED": "1"},
        stdout=log,
        stderr=log,
    )
    try:
        wait_ready(port, server)
        client = subprocess.run(
            [rust_client, "--era", era, "--apps", "--url", f"http://127.0.0.1:{port}/mcp"],
            env=otel_env(receiver, "interop-client"),
            capture_output=True,
            timeout=300,
        )
    finally:
        stop(server)
    spans = receiver.take()
    theirs = [
        s for s in spans if s.service == "python-server" and s.kind == SERVER and "jsonrpc.request.id" in s.attributes
    ]
    ours = {s.span_id: s for s in spans if s.service == "interop-client" and s.kind == CLIENT}
    python_sends = {s.span_id: s for s in spans if s.service == "python-server" and s.kind == CLIENT}
    served = [s for s in spans if s.service == "interop-client" and s.kind == SERVER]

    def flows() -> str | None:
        if client.returncode == 0:
            return None
        return "the client failed:\n" + client.stdout.decode(errors="replace")[-2000:]

    def parents() -> str | None:
        if len(theirs) < 10:
            return f"only {len(theirs)} Python server spans arrived"
        orphans = [s.name for s in theirs if s.parent not in ours]
        if orphans:
            return f"{len(orphans)} Python server spans have no span of ours as parent: {orphans[:5]}"
        wrong = [
            (s.name, ours[s.parent].name)
            for s in theirs
            if ours[s.parent].name != s.name or ours[s.parent].trace_id != s.trace_id
        ]
        return f"parented on the wrong request: {wrong[:5]}" if wrong else None

    def questions() -> str | None:
        if era == MODERN:
            return None if not served else f"{len(served)} server-to-client requests in a stateless era"
        if not served:
            return "no question asked mid-call reached our client's spans"
        orphans = [
            s.name
            for s in served
            if s.parent not in python_sends or python_sends[s.parent].name != f"MCP send {s.name}"
        ]
        return f"our handling of {orphans[:5]} is not a child of the Python span that asked" if orphans else None

    checks = [
        (f"rust client → python server, {era}: every flow", flows),
        (f"rust client → python server, {era}: each Python span a child of our request's span", parents),
    ]
    if era == LEGACY:
        checks.append((f"rust client → python server, {era}: questions mid-call continue the trace", questions))
    return checks


def serve(port: str) -> None:
    install_tracing(os.environ.get("OTEL_SERVICE_NAME", "python-server"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sys.argv = [str(HERE / "interop_server.py"), "--http", port]
    runpy.run_path(str(HERE / "interop_server.py"), run_name="__main__")


def main() -> None:
    if sys.argv[1:2] == ["serve"]:
        parser = argparse.ArgumentParser(description="The Python interop server, its spans exported.")
        parser.add_argument("serve")
        parser.add_argument("--http", required=True)
        serve(parser.parse_args().http)
        return
    parser = argparse.ArgumentParser(description="OpenTelemetry across the SDK boundary, both ways.")
    parser.add_argument("--rust-server", required=True)
    parser.add_argument("--rust-client", required=True)
    parser.add_argument("--logs", default=".")
    args = parser.parse_args()
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    receiver = Receiver()
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.url
    install_tracing("python-client")
    failed = passed = 0
    for era in (MODERN, LEGACY):
        for direction in (python_to_rust, rust_to_python):
            program = args.rust_server if direction is python_to_rust else args.rust_client
            try:
                checks = direction(receiver, program, era, logs)
            except Exception as e:  # a direction that could not run fails as one check
                checks = [(f"{direction.__name__}, {era}", lambda e=e: f"{type(e).__name__}: {e}")]
            for name, check in checks:
                problem = check()
                if problem is None:
                    passed += 1
                    print(f"ok    {name}", flush=True)
                else:
                    failed += 1
                    print(f"FAIL  {name}: {problem}", flush=True)
    print(f"opentelemetry across the boundary: {passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
