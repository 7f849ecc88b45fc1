//! The client's `tracing` spans, named and filled by OpenTelemetry's semantic conventions for
//! MCP client spans (`otel.kind = client`, `mcp.method.name`, `gen_ai.tool.name`,
//! `jsonrpc.request.id`, `error.type`, …): one per request, over its resends, and one per
//! multi-round call (`mcp.call`, over its rounds, so a call's rounds share one trace). With the
//! `otel` feature the request's trace context travels in its `_meta` (`traceparent`,
//! `tracestate`, `baggage`), and a server-to-client request's handling continues the trace the
//! server sent.

use std::borrow::Cow;

use mcp_types::ErrorObject;
use serde_json::value::RawValue;
use tracing::Span;
use tracing::field::Empty;

/// The name of the span each request runs in.
pub const CLIENT_SPAN: &str = "mcp.client";

/// The parts of a request's params a span is named after.
#[derive(serde::Deserialize, Default)]
struct Target<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    uri: Option<Cow<'a, str>>,
}

fn target(params: Option<&RawValue>) -> Target<'_> {
    params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_default()
}

/// Names `span` `{method} {tool or prompt}` and records what the request targets.
pub(crate) fn name(span: &Span, method: &str, params: Option<&RawValue>) {
    let target = target(params);
    name_target(span, method, target.name.as_deref(), target.uri.as_deref());
}

fn name_target(span: &Span, method: &str, name: Option<&str>, uri: Option<&str>) {
    match (method, name) {
        ("tools/call", Some(tool)) => {
            span.record("otel.name", format!("{method} {tool}"));
            span.record("gen_ai.tool.name", tool);
            span.record("gen_ai.operation.name", "execute_tool");
        }
        ("prompts/get", Some(prompt)) => {
            span.record("otel.name", format!("{method} {prompt}"));
            span.record("gen_ai.prompt.name", prompt);
        }
        _ => {
            span.record("otel.name", method);
        }
    }
    if let Some(uri) = uri {
        span.record("mcp.resource.uri", uri);
    }
}

/// The span a multi-round call runs in, for code that drives the rounds itself (the legs of
/// [`Session`](crate::Session)): run every leg inside it (`tracing::Instrument`) and each
/// round's request span is its child, so the rounds, and the server's spans under them, are
/// one trace. `target` is the tool or prompt name (`tools/call`, `prompts/get`) or the URI
/// (`resources/read`). The client's own loop (`call_tool`, …) opens one by itself.
pub fn call_span(method: &str, target: Option<&str>) -> Span {
    let span = call_span_of(method);
    if !span.is_disabled() {
        let (name, uri) = match method {
            mcp_types::methods::RESOURCES_READ => (None, target),
            _ => (target, None),
        };
        name_target(&span, method, name, uri);
    }
    span
}

/// The span of one request to `method`.
pub(crate) fn request_span(method: &str, version: Option<&str>, params: Option<&RawValue>) -> Span {
    let span = tracing::info_span!(
        "mcp.client",
        otel.name = Empty,
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_description = Empty,
        mcp.method.name = method,
        mcp.protocol.version = version,
        jsonrpc.request.id = Empty,
        gen_ai.tool.name = Empty,
        gen_ai.prompt.name = Empty,
        gen_ai.operation.name = Empty,
        mcp.resource.uri = Empty,
        "error.type" = Empty,
        rpc.response.status_code = Empty,
    );
    if !span.is_disabled() {
        name(&span, method, params);
    }
    span
}

/// The span of a call that may take several rounds (`tools/call`, `prompts/get`,
/// `resources/read` driven to completion): each round's request span is its child.
pub(crate) fn call_span_of(method: &str) -> Span {
    tracing::info_span!(
        "mcp.call",
        otel.name = Empty,
        otel.kind = "internal",
        mcp.method.name = method,
        gen_ai.tool.name = Empty,
        gen_ai.prompt.name = Empty,
        gen_ai.operation.name = Empty,
        mcp.resource.uri = Empty,
        mcp.rounds = Empty,
    )
}

/// The span of the client's handling of a server-to-client request (2025-11-25: an
/// elicitation, sampling or roots request mid-call), kind `server`, continuing the trace the
/// request's `_meta` carries.
pub(crate) fn served_span(request: &mcp_types::JsonRpcRequest) -> Span {
    let span = tracing::info_span!(
        "mcp.client.serve",
        otel.name = request.method.as_str(),
        otel.kind = "server",
        mcp.method.name = request.method.as_str(),
        jsonrpc.request.id = %request.id.for_log(),
    );
    #[cfg(feature = "otel")]
    if !span.is_disabled() {
        let meta = request
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str::<Meta>(p.get()).ok());
        otel::continue_trace(&span, meta.as_ref().and_then(|m| m.meta.as_ref()));
    }
    span
}

