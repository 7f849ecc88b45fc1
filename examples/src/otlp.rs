//! An OTLP/HTTP receiver on loopback for the tests (`examples/tests/otel.rs`, mcp-term's
//! `--otel` test): it keeps what it receives and decodes it with OpenTelemetry's own protobuf
//! definitions (`opentelemetry-proto`), never by matching strings.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

/// What the receiver got, by path (`/v1/traces`, `/v1/metrics`).
#[derive(Clone, Default)]
pub struct Received(Arc<Mutex<Vec<(String, Bytes)>>>);

/// An OTLP/HTTP receiver on a free loopback port; its base URL.
pub async fn receiver(received: Received) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let received = received.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                    let received = received.clone();
                    async move {
                        let path = request.uri().path().to_owned();
                        let body = request.into_body().collect().await?.to_bytes();
                        received.0.lock().unwrap().push((path, body));
                        Ok::<_, hyper::Error>(
                            Response::builder()
                                .header("content-type", "application/x-protobuf")
                                .body(Full::new(Bytes::new()))
                                .unwrap(),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    url
}

/// One data point of a metric: the service that sent it and the point's attributes.
pub type Point = (String, BTreeMap<String, String>);

/// One received span, flattened.
#[derive(Debug, Clone)]
pub struct Span {
    /// The `service.name` of the resource that sent it.
    pub service: String,
    /// The trace id, in hex.
    pub trace: String,
    /// The span id, in hex.
    pub id: String,
    /// The parent span id, in hex (empty for a root).
    pub parent: String,
    /// The span name.
    pub name: String,
    /// `Span.kind`: [`INTERNAL`], [`SERVER`], [`CLIENT`], …
    pub kind: i32,
    /// `Status.code`: 0 unset, 1 ok, [`STATUS_ERROR`].
    pub status: i32,
    /// The attributes, each value as text.
    pub attributes: BTreeMap<String, String>,
    /// Start, in nanoseconds since the epoch.
    pub start: u64,
    /// End, in nanoseconds since the epoch.
    pub end: u64,
}

/// `Span.kind` of an internal span (`opentelemetry.proto.trace.v1.Span.SpanKind`).
pub const INTERNAL: i32 = 1;
/// `Span.kind` of a server span.
pub const SERVER: i32 = 2;
/// `Span.kind` of a client span.
pub const CLIENT: i32 = 3;
/// `Status.code` of a span that failed.
pub const STATUS_ERROR: i32 = 2;

fn text(value: &Option<AnyValue>) -> String {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .map(|kv| (kv.key.clone(), text(&kv.value)))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `service.name` of a resource, or "" when it has none.
fn service_name(resource: Option<&Resource>) -> String {
    resource
        .map(|r| attributes(&r.attributes))
        .and_then(|mut a| a.remove("service.name"))
        .unwrap_or_default()
}

/// Every span received so far, decoded.
pub fn spans(received: &Received) -> Vec<Span> {
    let mut out = Vec::new();
    for (path, body) in received.0.lock().unwrap().iter() {
        if path != "/v1/traces" {
            continue;
        }
        let request = ExportTraceServiceRequest::decode(body.clone()).expect("OTLP traces");
        for resource in request.resource_spans {
            let service = service_name(resource.resource.as_ref());
            for scope in resource.scope_spans {
                for span in scope.spans {
                    out.push(Span {
                        service: service.clone(),
                        trace: hex(&span.trace_id),
                        id: hex(&span.span_id),
                        parent: hex(&span.parent_span_id),
                        name: span.name.clone(),
                        kind: span.kind,
                        status: span.status.as_ref().map_or(0, |s| s.code),
                        attributes: attributes(&span.attributes),
                        start: span.start_time_unix_nano,
                        end: span.end_time_unix_nano,
                    });
                }
            }
        }
    }
    out
}

/// Every metric name received, with the services that sent it.
pub fn metrics(received: &Received) -> BTreeMap<String, Vec<Point>> {
    let mut out: BTreeMap<String, Vec<_>> = BTreeMap::new();
    for (path, body) in received.0.lock().unwrap().iter() {
        if path != "/v1/metrics" {
            continue;
        }
        let request = ExportMetricsServiceRequest::decode(body.clone()).expect("OTLP metrics");
        for resource in request.resource_metrics {
            let service = service_name(resource.resource.as_ref());
            for scope in resource.scope_metrics {
                for metric in scope.metrics {
                    let points: Vec<BTreeMap<String, String>> = match &metric.data {
                        Some(Data::Histogram(h)) => h
                            .data_points
                            .iter()
                            .map(|p| attributes(&p.attributes))
                            .collect(),
                        Some(Data::Sum(s)) => s
                            .data_points
                            .iter()
                            .map(|p| attributes(&p.attributes))
                            .collect(),
                        _ => Vec::new(),
                    };
                    for point in points {
                        out.entry(metric.name.clone())
                            .or_default()
                            .push((service.clone(), point));
                    }
                }
            }
        }
    }
    out
}
