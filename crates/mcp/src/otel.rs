//! OpenTelemetry for servers and clients built with this crate (feature `otel`).
//!
//! Every request a server answers and every request a client sends is a `tracing` span named
//! and filled by OpenTelemetry's semantic conventions for MCP (`docs/observability.md`); the
//! trace context travels in each request's `_meta` (`traceparent`, `tracestate`, `baggage`),
//! so a call, its rounds, the questions a legacy server asks mid-call and the server's work are
//! one trace across processes and SDKs. [`Otel`] exports them with OTLP over HTTP: add
//! [`Otel::layer`] to your `tracing` subscriber (the spans keep flowing to your other layers
//! too).
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! # async fn demo() -> Result<(), mcp::otel::OtelError> {
//! // OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318, OTEL_SERVICE_NAME=bistro
//! if let Some(otel) = mcp::otel::Otel::from_env("bistro")? {
//!     let subscriber = tracing_subscriber::registry().with(otel.layer());
//!     tracing::subscriber::set_global_default(subscriber).ok();
//!     // … serve …
//!     otel.shutdown().await;
//! }
//! # Ok(()) }
//! ```
//!
//! Without this feature nothing of OpenTelemetry is compiled in; with it and no [`Otel`] set
//! up, spans have no OpenTelemetry context and nothing is injected or exported.

use std::fmt;

use opentelemetry::propagation::TextMapCompositePropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::metrics::periodic_reader_with_async_runtime::PeriodicReader;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::runtime::Tokio;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;

/// Why OpenTelemetry could not be set up (an endpoint that is not a URL, an exporter that
/// could not be built).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtelError(pub String);

impl fmt::Display for OtelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OtelError {}

/// The OTLP/HTTP exporters of traces and metrics, installed as the global tracer and meter
/// providers with the W3C trace-context and baggage propagators. Needs a Tokio runtime (the
/// exporters run on it). Dropping it does not flush: call [`shutdown`](Self::shutdown).
pub struct Otel {
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
}

impl fmt::Debug for Otel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Otel").finish_non_exhaustive()
    }
}

/// The environment variables that name an OTLP endpoint.
const ENDPOINT_VARIABLES: [&str; 3] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
];

impl Otel {
    /// Exports to the endpoint the standard variables name (`OTEL_EXPORTER_OTLP_ENDPOINT`,
    /// or the per-signal `…_TRACES_ENDPOINT` and `…_METRICS_ENDPOINT`), as
    /// `OTEL_SERVICE_NAME` (else `service_name`), with `OTEL_RESOURCE_ATTRIBUTES`. `None` when
    /// no endpoint variable is set: tracing then stays as it is.
    pub fn from_env(service_name: &str) -> Result<Option<Otel>, OtelError> {
        if !ENDPOINT_VARIABLES
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|value| !value.is_empty()))
        {
            return Ok(None);
        }
        let spans = SpanExporter::builder()
            .with_http()
            .build()
            .map_err(|e| OtelError(format!("the OTLP span exporter: {e}")))?;
        let metrics = MetricExporter::builder()
            .with_http()
            .build()
            .map_err(|e| OtelError(format!("the OTLP metric exporter: {e}")))?;
        Ok(Some(Self::install(spans, metrics, service_name)))
    }

    /// Exports to the OTLP/HTTP receiver at `endpoint` (e.g. `http://127.0.0.1:4318`: spans
    /// go to `{endpoint}/v1/traces`, metrics to `{endpoint}/v1/metrics`) as `service_name`.
    pub fn to_endpoint(endpoint: &str, service_name: &str) -> Result<Otel, OtelError> {
        let base = endpoint.trim_end_matches('/');
        let spans = SpanExporter::builder()
            .with_http()
            .with_endpoint(format!("{base}/v1/traces"))
            .build()
            .map_err(|e| OtelError(format!("the OTLP span exporter for {endpoint}: {e}")))?;
        let metrics = MetricExporter::builder()
            .with_http()
            .with_endpoint(format!("{base}/v1/metrics"))
            .build()
            .map_err(|e| OtelError(format!("the OTLP metric exporter for {endpoint}: {e}")))?;
        Ok(Self::install(spans, metrics, service_name))
    }

    fn install(spans: SpanExporter, metrics: MetricExporter, service_name: &str) -> Otel {
        let mut resource = Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name(service_name.to_owned());
        }
        let resource = resource.build();
        let tracer = SdkTracerProvider::builder()
            .with_span_processor(BatchSpanProcessor::builder(spans, Tokio).build())
            .with_resource(resource.clone())
            .build();
        let meter = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics, Tokio).build())
            .with_resource(resource)
            .build();
        opentelemetry::global::set_tracer_provider(tracer.clone());
        opentelemetry::global::set_meter_provider(meter.clone());
        opentelemetry::global::set_text_map_propagator(TextMapCompositePropagator::new(vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ]));
        Otel { tracer, meter }
    }

    /// The `tracing` layer that turns this crate's spans (and yours) into OpenTelemetry spans
    /// exported here.
    pub fn layer<S>(&self) -> impl tracing_subscriber::Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        tracing_opentelemetry::layer().with_tracer(self.tracer.tracer("mcp"))
    }

    /// Makes a subscriber of [`layer`](Self::layer) alone the process's global default (for a
    /// program that has no subscriber of its own). Fails when one is already set.
    pub fn set_global_subscriber(&self) -> Result<(), OtelError> {
        use tracing_subscriber::layer::SubscriberExt;
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(self.layer()))
            .map_err(|e| OtelError(format!("the global tracing subscriber: {e}")))
    }

    /// Exports every span and metric recorded so far.
    pub async fn flush(&self) -> Result<(), OtelError> {
        let tracer = self.tracer.clone();
        let meter = self.meter.clone();
        tokio::task::spawn_blocking(move || {
            tracer
                .force_flush()
                .map_err(|e| OtelError(format!("flushing spans: {e}")))?;
            meter
                .force_flush()
                .map_err(|e| OtelError(format!("flushing metrics: {e}")))
        })
        .await
        .map_err(|e| OtelError(format!("flushing: {e}")))?
    }

    /// Flushes, then stops the exporters.
    pub async fn shutdown(self) {
        let Otel { tracer, meter } = self;
        let _ = tokio::task::spawn_blocking(move || {
            let _ = tracer.shutdown();
            let _ = meter.shutdown();
        })
        .await;
    }
}