/// The `_meta` object of params, read alone.
#[cfg(feature = "otel")]
#[derive(serde::Deserialize)]
struct Meta {
    #[serde(rename = "_meta")]
    meta: Option<mcp_types::JsonObject>,
}

/// Records how a request ended on its span: an error's code (every code is an error on the
/// client), or a tool error.
pub(crate) fn record_answer(span: &Span, answer: Result<&str, &ErrorObject>) {
    if span.is_disabled() {
        return;
    }
    match answer {
        Err(error) => {
            let text = error.code.0.to_string();
            span.record("rpc.response.status_code", text.as_str());
            span.record("error.type", text.as_str());
            span.record("otel.status_code", "ERROR");
            span.record("otel.status_description", error.message.as_str());
        }
        Ok(raw) if raw.contains(r#""isError":true"#) => {
            span.record("error.type", "tool_error");
            span.record("otel.status_code", "ERROR");
        }
        Ok(_) => {}
    }
}

#[cfg(feature = "otel")]
pub(crate) mod otel {
    //! Trace context in `_meta`, and the client's operation duration.

    use std::sync::OnceLock;
    use std::time::Instant;

    use mcp_types::JsonObject;
    use opentelemetry::KeyValue;
    use opentelemetry::metrics::Histogram;
    use opentelemetry::propagation::{Extractor, Injector};
    use opentelemetry::trace::TraceContextExt;
    use serde_json::Value;
    use serde_json::value::RawValue;
    use tracing::Span;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    struct Carrier<'a>(&'a JsonObject);

    impl Extractor for Carrier<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(Value::as_str)
        }

        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(String::as_str).collect()
        }
    }

    struct Writer<'a>(&'a mut JsonObject);

    impl Injector for Writer<'_> {
        fn set(&mut self, key: &str, value: String) {
            self.0.insert(key.to_owned(), Value::String(value));
        }
    }

    /// Writes `span`'s trace context into the `_meta` of raw params; nothing is parsed when
    /// the span has no OpenTelemetry context (no `tracing-opentelemetry` layer).
    pub(crate) fn inject(span: &Span, params: &mut Option<Box<RawValue>>) {
        let context = span.context();
        if !context.span().span_context().is_valid() {
            return;
        }
        mcp_types::meta::edit_params_meta(params, |meta| {
            opentelemetry::global::get_text_map_propagator(|propagator| {
                propagator.inject_context(&context, &mut Writer(meta));
            });
        });
    }

    /// Parents `span` on the trace context a server-to-client request's `_meta` carries.
    pub(crate) fn continue_trace(span: &Span, meta: Option<&JsonObject>) {
        let Some(meta) = meta.filter(|m| m.contains_key("traceparent")) else {
            return;
        };
        let context = opentelemetry::global::get_text_map_propagator(|propagator| {
            propagator.extract(&Carrier(meta))
        });
        if context.span().span_context().is_valid() {
            let _ = span.set_parent(context);
        }
    }

    /// The conventions' bucket boundaries for operation and session durations, in seconds.
    const BUCKETS: [f64; 14] = [
        0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
    ];

    fn histogram(name: &'static str, description: &'static str) -> Histogram<f64> {
        opentelemetry::global::meter("mcp-client")
            .f64_histogram(name)
            .with_unit("s")
            .with_description(description)
            .with_boundaries(BUCKETS.to_vec())
            .build()
    }

    fn duration() -> &'static Histogram<f64> {
        static DURATION: OnceLock<Histogram<f64>> = OnceLock::new();
        DURATION.get_or_init(|| {
            histogram(
                "mcp.client.operation.duration",
                "MCP request duration as observed on the client, from sending it to its answer",
            )
        })
    }

    /// Records `mcp.client.session.duration` for a 2025-11-25 session this client closed.
    pub(crate) fn record_session(opened: Instant, version: &str) {
        static SESSION: OnceLock<Histogram<f64>> = OnceLock::new();
        SESSION
            .get_or_init(|| {
                histogram(
                    "mcp.client.session.duration",
                    "The duration of a 2025-11-25 session as observed on the client",
                )
            })
            .record(
                opened.elapsed().as_secs_f64(),
                &[KeyValue::new("mcp.protocol.version", version.to_owned())],
            );
    }

    /// Records `mcp.client.operation.duration` for a request to `method`.
    pub(crate) fn record_operation(
        method: &str,
        version: Option<&str>,
        started: Instant,
        error: Option<String>,
    ) {
        let mut attributes = vec![KeyValue::new("mcp.method.name", method.to_owned())];
        if let Some(version) = version {
            attributes.push(KeyValue::new("mcp.protocol.version", version.to_owned()));
        }
        if let Some(error) = error {
            attributes.push(KeyValue::new("error.type", error));
        }
        duration().record(started.elapsed().as_secs_f64(), &attributes);
    }
}
