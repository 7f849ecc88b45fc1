//! The Streamable HTTP server: one endpoint, both eras. Modern requests are stateless POSTs
//! validated in the digest's order; legacy clients get `initialize` + `Mcp-Session-Id`
//! sessions with server-to-client requests on the POST's SSE stream.
//!
//! This file holds the public [`McpHttpService`] builder (each setter changes one field of
//! the [`Config`](config::Config) it is built from) and the re-exports. The rooms, from the
//! bottom up:
//!
//! - `quota.rs`: what a request holds (its permits, a client's share of a budget);
//! - `body.rs`: [`McpBody`], the response bodies, and a session's GET stream slot;
//! - `reply.rs`: the responses (plain, JSON, SSE, refusal statuses);
//! - `config.rs`: the public defaults and the configuration;
//! - `request.rs`: reading a request (MCP headers, `Accept`, the body under its limits);
//! - `probe.rs`: the parts of the params checked against the headers;
//! - `gate.rs`: `Origin`/`Host`, CORS, the metadata document, bearer authentication;
//! - `guards.rs`: the in-flight and listen-stream caps and per-client shares;
//! - `modern.rs`: the 2026-07-28 route;
//! - `resume.rs`: the SSE history of legacy sessions and resumption from it;
//! - `legacy.rs`: 2025-11-25 sessions;
//! - `endpoint.rs`: the running endpoint and the pipeline every request goes through;
//! - `listen.rs`: the accept loop, readiness, the drain, [`shutdown_signal`].

// A stage's refusal is the response itself, built once per refused request: boxing it would
// only add an allocation.
#![allow(clippy::result_large_err)]

mod body;
mod bus;
mod config;
mod endpoint;
mod gate;
mod guards;
mod legacy;
mod listen;
mod live;
mod modern;
mod proxy;
mod quota;
mod reply;
mod request;
mod resume;
mod writes;

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body::Body;
use hyper::{Request, Response};
use mcp_server_core::Service;
use mcp_server_core::events::EventStore;
use tokio::net::TcpListener;

pub use body::{KEEP_ALIVE, McpBody};
pub use config::{
    BODY_RATE_GRACE, DEFAULT_BODY_TIMEOUT, DEFAULT_DRAIN_GRACE, DEFAULT_LISTEN_STREAMS_PER_CLIENT,
    DEFAULT_MAX_BODY, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_LISTEN_STREAMS,
    DEFAULT_MAX_SESSIONS, DEFAULT_MIN_BODY_RATE, DEFAULT_READINESS_PATH,
    DEFAULT_SESSIONS_PER_CLIENT, HEADER_READ_TIMEOUT, SESSION_IDLE_TIMEOUT, SHUTDOWN_GRACE,
    SSE_RETRY,
};
pub(crate) use listen::Handshake;
pub use listen::shutdown_signal;
pub use proxy::{ProxyRange, ProxyRangeError};

use crate::auth::{ProtectedResource, TokenVerifier};
use config::Config;
use endpoint::Endpoint;

/// The MCP endpoint as a hyper and `tower` service: mount it in axum (`route_service`) or
/// serve it with [`serve`] / [`McpHttpService::serve_with_shutdown`].
#[derive(Clone)]
pub struct McpHttpService {
    endpoint: Arc<Endpoint>,
}

impl std::fmt::Debug for McpHttpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHttpService")
            .field("service", &self.endpoint.service)
            .finish_non_exhaustive()
    }
}

impl McpHttpService {
    /// The endpoint for `service`. By default only local origins (`localhost`, `127.0.0.1`,
    /// `[::1]`) and local `Host` headers are accepted (DNS-rebinding protection), bodies are
    /// capped at 4 MiB, and no authentication is required.
    pub fn new(service: Service) -> Self {
        McpHttpService {
            endpoint: Arc::new(Endpoint::new(service, Config::default())),
        }
    }

    /// This endpoint with one setting changed: the configuration is kept (shared stores and
    /// verifiers included), and the running state (caps, sessions, drain) is built afresh.
    fn configure(self, set: impl FnOnce(&mut Config)) -> Self {
        let (service, mut config) = match Arc::try_unwrap(self.endpoint) {
            Ok(endpoint) => endpoint.into_parts(),
            Err(shared) => (shared.service.clone(), shared.config.clone()),
        };
        set(&mut config);
        McpHttpService {
            endpoint: Arc::new(Endpoint::new(service, config)),
        }
    }

