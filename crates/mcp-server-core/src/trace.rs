//! What a request leaves in `tracing`: one span per request, named [`REQUEST_SPAN`], with the
//! same fields whatever the era or transport (namespaced `mcp.*`, so they sit beside a web
//! framework's own), and debug events for rounds and refusals.
//!
//! | field | value |
//! | --- | --- |
//! | `mcp.era` | `2026-07-28`, `2025-11-25`, … the protocol version the request is served at |
//! | `mcp.method` | the JSON-RPC method |
//! | `mcp.name` | the tool or prompt name, or the resource URI, for the methods that have one |
//! | `mcp.request_id` | the JSON-RPC request id |
//! | `mcp.round` | for resolver flows on 2026-07-28: 1 for the first call, 2 for the first retry, … |
//! | `mcp.outcome` | `complete`, `input_required`, `error`, or `cancelled` |
//! | `mcp.error_code` | the JSON-RPC error code, when the outcome is `error` |
//! | `mcp.duration_us` | from the request's arrival to its answer |
//!
//! Nothing secret is recorded at any level: no arguments, answers, `requestState`, keys or
//! tokens. A rejected `requestState` is logged with its reason only (debug).

use std::time::Instant;

use mcp_types::ClientRequest;
use mcp_types::jsonrpc::JsonRpcRequest;
use tracing::Span;
use tracing::field::Empty;

use mcp_types::ErrorObject;

/// The name of the span every request runs in.
pub const REQUEST_SPAN: &str = "mcp.request";

/// A request's span, opened when it arrives; [`finish`] records how it ended.
pub(crate) struct RequestSpan {
    pub(crate) span: Span,
    started: Instant,
}

impl RequestSpan {
    pub(crate) fn open(
        request: &JsonRpcRequest,
        typed: Option<&ClientRequest>,
        era: Option<&str>,
    ) -> Self {
        let name = typed.and_then(crate::policy::target_of);
        let span = tracing::info_span!(
            "mcp.request",
            mcp.era = era.unwrap_or("unknown"),
            mcp.method = %request.method,
            mcp.name = name,
            mcp.request_id = %request.id,
            mcp.round = Empty,
            mcp.outcome = Empty,
            mcp.error_code = Empty,
            mcp.duration_us = Empty,
        );
        Self {
            span,
            started: Instant::now(),
        }
    }

    /// Records the outcome of `served` (`None`: cancelled, no answer sent).
    pub(crate) fn finish(&self, served: Option<Result<&str, &ErrorObject>>) {
        let outcome = match served {
            None => "cancelled",
            Some(Err(error)) => {
                self.span.record("mcp.error_code", error.code.0);
                tracing::debug!(parent: &self.span, code = error.code.0, "refused");
                "error"
            }
            // Our own serialization: a result whose type is input_required has this exact
            // key/value (a string containing it would have its quotes escaped).
            Some(Ok(raw)) if raw.contains(r#""resultType":"input_required""#) => {
                tracing::debug!(parent: &self.span, "asked the client for input");
                "input_required"
            }
            Some(Ok(_)) => "complete",
        };
        self.span.record("mcp.outcome", outcome);
        self.span.record(
            "mcp.duration_us",
            u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX),
        );
    }
}

/// Records the resolver round of the request running now (1 for a first call).
pub(crate) fn record_round(round: u32) {
    Span::current().record("mcp.round", round);
}
