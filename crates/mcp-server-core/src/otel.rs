//! OpenTelemetry (feature `otel`): trace context in `_meta` and the MCP metrics.
//!
//! Spans are `tracing` spans (see [`crate::trace`]); with `tracing-opentelemetry` in the
//! subscriber they become OpenTelemetry spans. Here a request's span is parented on the
//! context its `_meta` carries, a server-to-client request carries the current context on,
//! and each request records `mcp.server.operation.duration` and our counters through the
//! global meter provider (set it before the first request: instruments are made once).

use std::sync::OnceLock;
use std::time::Instant;

use mcp_types::meta::Meta;
use mcp_types::{ErrorObject, JsonObject};
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram};
use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::TraceContextExt;
use serde_json::Value;
use tracing::Span;

use crate::known::KnownNames;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The conventions' bucket boundaries for operation and session durations, in seconds.
pub(crate) const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// A `_meta` object read as a carrier of trace context.
pub(crate) struct MetaCarrier<'a>(pub(crate) &'a JsonObject);

impl Extractor for MetaCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// A `_meta` object written as a carrier of trace context.
pub(crate) struct MetaInjector<'a>(pub(crate) &'a mut JsonObject);

impl Injector for MetaInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), Value::String(value));
    }
}

/// Parents `span` on the trace context `meta` carries, if it carries one.
pub(crate) fn continue_trace(span: &Span, meta: Option<&Meta>) {
    let Some(meta) = meta else { return };
    if !meta.extra.contains_key(mcp_types::meta::TRACEPARENT) {
        return;
    }
    let context = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&MetaCarrier(&meta.extra))
    });
    if context.span().span_context().is_valid() {
        let _ = span.set_parent(context);
    }
}

/// Writes the trace context of `span` into `extra` (a `_meta` object), when it has one.
pub(crate) fn inject(span: &Span, extra: &mut JsonObject) {
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return;
    }
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut MetaInjector(extra));
    });
}

/// Writes the trace context of `span` into the `_meta` of raw request params (made an object
/// when absent). Nothing is parsed when `span` has no OpenTelemetry context.
pub(crate) fn inject_into_params(
    span: &Span,
    params: &mut Option<Box<serde_json::value::RawValue>>,
) {
    if !span.context().span().span_context().is_valid() {
        return;
    }
    mcp_types::meta::edit_params_meta(params, |meta| inject(span, meta));
}

struct Instruments {
    duration: Histogram<f64>,
    session: Histogram<f64>,
    rounds: Histogram<u64>,
    seal_failures: Counter<u64>,
    refusals: Counter<u64>,
    tasks: Counter<u64>,
}

fn instruments() -> &'static Instruments {
    static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();
    INSTRUMENTS.get_or_init(|| {
        let meter = opentelemetry::global::meter("mcp-server-core");
        Instruments {
            duration: meter
                .f64_histogram("mcp.server.operation.duration")
                .with_unit("s")
                .with_description("MCP request duration as observed on the server, from its arrival to its answer")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            session: meter
                .f64_histogram("mcp.server.session.duration")
                .with_unit("s")
                .with_description("The duration of a 2025-11-25 session as observed on the server")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            rounds: meter
                .u64_histogram("mcp.server.request.round")
                .with_unit("{round}")
                .with_description("The round of a multi-round-trip request on 2026-07-28: 1 for a first call, 2 for the first retry, …")
                .with_boundaries(vec![1.0, 2.0, 3.0, 4.0, 5.0, 8.0])
                .build(),
            seal_failures: meter
                .u64_counter("mcp.server.seal.failures")
                .with_unit("{state}")
                .with_description("requestState values and handles that failed to open, by reason")
                .build(),
            refusals: meter
                .u64_counter("mcp.server.policy.refusals")
                .with_unit("{request}")
                .with_description("Requests a policy layer refused, by limit")
                .build(),
            tasks: meter
                .u64_counter("mcp.server.tasks")
                .with_unit("{task}")
                .with_description("Tasks that reached a terminal status, by status")
                .build(),
        }
    })
}

/// What a metric attribute holds in place of a value this server does not know: a method it
/// does not serve, a version it does not speak, a tool or prompt it has not registered (the
/// semantic conventions' word for `http.request.method`, used the same way).
pub(crate) const OTHER: &str = "_OTHER";

/// The values a metric attribute may take. A metric keeps one series per set of values for
/// the life of the process, so a value a peer chose (a tool name that exists nowhere, a
/// made-up version) would be kept forever and, past the SDK's cardinality limit, push the
/// real series into overflow: each is one this server knows, or [`OTHER`] (security review
/// X6).
pub(crate) struct Known;