    /// Accepts these `Origin` values (exact match) instead of local origins only.
    pub fn allowed_origins<I: IntoIterator<Item = S>, S: Into<String>>(self, origins: I) -> Self {
        let origins = origins.into_iter().map(Into::into).collect();
        self.configure(|c| c.allowed_origins = Some(origins))
    }

    /// Accepts these `Host` values (exact match, with port) instead of local hosts only.
    pub fn allowed_hosts<I: IntoIterator<Item = S>, S: Into<String>>(self, hosts: I) -> Self {
        let hosts = hosts.into_iter().map(Into::into).collect();
        self.configure(|c| c.allowed_hosts = Some(hosts))
    }

    /// How long a legacy session may stay unused before it is closed (default 30 minutes).
    pub fn session_idle_timeout(self, timeout: Duration) -> Self {
        self.configure(|c| c.session_idle = timeout)
    }

    /// The largest request body accepted (413 beyond).
    pub fn max_body(self, bytes: usize) -> Self {
        self.configure(|c| c.max_body = bytes)
    }

    /// The most live legacy sessions (default 10,000). An `initialize` beyond it, once idle
    /// sessions are swept, is answered `503 "Too many sessions; try again later"`.
    pub fn max_sessions(self, sessions: usize) -> Self {
        self.configure(|c| c.max_sessions = sessions)
    }

    /// The most live legacy sessions one client holds (default
    /// [`DEFAULT_SESSIONS_PER_CLIENT`], 1,000): its principal, else the peer address of its
    /// connection. Its next `initialize` closes its own least recently used session (whose
    /// later requests get `404 Session not found`), so one client cannot hold the whole
    /// session pool and no other client loses a session to it.
    pub fn sessions_per_client(self, sessions: usize) -> Self {
        self.configure(|c| c.sessions_per_client = sessions.max(1))
    }

    /// The reverse proxies (load balancers, ingress) in front of this server, by address or
    /// prefix. On a connection from one of them, the client is the address the proxy names
    /// in `Forwarded` or `X-Forwarded-For` (read from the right: the first address that is
    /// not a trusted proxy; what the client itself wrote further left is never believed), and
    /// per-client shares ([`sessions_per_client`](Self::sessions_per_client),
    /// [`listen_streams_per_client`](Self::listen_streams_per_client)) and address-keyed rate
    /// limits count that client. Without it, those headers are ignored and every user behind a proxy is
    /// the proxy's one address: one user's `initialize` loop would close other users'
    /// sessions (security review X3). See `docs/limits.md`.
    pub fn trusted_proxies(self, proxies: impl IntoIterator<Item = ProxyRange>) -> Self {
        let proxies: Vec<ProxyRange> = proxies.into_iter().collect();
        self.configure(|c| c.trusted_proxies = proxies)
    }

    /// The most open connections [`serve_with_shutdown`](Self::serve_with_shutdown) keeps
    /// (default 2,048). One more is answered `503 "Too many connections"` and closed.
    pub fn max_connections(self, connections: usize) -> Self {
        self.configure(|c| c.max_connections = connections.max(1))
    }

    /// The most POSTs answered at once, SSE answers included until they end (default 1,024).
    /// One more is answered `503 "Too many requests in flight; retry shortly"`.
    pub fn max_in_flight(self, requests: usize) -> Self {
        self.configure(|c| c.max_in_flight = requests.max(1))
    }

    /// The most `subscriptions/listen` streams open at once (default
    /// [`DEFAULT_MAX_LISTEN_STREAMS`], 1,024), apart from [`max_in_flight`](Self::max_in_flight):
    /// one more is answered `503 "Too many listen streams; retry shortly"`.
    pub fn max_listen_streams(self, streams: usize) -> Self {
        self.configure(|c| c.max_listen_streams = streams.max(1))
    }

