//! What a request leaves in `tracing`: one span per request, named [`REQUEST_SPAN`], with the
//! same fields whatever the era or transport. The fields are OpenTelemetry's semantic
//! conventions for MCP (GenAI conventions, MCP server spans, development status), so that
//! with `tracing-opentelemetry` (the `otel` feature) the span is the conventions' server span,
//! and a few of ours (`mcp.round`, `mcp.outcome`, `mcp.duration_us`):
//!
//! | field | value |
//! | --- | --- |
//! | `otel.name` | the conventions' span name: `{method} {tool or prompt name}`, or `{method}` |
//! | `otel.kind` | `server` |
//! | `mcp.method.name` | the JSON-RPC method |
//! | `mcp.protocol.version` | `2026-07-28`, `2025-11-25`, … the version the request is served at |
//! | `jsonrpc.request.id` | the JSON-RPC request id |
//! | `gen_ai.tool.name`, `gen_ai.prompt.name`, `mcp.resource.uri` | what `tools/call`, `prompts/get`, `resources/*` name (at most 256 bytes of it, as every text from the peer here) |
//! | `network.transport` | `tcp` (HTTP) or `pipe` (stdio), as the transport says ([`TransportContext::network_transport`](crate::TransportContext::network_transport)) |
//! | `gen_ai.operation.name` | `execute_tool` on `tools/call` |
//! | `error.type` | the JSON-RPC error code as a string, or `tool_error` for a result with `isError: true` |
//! | `rpc.response.status_code` | the JSON-RPC error code, when the answer is an error |
//! | `otel.status_code`, `otel.status_description` | `ERROR` and the error's message, for the codes the conventions count as server errors (not -32700, -32600, -32601, -32602, -32002) and tool errors |
//! | `mcp.round` | for resolver flows on 2026-07-28: 1 for the first call, 2 for the first retry, … |
//! | `mcp.outcome` | `complete`, `input_required`, `error`, `tool_error` or `cancelled` |
//! | `mcp.duration_us` | from the request's arrival to its answer |
//!
//! The metric `mcp.server.operation.duration` (feature `otel`) carries the same names, but
//! only values the server knows: a method it serves, a version it speaks, a tool or prompt it
//! registered; any other is `_OTHER`, so a peer cannot make the process keep a series per
//! name it invents.
//!
//! Nothing secret is recorded at any level: no arguments, answers, `requestState`, keys or
//! tokens. A rejected `requestState` is logged with its reason only (debug).

use std::time::Instant;

use mcp_types::ClientRequest;
use mcp_types::jsonrpc::JsonRpcRequest;
use tracing::Span;
use tracing::field::Empty;

use mcp_types::ErrorObject;

use crate::known::KnownNames;

/// The name of the span every request runs in.
pub const REQUEST_SPAN: &str = "mcp.request";

/// A request's span, opened when it arrives; [`finish`] records how it ended.
pub(crate) struct RequestSpan {
    pub(crate) span: Span,
    started: Instant,
    #[cfg(feature = "otel")]
    labels: crate::otel::Labels,
}

