//! The Model Context Protocol over Streamable HTTP, on hyper 1.
//!
//! Package `keel-mcp-transport-http` on crates.io: `cargo add keel-mcp-transport-http`,
//! then `use mcp_transport_http::…`.
//!
//! - [`McpHttpService`]: the endpoint, as a hyper and `tower` service (mount it in axum with
//!   `Router::route_service("/mcp", endpoint)`), or served by [`serve`] /
//!   [`McpHttpService::serve_with_shutdown`]. Both eras on one endpoint: stateless 2026-07-28
//!   POSTs validated in the digest's order (`_meta`, headers against the body, version), JSON
//!   or a request-scoped SSE stream, `subscriptions/listen` as a long-lived SSE response;
//!   2025-11-25 `initialize` sessions with `Mcp-Session-Id`, a GET stream and DELETE. Origin
//!   and Host validation, a body limit, header timeouts, graceful shutdown, bearer auth.
//! - [`HttpTransport`]: the client side, for `mcp_client::Client` (feature `client`, on by
//!   default; without it the crate is the server alone and needs no `mcp-client`).
//!
//! Serving a server at `http://127.0.0.1:8080/mcp` for both eras, and a client of it:
//!
//! ```no_run
//! # async fn demo(server: mcp_server_core::Server) -> Result<(), Box<dyn std::error::Error>> {
//! mcp_transport_http::serve(server.into_service(), "127.0.0.1:8080").await?;
//!
//! let transport = mcp_transport_http::HttpTransport::new("http://127.0.0.1:8080/mcp")?;
//! let client = mcp_client::Client::builder().connect(transport).await?;
//! println!("{:?}", client.list_all_tools().await?);
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod auth;
mod auth_error;
#[cfg(feature = "client")]
mod client;
mod dpop;
pub mod headers;
mod net;
#[cfg(feature = "client")]
mod oauth;
mod probe;
mod server;
#[cfg(feature = "tls")]
mod tls;

pub use auth::{AuthError, ProtectedResource, TokenVerifier, VerifiedToken};
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use client::fuzzing;
#[cfg(feature = "client")]
pub use client::{
    DEFAULT_MAX_MESSAGE, DEFAULT_MAX_RETRY, HttpTransport, INCOMING_QUEUE, MIN_RETRY,
};
pub use mcp_types::BoxFuture;
#[cfg(feature = "client")]
pub use oauth::{DEFAULT_FETCH_TIMEOUT, DEFAULT_MAX_FETCH_BODY};
#[cfg(feature = "tls")]
pub use rustls;
pub use server::{
    BODY_RATE_GRACE, DEFAULT_BODY_TIMEOUT, DEFAULT_DRAIN_GRACE, DEFAULT_LISTEN_STREAMS_PER_CLIENT,
    DEFAULT_MAX_BODY, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_LISTEN_STREAMS,
    DEFAULT_MAX_SESSIONS, DEFAULT_MIN_BODY_RATE, DEFAULT_READINESS_PATH,
    DEFAULT_SESSIONS_PER_CLIENT, HEADER_READ_TIMEOUT, KEEP_ALIVE, McpBody, McpHttpService,
    ProxyRange, ProxyRangeError, SESSION_IDLE_TIMEOUT, SHUTDOWN_GRACE, SSE_RETRY, serve,
    shutdown_signal,
};
#[cfg(feature = "tls")]
pub use tls::{TLS_HANDSHAKE_TIMEOUT, serve_tls, server_config};
