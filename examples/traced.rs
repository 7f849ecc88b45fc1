//! The Files server with its traces as JSON lines on stderr: one `mcp.request` span per
//! request with the fields `docs/observability.md` lists (OpenTelemetry's MCP conventions:
//! `mcp.method.name`, `mcp.protocol.version`, `jsonrpc.request.id`, `gen_ai.tool.name`,
//! `error.type`, …, and ours: `mcp.round`, `mcp.outcome`, `mcp.duration_us`), closed when the
//! request is answered. Nothing secret is traced at any
//! level, so `RUST_LOG=trace` is safe to ship to a log store.
//!
//! ```sh
//! RUST_LOG=debug cargo run -p mcp-examples --example traced -- --http 127.0.0.1:8000
//! ```

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;

#[tokio::main]
async fn main() -> Result<(), mcp::ServeError> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_span_events(FmtSpan::CLOSE)
        .with_current_span(true)
        .with_writer(std::io::stderr)
        .init();
    mcp_examples::cli::run(mcp_examples::files::server()).await
}
