//! The benchmark's echo server on rmcp.
//!
//!     rmcp-echo --http PORT     stateless Streamable HTTP, JSON responses, http://127.0.0.1:PORT/mcp
//!     rmcp-echo --http-sessions PORT  stateful (LocalSessionManager): legacy sessions, GET streams
//!     rmcp-echo --stdio         newline-delimited JSON-RPC on stdin/stdout (`stdio_pipes`)
//!
//! Tools: `echo(text) -> text`, and `confirm_echo(text)`, which returns an
//! `InputRequiredResult` asking for a confirmation (its `requestState` sealed with rmcp's own
//! `RequestStateCodec`, so the round costs what a real server's would), then echoes on the retry.

use std::sync::Arc;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::*;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

#[derive(Clone)]
struct Echo {
    codec: Arc<RequestStateCodec>,
    /// Built once at start-up and shared by every per-request clone (rmcp's documented
    /// `router = self.tool_router` form). The default, `Self::tool_router()`, rebuilds the router
    /// and the tools' JSON Schemas on every `tools/call` (twice: the header check looks the tool
    /// up, then the call routes it).
    tool_router: Arc<ToolRouter<Echo>>,
    /// `RMCP_ECHO_ROUTER_PER_CALL=1`: rebuild the router on every use instead, as the
    /// `#[tool_handler]` default does (to measure what that default costs).
    router_per_call: bool,
}

impl Echo {
    fn router(&self) -> std::borrow::Cow<'_, ToolRouter<Echo>> {
        if self.router_per_call {
            std::borrow::Cow::Owned(Self::tool_router())
        } else {
            std::borrow::Cow::Borrowed(&*self.tool_router)
        }
    }
}

#[tool_router]
impl Echo {
    /// Echo the text back.
    #[tool(description = "Echo the text back.")]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {
        args.text
    }

    /// Echo the text back after the client confirms.
    #[tool(description = "Echo the text back after the client confirms.")]
    async fn confirm_echo(
        &self,
        Parameters(args): Parameters<EchoArgs>,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let accepted = match (state, responses) {
            (Some(state), Some(responses)) => {
                let opened = self.codec.open(&state).map_err(|e| {
                    ErrorData::invalid_params(format!("bad requestState: {e}"), None)
                })?;
                if opened != args.text.as_bytes() {
                    return Err(ErrorData::invalid_params(
                        "requestState of another call",
                        None,
                    ));
                }
                responses
                    .get("confirm")
                    .map(|answer| answer["action"] == "accept" && answer["content"]["ok"] == true)
            }
            _ => None,
        };
        match accepted {
            Some(true) => Ok(CallToolResult::success(vec![ContentBlock::text(args.text)]).into()),
            Some(false) => Ok(CallToolResult::success(vec![ContentBlock::text("")]).into()),
            None => {
                let question = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: format!("Echo {} character(s)?", args.text.len()),
                    requested_schema: serde_json::from_value(serde_json::json!({
                        "type": "object",
                        "properties": {"ok": {"type": "boolean"}},
                        "required": ["ok"]
                    }))
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?,
                });
                let mut requests = rmcp::model::InputRequests::new();
                requests.insert("confirm".to_string(), InputRequest::Elicitation(question));
                let state = self.codec.seal(args.text.as_bytes());
                Ok(InputRequiredResult::new(Some(requests), Some(state)).into())
            }
        }
    }
}

#[tool_handler(router = self.router())]
impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.protocol_version = ProtocolVersion::V_2026_07_28;
        info
    }
}

fn echo() -> Result<Echo, Box<dyn std::error::Error + Send + Sync>> {
    // A fixed key: the benchmark only needs the sealing work, not a secret.
    let codec = RequestStateCodec::try_new(vec![7u8; 32]).map_err(|e| e.to_string())?;
    Ok(Echo {
        codec: Arc::new(codec),
        tool_router: Arc::new(Echo::tool_router()),
        router_per_call: std::env::var_os("RMCP_ECHO_ROUTER_PER_CALL").is_some_and(|v| v == "1"),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["--http", port] => {
            let port: u16 = port.parse()?;
            let template = echo()?;
            let service = StreamableHttpService::new(
                move || Ok(template.clone()),
                Arc::new(NeverSessionManager::default()),
                StreamableHttpServerConfig::default()
                    .with_legacy_session_mode(false)
                    .with_json_response(true)
                    .with_sse_keep_alive(None),
            );
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
            loop {
                let (stream, _) = listener.accept().await?;
                // As ours does: an SSE answer is written in parts, and without it Nagle's
                // algorithm holds the last part for the client's delayed ACK (40 ms a call).
                stream.set_nodelay(true)?;
                let service = TowerToHyperService::new(service.clone());
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        }
        ["--http-sessions", port] => {
            // The session memory measurement: rmcp's stateful mode (LocalSessionManager,
            // legacy sessions with standalone GET streams), its documented configuration for
            // 2025-11-25 clients.
            let port: u16 = port.parse()?;
            let template = echo()?;
            let service = StreamableHttpService::new(
                move || Ok(template.clone()),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default(),
            );
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
            loop {
                let (stream, _) = listener.accept().await?;
                // As ours does: an SSE answer is written in parts, and without it Nagle's
                // algorithm holds the last part for the client's delayed ACK (40 ms a call).
                stream.set_nodelay(true)?;
                let service = TowerToHyperService::new(service.clone());
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        }
        ["--stdio"] | [] => {
            // rmcp's documented choice when both streams are pipes (a client spawned us): reads
            // and writes on the reactor, not the blocking pool. `stdio()` hands every message
            // to another thread.
            let running = echo()?.serve(rmcp::transport::io::stdio_pipes()).await?;
            running.waiting().await?;
            Ok(())
        }
        _ => Err("usage: rmcp-echo [--stdio | --http PORT]".into()),
    }
}
