//! A misbehaving network for tests, in front of a real server of ours.
//!
//! - [`Proxy`]: a loopback HTTP proxy that forwards to the server and, on command
//!   ([`Rule`]s), misbehaves the way networks and gateways do ([`Fault`]): drops the
//!   connection mid-SSE-stream, resets before the response (with or without the server having
//!   seen the request), stalls a stream without closing it, answers `404` to a session id,
//!   `502`/`503` with or without `Retry-After`, truncates a JSON body, and delays. It counts
//!   every request it saw, by JSON-RPC method and tool.
//! - [`TestServer`]: tools whose executions are counted (a side-effecting `charge`, a
//!   read-only `lookup`, an idempotent `set`, a `slow` one that reports progress, a `hang`
//!   that waits for its cancellation and counts it), served over HTTP by [`Upstream`], which
//!   restarts on command (a new instance that knows none of the old sessions).
//!
//! - [`built::example`]: an example program the process-level tests run, refused when it is
//!   missing or older than its sources.
//!
//! Not published: the client's tests, `mcp-term`'s and the examples' use it.
#![forbid(unsafe_code)]

mod body;
pub mod built;
mod fault;
mod proxy;
mod server;

pub use fault::{Fault, Rule, Seen};
pub use proxy::Proxy;
pub use server::{Counters, HANG_LIMIT, TestServer, Upstream};

/// A [`TestServer`] served by an [`Upstream`] behind a [`Proxy`]: what most tests need.
pub struct Harness {
    /// The proxy; clients connect to [`Harness::url`].
    pub proxy: Proxy,
    /// The server behind it.
    pub upstream: Upstream,
    /// What the server's tools did.
    pub counters: std::sync::Arc<Counters>,
}

impl Harness {
    /// Starts the test server and the proxy in front of it.
    pub async fn start() -> Harness {
        Harness::with(TestServer::new()).await
    }

    /// Starts `server` and the proxy in front of it.
    pub async fn with(server: TestServer) -> Harness {
        let counters = server.counters();
        let upstream = Upstream::start(server).await;
        let proxy = Proxy::start(upstream.addr_slot()).await;
        Harness {
            proxy,
            upstream,
            counters,
        }
    }

    /// The URL a client connects to (the proxy's).
    pub fn url(&self) -> String {
        self.proxy.url()
    }

    /// Adds a rule to the proxy.
    pub fn fault(&self, rule: Rule) {
        self.proxy.fault(rule);
    }

    /// Restarts the server as a crash would: the answers being relayed are cut, the old
    /// instance stops, and a new one that knows none of its sessions takes its place behind
    /// the same proxy URL.
    pub async fn restart(&self) {
        self.upstream
            .restart_then(|| self.proxy.cut_open_streams())
            .await;
    }
}
