//! The client: one connection, era negotiation, request/response correlation, the legacy
//! back-channel, and the automatic multi-round-trip loop.

mod apps;
mod builder;
mod cache_key;
mod caching;
mod calls;
mod connection;
mod dispatch;
mod handle;
mod negotiate;
mod resend;
mod settings;
pub(crate) mod skills;
pub(crate) mod tasks;

pub use apps::App;
pub use builder::ClientBuilder;
pub(crate) use cache_key::cache_params;
pub use calls::{CallOutcome, HasMetaMut, Session};
pub(crate) use calls::{decode_outcome, tool_arguments};
pub(crate) use connection::{Inflight, Inner, read_loop};
pub(crate) use dispatch::Refusal;
pub use handle::Client;
pub(crate) use resend::{Failed, ProgressWaiter, Wait, progressed, resend_pause, timed_out};
pub use settings::{
    BACKOFF_CAP, BACKOFF_START, CallOptions, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_INPUT_REQUESTS,
    DEFAULT_MAX_ROUNDS, DEFAULT_MAX_SERVER_REQUESTS, DEFAULT_MAX_TOTAL_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT, DISCOVER_TIMEOUT, MAX_RESENDS, MAX_RETRY_AFTER, Mode, Negotiated,
    RESEND_BACKOFF_CAP, RESEND_BACKOFF_START,
};
pub use tasks::{TaskCall, TaskHandle, ToolLeg};

/// The stateless versions this client speaks, and the handshake versions a legacy server may
/// answer `initialize` with (oldest first; the client prefers the newest both sides know).
/// They come from the one version table, in `mcp_types::version`.
pub use mcp_types::version::{LEGACY_VERSIONS, MODERN_VERSIONS};
