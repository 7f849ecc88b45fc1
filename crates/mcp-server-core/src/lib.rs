//! The Model Context Protocol server engine: both protocol eras on one endpoint.
//!
//! Package `keel-mcp-server-core` on crates.io: `cargo add keel-mcp-server-core`,
//! then `use mcp_server_core::…`.
//!
//! - [`Server`]: the low-level server, one async handler per method. `tools/call`,
//!   `prompts/get` and `resources/read` may answer an `InputRequiredResult`; no other
//!   handler can (a type error, not a runtime check).
//! - [`RequestContext`]: what a handler knows: the request's capabilities, its plaintext
//!   `requestState` and `inputResponses`, the principal, progress and log senders, a
//!   cancellation signal, and on legacy sessions a live back-channel.
//! - [`Service`] and [`Session`]: the transport-facing API. A third party writes a transport
//!   against these alone; [`MemoryConnection`] is the in-memory one.
//!
//! Validation follows the digest's order on 2026-07-28 requests: the `_meta` envelope
//! (`-32602`), the version (`-32022` with `supported`/`requested`), the method (`-32601` for
//! unknown, removed or unadvertised methods), the params (`-32602`), client capabilities
//! (`-32021`). Legacy sessions start with `initialize` and get server-to-client requests
//! mid-call. Nothing that arrives over the wire can panic the server.
//!
//! A server with one tool, on the low-level API (the `mcp` facade's `McpServer` and
//! `#[mcp::tool]` build the same thing from plain functions):
//!
//! ```
//! use mcp_server_core::Server;
//! use mcp_types::mrtr::Outcome;
//! use mcp_types::tools::{CallToolResult, ListToolsResult, Tool};
//!
//! let echo: Tool = serde_json::from_value(serde_json::json!({
//!     "name": "echo",
//!     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}
//! }))?;
//! let server = Server::new("echo")
//!     .on_list_tools(move |_ctx, _params| {
//!         let tools = vec![echo.clone()];
//!         async move { Ok(ListToolsResult { tools, ..Default::default() }) }
//!     })
//!     .on_call_tool(|_ctx, params| async move {
//!         let text = params.arguments.and_then(|a| a.get("text").cloned()).unwrap_or_default();
//!         Ok(Outcome::Complete(CallToolResult::text(text.to_string())))
//!     });
//! assert!(server.capabilities().tools.is_some());
//! // A transport serves `server.into_service()`: `mcp_transport_stdio::serve` or
//! // `mcp_transport_http::serve`.
//! # Ok::<(), serde_json::Error>(())
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod cancel;
mod context;
mod elicit;
pub mod events;
mod extension;
pub mod fleet;
mod futures;
pub mod gating;
mod handle;
mod json_size;
mod kept;
mod known;
mod limits;
mod memory;
mod notify;
#[cfg(feature = "otel")]
mod otel;
mod peer;
pub mod policy;
mod question;
mod refusal;
pub mod registry;
mod sealing;

/// Internals exposed for the fuzz targets in `fuzz/` (feature `fuzzing`; not a stable API).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::registry::fuzzing::*;
}
mod server;
mod service;
mod sink;
mod stamp;
mod state;
pub mod tasks;
mod tools;
pub mod trace;
pub(crate) mod transport;

pub use cancel::CancellationToken;
pub use context::RequestContext;
pub use extension::{Extension, ExtensionIdError};
pub use futures::{BoxFuture, HandlerResult};
pub use handle::{Handle, HandleKind};
pub use limits::SessionLimits;
pub use memory::MemoryConnection;
pub use notify::{ChangeEvent, ChangeNotifier};
pub use peer::PeerError;
pub use server::{DEFAULT_REQUEST_TIMEOUT, Server};
pub use service::{
    Delivery, LEGACY_VERSIONS, MODERN_VERSIONS, ResponseStream, SUPPORTED_VERSIONS, Service,
    Session, TransportContext, client_group, resource_not_found,
};
pub use stamp::CacheHints;
pub use state::State;

pub use mcp_state_seal as seal;
pub use mcp_types as types;