impl Known {
    /// A method the server serves: one of the protocol's (parsed), or an extension method it
    /// registered.
    pub(crate) fn method(
        server: &impl KnownNames,
        typed: Option<&mcp_types::ClientRequest>,
        method: &str,
    ) -> opentelemetry::Value {
        match typed {
            Some(typed) => typed.method().into(),
            None if server.serves_extension_method(method) => method.to_owned().into(),
            None => OTHER.into(),
        }
    }

    /// A protocol version this SDK speaks, or `unknown` when the request named none.
    pub(crate) fn version(version: Option<&str>) -> opentelemetry::Value {
        let Some(version) = version else {
            return "unknown".into();
        };
        mcp_types::version::MODERN_VERSIONS
            .iter()
            .chain(mcp_types::version::LEGACY_VERSIONS.iter())
            .find(|known| **known == version)
            .map_or(OTHER, |known| *known)
            .into()
    }

    /// A tool the server registered.
    pub(crate) fn tool(server: &impl KnownNames, name: &str) -> opentelemetry::Value {
        if server.serves_tool(name) {
            name.to_owned().into()
        } else {
            OTHER.into()
        }
    }

    /// A prompt the server registered.
    pub(crate) fn prompt(server: &impl KnownNames, name: &str) -> opentelemetry::Value {
        if server.serves_prompt(name) {
            name.to_owned().into()
        } else {
            OTHER.into()
        }
    }
}

/// What a request's duration is recorded with: its method, version and target, as [`Known`]
/// allows them.
pub(crate) struct Labels {
    attributes: Vec<KeyValue>,
}

impl Labels {
    pub(crate) fn new(
        method: opentelemetry::Value,
        version: opentelemetry::Value,
        tool: Option<opentelemetry::Value>,
        prompt: Option<opentelemetry::Value>,
        network: Option<&'static str>,
    ) -> Self {
        let mut attributes = vec![
            KeyValue::new("mcp.method.name", method),
            KeyValue::new("mcp.protocol.version", version),
        ];
        if let Some(network) = network {
            attributes.push(KeyValue::new("network.transport", network));
        }
        if let Some(tool) = tool {
            attributes.push(KeyValue::new("gen_ai.tool.name", tool));
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        if let Some(prompt) = prompt {
            attributes.push(KeyValue::new("gen_ai.prompt.name", prompt));
        }
        Labels { attributes }
    }
}

/// Records `mcp.server.operation.duration` for a request that answered `served`.
pub(crate) fn record_operation(
    labels: Labels,
    started: Instant,
    served: Option<Result<&str, &ErrorObject>>,
) {
    let mut attributes = labels.attributes;
    match served {
        Some(Err(error)) => {
            let text = error.code.0.to_string();
            attributes.push(KeyValue::new("error.type", text.clone()));
            attributes.push(KeyValue::new("rpc.response.status_code", text));
        }
        Some(Ok(raw)) if raw.contains(r#""isError":true"#) => {
            attributes.push(KeyValue::new("error.type", "tool_error"));
        }
        None => attributes.push(KeyValue::new("error.type", "cancelled")),
        Some(Ok(_)) => {}
    }
    instruments()
        .duration
        .record(started.elapsed().as_secs_f64(), &attributes);
}

/// Records `mcp.server.session.duration` for a 2025-11-25 session that ended.
pub(crate) fn record_session(opened: Instant, version: &str, network: Option<&'static str>) {
    let mut attributes = vec![KeyValue::new(
        "mcp.protocol.version",
        Known::version(Some(version)),
    )];
    if let Some(network) = network {
        attributes.push(KeyValue::new("network.transport", network));
    }
    instruments()
        .session
        .record(opened.elapsed().as_secs_f64(), &attributes);
}

/// Records the round a request is (2026-07-28 resolver flows).
pub(crate) fn record_round(round: u32) {
    instruments().rounds.record(u64::from(round), &[]);
}

/// Counts a `requestState` or handle that failed to open, by reason (never the value).
pub(crate) fn count_seal_failure(purpose: &'static str, reason: String) {
    instruments().seal_failures.add(
        1,
        &[
            KeyValue::new("mcp.seal.purpose", purpose),
            KeyValue::new("mcp.seal.reason", reason),
        ],
    );
}

/// Counts a request a policy layer refused.
pub(crate) fn count_refusal(limit: &'static str) {
    instruments()
        .refusals
        .add(1, &[KeyValue::new("mcp.policy.limit", limit)]);
}

/// Counts a task that reached `status`.
pub(crate) fn count_task(status: &'static str) {
    instruments()
        .tasks
        .add(1, &[KeyValue::new("mcp.task.status", status)]);
}
