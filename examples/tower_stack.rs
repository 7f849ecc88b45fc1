//! The MCP endpoint mounted in axum behind a stack of `tower-http` layers, the way it sits in an
//! existing web application: request tracing, CORS for a browser client, a timeout on every
//! response's headers, a concurrency limit, and gzip compression. The server is the Bistro and
//! the Files tool, so a legacy session's live elicitation and a 2026-07-28 multi-round flow
//! both go through every layer (`examples/tests/examples.rs` runs them).
//!
//! ```sh
//! cargo run -p mcp-examples --example tower-stack -- --http 127.0.0.1:8000
//! ```
//!
//! Notes on each layer:
//! - `CorsLayer` answers preflights itself; the endpoint's own Origin check still runs on the
//!   real request, so the browser origin is allowed on both (`allowed_origins`).
//! - `TimeoutLayer` bounds the time to the response *headers*: an SSE stream that then stays
//!   open (a legacy elicitation waiting for its user) is not cut.
//! - `CompressionLayer`'s default predicate leaves `text/event-stream` alone, so events are
//!   not held back in a compressor's buffer; JSON answers are gzipped for clients that ask.
//! - `ConcurrencyLimitLayer` caps the requests being handled at once; an open SSE response
//!   holds its slot until its body is done, so size it for streams as well as calls.

use std::time::Duration;

use axum::Router;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::routing::get;
use mcp::McpServer;
use mcp_examples::cli::Listen;
use mcp_examples::{bistro, files};
use tower::limit::ConcurrencyLimitLayer;
use tower_http::compression::CompressionLayer;
use tower_http::cors::CorsLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

/// The web application a browser client at this origin talks to.
const BROWSER_ORIGIN: &str = "http://localhost:5173";

fn app() -> Result<Router, mcp::BuildError> {
    let server = McpServer::new("Tower stack")
        .tool(bistro::book_table)
        .tool(bistro::pay_deposit)
        .tool(files::delete_folder);
    let endpoint = mcp::http::endpoint(server)?.allowed_origins([BROWSER_ORIGIN]);
    let cors = CorsLayer::new()
        .allow_origin(HeaderValue::from_static(BROWSER_ORIGIN))
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers(
            [
                "content-type",
                "accept",
                "authorization",
                "last-event-id",
                "mcp-protocol-version",
                "mcp-session-id",
                "mcp-method",
                "mcp-name",
            ]
            .map(HeaderName::from_static),
        )
        .expose_headers([HeaderName::from_static("mcp-session-id")]);
    Ok(Router::new()
        .route("/health", get(|| async { "ok" }))
        .route_service("/mcp", endpoint)
        .layer(ConcurrencyLimitLayer::new(256))
        .layer(CompressionLayer::new())
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(30),
        ))
        .layer(cors)
        .layer(TraceLayer::new_for_http()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = match Listen::from_env() {
        Listen::Http(addr) => addr,
        Listen::Stdio => "127.0.0.1:8000".parse()?,
    };
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!("serving MCP at http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, app()?)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
