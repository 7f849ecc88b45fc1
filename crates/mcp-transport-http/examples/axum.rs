//! The MCP endpoint mounted inside an existing axum application, next to another route.
//!
//! `cargo run -p keel-mcp-transport-http --example axum -- 127.0.0.1:8000`, then point any MCP
//! client at `http://127.0.0.1:8000/mcp` (and `curl http://127.0.0.1:8000/health`).

use mcp_server_core::registry::{McpServer, ToolDef};
use mcp_transport_http::McpHttpService;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Echo {
    /// What to say back.
    text: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8000".into());
    let echo = ToolDef::new("echo")
        .description("Says it back.")
        .arguments::<Echo>()
        .handler(|_ctx, args: Echo| async move { args.text });
    let service = McpServer::new("axum-demo").tool(echo).into_service()?;
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .route_service("/mcp", McpHttpService::new(service));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("listening on http://{addr} (MCP at /mcp, health at /health)");
    axum::serve(listener, app).await?;
    Ok(())
}