    /// The most `subscriptions/listen` streams one principal holds at once, or one peer
    /// address when requests are not authenticated (default
    /// [`DEFAULT_LISTEN_STREAMS_PER_CLIENT`], 64): one more is answered `503 "Too many listen
    /// streams for this client (at most N); close one first"`. A server mounted in another
    /// router sees no peer address, and only the principal counts there.
    pub fn listen_streams_per_client(self, streams: usize) -> Self {
        self.configure(|c| c.listen_per_client = streams.max(1))
    }

    /// The slowest average rate a request body may arrive at after its first
    /// [`BODY_RATE_GRACE`] (2 s), in bytes per second (default [`DEFAULT_MIN_BODY_RATE`], 8 KiB/s):
    /// a body that falls behind is answered `408`, so a trickling client cannot hold its
    /// connection for the whole [`body_timeout`](Self::body_timeout). `0` turns the check off.
    pub fn min_body_rate(self, bytes_per_second: u64) -> Self {
        self.configure(|c| c.min_body_rate = bytes_per_second)
    }

    /// How long a client may take to send a request body once its headers arrived (default
    /// 30 s); `408 "The request body did not arrive in time"` beyond.
    pub fn body_timeout(self, timeout: Duration) -> Self {
        self.configure(|c| c.body_timeout = timeout)
    }

    /// How long [`serve_with_shutdown`](Self::serve_with_shutdown), once told to stop, keeps
    /// serving the connections it already has (default [`DEFAULT_DRAIN_GRACE`], 5 s). During
    /// the drain every response carries `Connection: close`, so a load balancer that sends one
    /// more request on a pooled connection gets its answer instead of a reset; the drain ends
    /// early once every connection has closed. Set it at least as long as the load balancer's
    /// idle keep-alive timeout towards this server (nginx: `keepalive_timeout` in `upstream`).
    pub fn drain_grace(self, grace: Duration) -> Self {
        self.configure(|c| c.drain_grace = grace)
    }

    /// Where [`serve_with_shutdown`](Self::serve_with_shutdown) answers `GET` with `200 ready`,
    /// or `503 draining` once shutdown began (default [`DEFAULT_READINESS_PATH`], `/ready`);
    /// `None` serves no readiness endpoint. It needs no authentication and reveals nothing but
    /// whether this instance takes new work.
    pub fn readiness_path(self, path: Option<&str>) -> Self {
        let path = path.map(str::to_owned);
        self.configure(|c| c.readiness_path = path)
    }

    /// Starts every 2025-11-25 session id with `prefix` (then 32 random hex digits), so that a
    /// load balancer can send a session's requests to the instance that holds it by the id
    /// alone (`examples/fleet/nginx.conf` maps `i1-` to the first instance, and so on).
    /// Only visible ASCII other than space is kept of `prefix` (at most 32 bytes).
    pub fn session_id_prefix(self, prefix: &str) -> Self {
        let prefix: String = prefix
            .chars()
            .filter(|c| c.is_ascii_graphic())
            .take(32)
            .collect();
        self.configure(|c| c.session_id_prefix = prefix)
    }

    /// Where the SSE events of 2025-11-25 sessions are kept for clients that reconnect with
    /// `Last-Event-ID` (default: a
    /// [`MemoryEventStore`](mcp_server_core::events::MemoryEventStore) with its default
    /// limits). Every event
    /// of a session's POST and GET streams carries an id; a POST stream opens with a priming
    /// event (an id, `retry:` [`SSE_RETRY`], no data), and a client whose stream broke gets
    /// the events it missed, and then the rest, from a GET naming the last id it saw.
    /// 2026-07-28 streams have no event ids and are never stored.
    pub fn event_store(self, store: Arc<dyn EventStore>) -> Self {
        self.configure(|c| c.events = store)
    }

    /// Protects the endpoint: every request needs an `Authorization: Bearer` token that
    /// `verifier` accepts, whose audience names `resource` and which carries its required
    /// scopes (401 or 403 with `WWW-Authenticate` otherwise). The protected resource metadata
    /// is served, without authentication, at [`ProtectedResource::metadata_path`]; mount that
    /// path too when the endpoint lives inside another router.
    pub fn bearer_auth(self, verifier: impl TokenVerifier, resource: ProtectedResource) -> Self {
        let verifier: Arc<dyn TokenVerifier> = Arc::new(verifier);
        let resource = Arc::new(resource);
        self.configure(|c| {
            c.verifier = Some(verifier);
            c.protected = Some(resource);
        })
    }