impl RequestSpan {
    pub(crate) fn open(
        request: &JsonRpcRequest,
        typed: Option<&ClientRequest>,
        era: Option<&str>,
        network: Option<&'static str>,
        server: &impl KnownNames,
    ) -> Self {
        let (tool, prompt, uri) = match typed {
            Some(ClientRequest::CallTool(p)) => (Some(p.name.as_str()), None, None),
            Some(ClientRequest::GetPrompt(p)) => (None, Some(p.name.as_str()), None),
            Some(ClientRequest::Complete(_)) => (None, None, None),
            Some(t) => (None, None, crate::policy::target_of(t)),
            None => (None, None, None),
        };
        // Everything here came from the peer: bounded, so that a 4 MiB tool name is not a
        // 4 MiB attribute on every span and log line of the request (security review X6).
        let method = bounded(request.method.as_str());
        let (tool, prompt, uri) = (tool.map(bounded), prompt.map(bounded), uri.map(bounded));
        let span = tracing::info_span!(
            "mcp.request",
            otel.name = Empty,
            otel.kind = "server",
            otel.status_code = Empty,
            otel.status_description = Empty,
            mcp.method.name = method,
            mcp.protocol.version = era.map_or("unknown", bounded),
            jsonrpc.request.id = %request.id.for_log(),
            gen_ai.tool.name = tool,
            gen_ai.prompt.name = prompt,
            mcp.resource.uri = uri,
            network.transport = network,
            gen_ai.operation.name = tool.map(|_| "execute_tool"),
            "error.type" = Empty,
            rpc.response.status_code = Empty,
            mcp.round = Empty,
            mcp.outcome = Empty,
            mcp.duration_us = Empty,
        );
        if !span.is_disabled() {
            match tool.or(prompt) {
                Some(target) => span.record("otel.name", format!("{method} {target}")),
                None => span.record("otel.name", method),
            };
            #[cfg(feature = "otel")]
            crate::otel::continue_trace(&span, typed.and_then(ClientRequest::meta));
        }
        #[cfg(not(feature = "otel"))]
        let _ = server;
        Self {
            span,
            started: Instant::now(),
            // Metrics are kept for the life of the process, one series per set of values:
            // they take only values this server knows (security review X6).
            #[cfg(feature = "otel")]
            labels: crate::otel::Labels::new(
                crate::otel::Known::method(server, typed, &request.method),
                crate::otel::Known::version(era),
                tool.map(|t| crate::otel::Known::tool(server, t)),
                prompt.map(|p| crate::otel::Known::prompt(server, p)),
                network,
            ),
        }
    }

    /// Records the outcome of `served` (`None`: cancelled, no answer sent).
    pub(crate) fn finish(self, served: Option<Result<&str, &ErrorObject>>) {
        if self.span.is_disabled() {
            #[cfg(feature = "otel")]
            crate::otel::record_operation(self.labels, self.started, served);
            return;
        }
        let outcome = match served {
            None => "cancelled",
            Some(Err(error)) => {
                let code = error.code.0;
                // A string, as the conventions type it (and as other SDKs send it).
                let text = code.to_string();
                self.span.record("rpc.response.status_code", text.as_str());
                self.span.record("error.type", text.as_str());
                if counts_as_server_error(code) {
                    self.span.record("otel.status_code", "ERROR");
                    self.span
                        .record("otel.status_description", error.message.as_str());
                }
                tracing::debug!(parent: &self.span, code, "refused");
                "error"
            }
            // Our own serialization: a result whose type is input_required has this exact
            // key/value (a string containing it would have its quotes escaped).
            Some(Ok(raw)) if raw.contains(r#""resultType":"input_required""#) => {
                tracing::debug!(parent: &self.span, "asked the client for input");
                "input_required"
            }
            Some(Ok(raw)) if raw.contains(r#""isError":true"#) => {
                self.span.record("error.type", "tool_error");
                self.span.record("otel.status_code", "ERROR");
                "tool_error"
            }
            Some(Ok(_)) => "complete",
        };
        self.span.record("mcp.outcome", outcome);
        self.span.record(
            "mcp.duration_us",
            u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX),
        );
        #[cfg(feature = "otel")]
        crate::otel::record_operation(self.labels, self.started, served);
    }
}

/// The longest text from a peer a request's span records in one attribute, in bytes.
pub(crate) const MAX_ATTRIBUTE: usize = 256;

/// `text` cut to at most [`MAX_ATTRIBUTE`] bytes, at a character boundary.
pub(crate) fn bounded(text: &str) -> &str {
    if text.len() <= MAX_ATTRIBUTE {
        return text;
    }
    let mut end = MAX_ATTRIBUTE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Whether the conventions count a JSON-RPC error code as a server error: the client's
/// mistakes (parse error, invalid request, unknown method, invalid params, legacy resource not
/// found) are not.
pub(crate) fn counts_as_server_error(code: i64) -> bool {
    !matches!(code, -32700 | -32600 | -32601 | -32602 | -32002)
}

/// Records the resolver round of the request running now (1 for a first call).
pub(crate) fn record_round(round: u32) {
    Span::current().record("mcp.round", round);
    #[cfg(feature = "otel")]
    crate::otel::record_round(round);
}
