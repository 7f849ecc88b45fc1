//! The Streamable HTTP client transport: every request is a POST carrying the headers its era
//! needs; answers come back as JSON or SSE and are fed to the client's reader. Tools whose
//! `x-mcp-header` annotations are invalid are dropped from `tools/list` (with a warning), and
//! valid ones become `Mcp-Param-*` headers on their calls.
//!
//! The rooms, from the bottom up (the annotations themselves are read by
//! `mcp_types::param_header`, for the server's checks too): `state.rs` (what a transport shares with its requests' tasks), `headers.rs` (the headers a request carries,
//! and what delivered answers teach them), `sse.rs` (the SSE parser and reading a stream),
//! `session.rs` (a 2025-11-25 session's GET stream and recovery), `send.rs` (sending one
//! message, stage by stage), `transport.rs` ([`HttpTransport`] itself).

mod headers;
mod retry_after;
mod send;
mod session;
mod sse;
mod state;
mod transport;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use sse::fuzzing;
pub use state::{DEFAULT_MAX_MESSAGE, DEFAULT_MAX_RETRY, INCOMING_QUEUE, MIN_RETRY};
pub use transport::HttpTransport;