    /// Where the DPoP proofs this endpoint accepted are remembered until their acceptance
    /// window ends (`iat` within 300 s), so a captured proof cannot be replayed: by default in
    /// this process, each key with its own share (1,024 proofs a window); a fleet passes a
    /// seen-store all its instances share (`mcp-store-redis`'s seen-store), so a proof spent
    /// on one instance is refused on every other.
    pub fn dpop_replay_store(self, store: Arc<dyn mcp_state_seal::SeenStore>) -> Self {
        let replay = Arc::new(crate::dpop::DpopReplay::Shared(store));
        self.configure(|c| c.dpop_replay = replay)
    }

    /// The path of the protected resource metadata, when the endpoint is protected.
    pub fn metadata_path(&self) -> Option<String> {
        self.endpoint
            .config
            .protected
            .as_ref()
            .map(|p| p.metadata_path())
    }

    /// The MCP service behind the endpoint.
    pub fn service(&self) -> &Service {
        &self.endpoint.service
    }

    /// Handles one HTTP request.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<McpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.endpoint.handle(request, None).await
    }

    /// Serves the endpoint at `path` on `addr` until `shutdown` resolves, then drains:
    ///
    /// 1. the listener closes (new connections are refused, so a load balancer sends them to
    ///    another instance) and the readiness path answers `503 draining`;
    /// 2. for up to [`drain_grace`](Self::drain_grace), or until every connection has closed
    ///    and no task body (Tasks extension) runs in this process, requests already in
    ///    flight are answered and requests arriving on open keep-alive connections are still
    ///    served, each response marked `Connection: close`;
    /// 3. `subscriptions/listen` streams and legacy sessions end, idle connections close, and
    ///    requests still in flight get up to [`SHUTDOWN_GRACE`] (30 s) to answer.
    ///
    /// [`shutdown_signal`](crate::shutdown_signal) is a `shutdown` that resolves on SIGTERM
    /// or SIGINT.
    pub async fn serve_with_shutdown(
        self,
        listener: TcpListener,
        path: &str,
        shutdown: impl Future<Output = ()> + Send,
    ) -> std::io::Result<()> {
        self.serve_accepted(listener, path, shutdown, listen::Plain)
            .await
    }

    /// [`serve_with_shutdown`](Self::serve_with_shutdown) with `handshake` making each
    /// accepted connection the stream HTTP runs on (plain TCP, or TLS in `tls.rs`).
    pub(crate) async fn serve_accepted<H: Handshake>(
        self,
        listener: TcpListener,
        path: &str,
        shutdown: impl Future<Output = ()> + Send,
        handshake: H,
    ) -> std::io::Result<()> {
        listen::serve_accepted(self.endpoint, listener, path, shutdown, handshake).await
    }
}

/// Serves `service` at `http://{addr}/mcp` until the process ends.
///
/// ```no_run
/// use mcp_server_core::registry::{McpServer, ToolDef};
///
/// # #[tokio::main]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let ping = ToolDef::new("ping").handler(|_ctx, _args: serde_json::Value| async { "pong" });
/// let service = McpServer::new("Ping").tool(ping).into_service()?;
/// mcp_transport_http::serve(service, "127.0.0.1:8080").await?;
/// # Ok(())
/// # }
/// ```
pub async fn serve(service: Service, addr: impl tokio::net::ToSocketAddrs) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    McpHttpService::new(service)
        .serve_with_shutdown(listener, "/mcp", std::future::pending())
        .await
}

impl<B> tower_service::Service<Request<B>> for McpHttpService
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<McpBody>;
    type Error = Infallible;
    type Future =
        std::pin::Pin<Box<dyn Future<Output = Result<Response<McpBody>, Infallible>> + Send>>;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let endpoint = self.clone();
        Box::pin(async move { Ok(endpoint.endpoint.handle(request, None).await) })
    }
}
