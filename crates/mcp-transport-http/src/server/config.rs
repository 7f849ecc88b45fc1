//! The endpoint's configuration: the public defaults and limits, and [`Config`], what
//! `McpHttpService`'s builder methods set (each one field of it). The running state is built
//! from it (see `endpoint.rs`).

use std::sync::Arc;
use std::time::Duration;

use mcp_server_core::events::{EventStore, MemoryEventStore};

use crate::auth::{ProtectedResource, TokenVerifier};
use crate::dpop::DpopReplay;

/// The largest request body accepted unless configured (413 beyond).
pub const DEFAULT_MAX_BODY: usize = 4 * 1024 * 1024;
/// How long a client may take to send its request headers.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a legacy session may stay unused before it is closed.
pub const SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How long graceful shutdown waits for requests in flight.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
/// The most live legacy sessions unless configured (503 beyond).
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;
/// The most live 2025-11-25 sessions one client (its principal, else its peer address) holds,
/// by default: its next `initialize` closes its own least recently used session.
pub const DEFAULT_SESSIONS_PER_CLIENT: usize = 1_000;
/// The most open connections unless configured (503 and close beyond).
pub const DEFAULT_MAX_CONNECTIONS: usize = 2_048;
/// The most POSTs being answered at once unless configured (503 beyond).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1_024;
/// The most `subscriptions/listen` streams open at once, by default: they live long, so they
/// have their own budget instead of holding places of [`DEFAULT_MAX_IN_FLIGHT`].
pub const DEFAULT_MAX_LISTEN_STREAMS: usize = 1_024;
/// The most `subscriptions/listen` streams one principal (or, without authentication, one
/// peer address) holds at once, by default.
pub const DEFAULT_LISTEN_STREAMS_PER_CLIENT: usize = 64;
/// The slowest average rate a request body may arrive at once its first
/// [`BODY_RATE_GRACE`] has passed, by default (bytes per second).
pub const DEFAULT_MIN_BODY_RATE: u64 = 8 * 1024;
/// How long a body may take before [`DEFAULT_MIN_BODY_RATE`] applies.
pub const BODY_RATE_GRACE: Duration = Duration::from_secs(2);
/// How long a client may take to send its request body unless configured (408 beyond).
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a draining server keeps idle keep-alive connections open unless configured. A
/// load balancer in front should close idle connections to this server sooner (nginx:
/// `keepalive_timeout 4s;` in the `upstream` block), so that it never sends a request on a
/// connection the server is closing.
pub const DEFAULT_DRAIN_GRACE: Duration = Duration::from_secs(5);
/// Where [`McpHttpService::serve_with_shutdown`](crate::McpHttpService::serve_with_shutdown)
/// answers readiness unless configured.
pub const DEFAULT_READINESS_PATH: &str = "/ready";

/// The reconnection delay (`retry:`) the priming event of a resumable stream asks for.
pub const SSE_RETRY: Duration = Duration::from_secs(1);

/// What the builder sets: where requests may come from, how much of a body is read and how
/// fast, who may call, how legacy sessions live, the caps, and how the server drains.
#[derive(Clone)]
pub(crate) struct Config {
    /// The `Origin` values accepted; `None`: local origins only.
    pub(crate) allowed_origins: Option<Vec<String>>,
    /// The `Host` values accepted; `None`: local hosts only.
    pub(crate) allowed_hosts: Option<Vec<String>>,
    pub(crate) max_body: usize,
    pub(crate) body_timeout: Duration,
    pub(crate) min_body_rate: u64,
    pub(crate) verifier: Option<Arc<dyn TokenVerifier>>,
    pub(crate) protected: Option<Arc<ProtectedResource>>,
    /// The DPoP proofs this endpoint accepted, until their acceptance window ends.
    pub(crate) dpop_replay: Arc<DpopReplay>,
    pub(crate) session_idle: Duration,
    pub(crate) max_sessions: usize,
    pub(crate) sessions_per_client: usize,
    pub(crate) session_id_prefix: String,
    /// Where the SSE events of legacy sessions are kept for resumption.
    pub(crate) events: Arc<dyn EventStore>,
    pub(crate) max_connections: usize,
    pub(crate) max_in_flight: usize,
    pub(crate) max_listen_streams: usize,
    pub(crate) listen_per_client: usize,
    pub(crate) drain_grace: Duration,
    pub(crate) readiness_path: Option<String>,
    pub(crate) trusted_proxies: Vec<super::proxy::ProxyRange>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            allowed_origins: None,
            allowed_hosts: None,
            max_body: DEFAULT_MAX_BODY,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            min_body_rate: DEFAULT_MIN_BODY_RATE,
            verifier: None,
            protected: None,
            dpop_replay: Arc::default(),
            session_idle: SESSION_IDLE_TIMEOUT,
            max_sessions: DEFAULT_MAX_SESSIONS,
            sessions_per_client: DEFAULT_SESSIONS_PER_CLIENT,
            session_id_prefix: String::new(),
            events: Arc::new(MemoryEventStore::new()),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_listen_streams: DEFAULT_MAX_LISTEN_STREAMS,
            listen_per_client: DEFAULT_LISTEN_STREAMS_PER_CLIENT,
            drain_grace: DEFAULT_DRAIN_GRACE,
            readiness_path: Some(DEFAULT_READINESS_PATH.to_owned()),
            trusted_proxies: Vec::new(),
        }
    }
}
