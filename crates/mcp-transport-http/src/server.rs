//! The Streamable HTTP server: one endpoint, both eras. Modern requests are stateless POSTs
//! validated in the digest's order; legacy clients get `initialize` + `Mcp-Session-Id`
//! sessions with server-to-client requests on the POST's SSE stream.

// A stage's refusal is the response itself, built once per refused request: boxing it would
// only add an allocation.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body::Body;
use http_body_util::{BodyExt, Limited};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use mcp_server_core::events::{EventStore, EventStoreError, MemoryEventStore};
use mcp_server_core::seal::Principal;
use mcp_server_core::{
    Delivery, LEGACY_VERSIONS, MODERN_VERSIONS, ResponseStream, Service, Session, TransportContext,
};
use mcp_types::jsonrpc::{ErrorResponseId, MessageErrorKind};
use mcp_types::messages::ClientRequest;
use mcp_types::{
    ErrorCode, ErrorObject, JsonObject, JsonRpcError, JsonRpcMessage, ParamsError, RequestId,
};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::auth::{AuthError, ProtectedResource, TokenVerifier};
use crate::body::{McpBody, StreamSlot};
use crate::headers;

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
/// Where [`McpHttpService::serve_with_shutdown`] answers readiness unless configured.
pub const DEFAULT_READINESS_PATH: &str = "/ready";

/// The reconnection delay (`retry:`) the priming event of a resumable stream asks for.
pub const SSE_RETRY: Duration = Duration::from_secs(1);
/// The most encoded SSE frames waiting for a slow client on one resumable stream; the task
/// writing them waits beyond (the handler's own stream then applies backpressure).
const FRAME_QUEUE: usize = 32;

/// How many POST streams of one session are remembered as broken (their history misses an
/// event); past it the oldest is forgotten.
const BROKEN_KEPT: usize = 1024;
/// How long the end of a POST stream is written again when the event store fails it.
const FINISH_RETRY_FOR: Duration = Duration::from_secs(10);

/// What a resumption of a legacy session's streams must know that the event store may not
/// (review W22): whether a POST stream's request still runs, and where a stream's history
/// misses an event because the store failed.
#[derive(Default)]
struct Resumptions {
    /// Streams whose request runs; the sender's drop (the request's end) wakes resumptions.
    running: HashMap<String, tokio::sync::watch::Receiver<()>>,
    /// Streams whose history misses an event, oldest first: they cannot be resumed.
    broken: std::collections::VecDeque<String>,
    /// Where the session's GET stream history misses a message the store failed to take.
    get_gap: GetGap,
}

/// The holes in a session's GET stream history (review W22). The GET stream never ends, so
/// one lost message cannot fail it as a POST stream is failed; a resumption that would replay
/// across the hole is refused instead, and one from after it is served.
#[derive(Default)]
struct GetGap {
    /// A message was lost after the last event stored: every resumption would miss it.
    open: bool,
    /// Resuming after an event numbered below this misses a lost message.
    below: u64,
}

impl GetGap {
    /// The store failed to take a message.
    fn lost(&mut self) {
        self.open = true;
    }

    /// The store took a message as event `n`: a hole left open ends before it.
    fn stored(&mut self, n: u64) {
        if self.open {
            self.open = false;
            self.below = self.below.max(n);
        }
    }

    /// Whether resuming after event `after` would replay across a hole.
    fn misses(&self, after: u64) -> bool {
        self.open || after < self.below
    }
}

impl Resumptions {
    fn mark_broken(&mut self, stream: &str) {
        if self.broken.iter().any(|s| s == stream) {
            return;
        }
        if self.broken.len() >= BROKEN_KEPT {
            self.broken.pop_front();
        }
        self.broken.push_back(stream.to_owned());
    }

    fn is_broken(&self, stream: &str) -> bool {
        self.broken.iter().any(|s| s == stream)
    }
}

/// A legacy session on this endpoint, bound to the principal that opened it.
struct LegacySession {
    id: String,
    session: Session,
    principal: Option<Principal>,
    stream: Arc<StreamSlot>,
    /// Numbers the session's POST streams (`p1`, `p2`, …) for their event ids.
    posts: Arc<std::sync::atomic::AtomicU64>,
    /// Which POST streams run, and which streams (or parts of the GET stream) cannot be
    /// resumed.
    resumptions: Arc<Mutex<Resumptions>>,
    /// The session's own in-flight cap (`SessionLimits::max_in_flight`), detached requests
    /// included.
    in_flight: Arc<Semaphore>,
    /// Whose share of the session pool it counts against (see [`client_key`]).
    client: Option<String>,
}

/// What a legacy request holds until its handler ends, even after its client hung up: its
/// permits of the server's and the session's in-flight caps.
struct Held {
    _server: Arc<Permit>,
    _session: Option<OwnedSemaphorePermit>,
}

/// A request's place under the server's caps (in flight, or a listen stream with its client's
/// share), given back when the last holder (the response body, a detached legacy request)
/// drops it.
pub(crate) struct Permit {
    _place: OwnedSemaphorePermit,
    _share: Option<crate::quota::Share>,
}

/// Whose share a request counts against: its principal, else its peer address, else nobody's
/// (a server mounted in another router without authentication sees no peer).
fn client_key(principal: Option<&Principal>, peer: Option<std::net::IpAddr>) -> Option<String> {
    match principal {
        Some(principal) => {
            mcp_server_core::tasks::owner_key(Some(principal)).map(|k| format!("p{k}"))
        }
        None => peer.map(|peer| format!("a{peer}")),
    }
}

/// The session's GET stream in event ids (`g.7`); POST streams are `p{n}`.
const GET_STREAM: &str = "g";

struct Inner {
    service: Service,
    allowed_origins: Option<Vec<String>>,
    allowed_hosts: Option<Vec<String>>,
    max_body: usize,
    verifier: Option<Arc<dyn TokenVerifier>>,
    protected: Option<Arc<ProtectedResource>>,
    /// The DPoP proofs this endpoint accepted, until their acceptance window ends.
    dpop_replay: Arc<crate::dpop::DpopReplay>,
    sessions: Mutex<HashMap<String, Arc<LegacySession>>>,
    session_idle: Duration,
    max_sessions: usize,
    sessions_per_client: usize,
    max_connections: usize,
    in_flight: Arc<Semaphore>,
    max_in_flight: usize,
    listen_streams: Arc<Semaphore>,
    max_listen_streams: usize,
    listen_per_client: Arc<crate::quota::Quota>,
    body_timeout: Duration,
    min_body_rate: u64,
    sweeper: AtomicBool,
    drain_grace: Duration,
    readiness_path: Option<String>,
    /// `true` once [`McpHttpService::serve_with_shutdown`] began to drain.
    draining: tokio::sync::watch::Sender<bool>,
    events: Arc<dyn EventStore>,
    session_id_prefix: String,
}

/// The MCP endpoint as a hyper and `tower` service: mount it in axum (`route_service`) or
/// serve it with [`serve`] / [`McpHttpService::serve_with_shutdown`].
#[derive(Clone)]
pub struct McpHttpService {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpHttpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHttpService")
            .field("service", &self.inner.service)
            .finish_non_exhaustive()
    }
}

fn local_origin(origin: &str) -> bool {
    let host = origin.split("://").nth(1).unwrap_or(origin);
    let host = host.split('/').next().unwrap_or(host);
    let host = if host.starts_with('[') {
        host.split(']').next().map(|h| &h[1..]).unwrap_or(host)
    } else {
        host.split(':').next().unwrap_or(host)
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

fn local_host(host: &str) -> bool {
    let name = if host.starts_with('[') {
        host.split(']').next().map(|h| &h[1..]).unwrap_or(host)
    } else {
        host.split(':').next().unwrap_or(host)
    };
    matches!(name, "localhost" | "127.0.0.1" | "::1")
}

impl McpHttpService {
    /// The endpoint for `service`. By default only local origins (`localhost`, `127.0.0.1`,
    /// `[::1]`) and local `Host` headers are accepted (DNS-rebinding protection), bodies are
    /// capped at 4 MiB, and no authentication is required.
    pub fn new(service: Service) -> Self {
        McpHttpService {
            inner: Arc::new(Inner {
                service,
                allowed_origins: None,
                allowed_hosts: None,
                max_body: DEFAULT_MAX_BODY,
                verifier: None,
                protected: None,
                dpop_replay: Arc::default(),
                sessions: Mutex::new(HashMap::new()),
                session_idle: SESSION_IDLE_TIMEOUT,
                max_sessions: DEFAULT_MAX_SESSIONS,
                sessions_per_client: DEFAULT_SESSIONS_PER_CLIENT,
                max_connections: DEFAULT_MAX_CONNECTIONS,
                in_flight: Arc::new(Semaphore::new(DEFAULT_MAX_IN_FLIGHT)),
                max_in_flight: DEFAULT_MAX_IN_FLIGHT,
                listen_streams: Arc::new(Semaphore::new(DEFAULT_MAX_LISTEN_STREAMS)),
                max_listen_streams: DEFAULT_MAX_LISTEN_STREAMS,
                listen_per_client: Arc::new(crate::quota::Quota::new(
                    DEFAULT_LISTEN_STREAMS_PER_CLIENT,
                )),
                body_timeout: DEFAULT_BODY_TIMEOUT,
                min_body_rate: DEFAULT_MIN_BODY_RATE,
                sweeper: AtomicBool::new(false),
                drain_grace: DEFAULT_DRAIN_GRACE,
                readiness_path: Some(DEFAULT_READINESS_PATH.to_owned()),
                draining: tokio::sync::watch::Sender::new(false),
                events: Arc::new(MemoryEventStore::new()),
                session_id_prefix: String::new(),
            }),
        }
    }

    fn map(self, f: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Arc::try_unwrap(self.inner).unwrap_or_else(|arc| Inner {
            service: arc.service.clone(),
            allowed_origins: arc.allowed_origins.clone(),
            allowed_hosts: arc.allowed_hosts.clone(),
            max_body: arc.max_body,
            verifier: arc.verifier.clone(),
            protected: arc.protected.clone(),
            dpop_replay: arc.dpop_replay.clone(),
            sessions: Mutex::new(HashMap::new()),
            session_idle: arc.session_idle,
            max_sessions: arc.max_sessions,
            sessions_per_client: arc.sessions_per_client,
            max_connections: arc.max_connections,
            in_flight: Arc::new(Semaphore::new(arc.max_in_flight)),
            max_in_flight: arc.max_in_flight,
            listen_streams: Arc::new(Semaphore::new(arc.max_listen_streams)),
            max_listen_streams: arc.max_listen_streams,
            listen_per_client: Arc::new(crate::quota::Quota::new(arc.listen_per_client.limit())),
            body_timeout: arc.body_timeout,
            min_body_rate: arc.min_body_rate,
            sweeper: AtomicBool::new(false),
            drain_grace: arc.drain_grace,
            readiness_path: arc.readiness_path.clone(),
            draining: tokio::sync::watch::Sender::new(false),
            events: arc.events.clone(),
            session_id_prefix: arc.session_id_prefix.clone(),
        });
        f(&mut inner);
        inner.in_flight = Arc::new(Semaphore::new(inner.max_in_flight));
        inner.listen_streams = Arc::new(Semaphore::new(inner.max_listen_streams));
        McpHttpService {
            inner: Arc::new(inner),
        }
    }

    /// Accepts these `Origin` values (exact match) instead of local origins only.
    pub fn allowed_origins<I: IntoIterator<Item = S>, S: Into<String>>(self, origins: I) -> Self {
        let origins = origins.into_iter().map(Into::into).collect();
        self.map(|i| i.allowed_origins = Some(origins))
    }

    /// Accepts these `Host` values (exact match, with port) instead of local hosts only.
    pub fn allowed_hosts<I: IntoIterator<Item = S>, S: Into<String>>(self, hosts: I) -> Self {
        let hosts = hosts.into_iter().map(Into::into).collect();
        self.map(|i| i.allowed_hosts = Some(hosts))
    }

    /// How long a legacy session may stay unused before it is closed (default 30 minutes).
    pub fn session_idle_timeout(self, timeout: Duration) -> Self {
        self.map(|i| i.session_idle = timeout)
    }

    /// The largest request body accepted (413 beyond).
    pub fn max_body(self, bytes: usize) -> Self {
        self.map(|i| i.max_body = bytes)
    }

    /// The most live legacy sessions (default 10,000). An `initialize` beyond it, once idle
    /// sessions are swept, is answered `503 "Too many sessions; try again later"`.
    pub fn max_sessions(self, sessions: usize) -> Self {
        self.map(|i| i.max_sessions = sessions)
    }

    /// The most live legacy sessions one client holds (default
    /// [`DEFAULT_SESSIONS_PER_CLIENT`], 1,000): its principal, else the peer address of its
    /// connection. Its next `initialize` closes its own least recently used session (whose
    /// later requests get `404 Session not found`), so one client cannot hold the whole
    /// session pool and no other client loses a session to it.
    pub fn sessions_per_client(self, sessions: usize) -> Self {
        self.map(|i| i.sessions_per_client = sessions.max(1))
    }

    /// The most open connections [`serve_with_shutdown`](Self::serve_with_shutdown) keeps
    /// (default 2,048). One more is answered `503 "Too many connections"` and closed.
    pub fn max_connections(self, connections: usize) -> Self {
        self.map(|i| i.max_connections = connections.max(1))
    }

    /// The most POSTs answered at once, SSE answers included until they end (default 1,024).
    /// One more is answered `503 "Too many requests in flight; retry shortly"`.
    pub fn max_in_flight(self, requests: usize) -> Self {
        self.map(|i| i.max_in_flight = requests.max(1))
    }

    /// The most `subscriptions/listen` streams open at once (default
    /// [`DEFAULT_MAX_LISTEN_STREAMS`], 1,024), apart from [`max_in_flight`](Self::max_in_flight):
    /// one more is answered `503 "Too many listen streams; retry shortly"`.
    pub fn max_listen_streams(self, streams: usize) -> Self {
        self.map(|i| i.max_listen_streams = streams.max(1))
    }

    /// The most `subscriptions/listen` streams one principal holds at once, or one peer
    /// address when requests are not authenticated (default
    /// [`DEFAULT_LISTEN_STREAMS_PER_CLIENT`], 64): one more is answered `503 "Too many listen
    /// streams for this client (at most N); close one first"`. A server mounted in another
    /// router sees no peer address, and only the principal counts there.
    pub fn listen_streams_per_client(self, streams: usize) -> Self {
        self.map(|i| i.listen_per_client = Arc::new(crate::quota::Quota::new(streams.max(1))))
    }

    /// The slowest average rate a request body may arrive at after its first
    /// [`BODY_RATE_GRACE`] (2 s), in bytes per second (default [`DEFAULT_MIN_BODY_RATE`], 8 KiB/s):
    /// a body that falls behind is answered `408`, so a trickling client cannot hold its
    /// connection for the whole [`body_timeout`](Self::body_timeout). `0` turns the check off.
    pub fn min_body_rate(self, bytes_per_second: u64) -> Self {
        self.map(|i| i.min_body_rate = bytes_per_second)
    }

    /// How long a client may take to send a request body once its headers arrived (default
    /// 30 s); `408 "The request body did not arrive in time"` beyond.
    pub fn body_timeout(self, timeout: Duration) -> Self {
        self.map(|i| i.body_timeout = timeout)
    }

    /// How long [`serve_with_shutdown`](Self::serve_with_shutdown), once told to stop, keeps
    /// serving the connections it already has (default [`DEFAULT_DRAIN_GRACE`], 5 s). During
    /// the drain every response carries `Connection: close`, so a load balancer that sends one
    /// more request on a pooled connection gets its answer instead of a reset; the drain ends
    /// early once every connection has closed. Set it at least as long as the load balancer's
    /// idle keep-alive timeout towards this server (nginx: `keepalive_timeout` in `upstream`).
    pub fn drain_grace(self, grace: Duration) -> Self {
        self.map(|i| i.drain_grace = grace)
    }

    /// Where [`serve_with_shutdown`](Self::serve_with_shutdown) answers `GET` with `200 ready`,
    /// or `503 draining` once shutdown began (default [`DEFAULT_READINESS_PATH`], `/ready`);
    /// `None` serves no readiness endpoint. It needs no authentication and reveals nothing but
    /// whether this instance takes new work.
    pub fn readiness_path(self, path: Option<&str>) -> Self {
        let path = path.map(str::to_owned);
        self.map(|i| i.readiness_path = path)
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
        self.map(|i| i.session_id_prefix = prefix)
    }

    /// Where the SSE events of 2025-11-25 sessions are kept for clients that reconnect with
    /// `Last-Event-ID` (default: a [`MemoryEventStore`] with its default limits). Every event
    /// of a session's POST and GET streams carries an id; a POST stream opens with a priming
    /// event (an id, `retry:` [`SSE_RETRY`], no data), and a client whose stream broke gets
    /// the events it missed, and then the rest, from a GET naming the last id it saw.
    /// 2026-07-28 streams have no event ids and are never stored.
    pub fn event_store(self, store: Arc<dyn EventStore>) -> Self {
        self.map(|i| i.events = store)
    }

    /// Protects the endpoint: every request needs an `Authorization: Bearer` token that
    /// `verifier` accepts, whose audience names `resource` and which carries its required
    /// scopes (401 or 403 with `WWW-Authenticate` otherwise). The protected resource metadata
    /// is served, without authentication, at [`ProtectedResource::metadata_path`]; mount that
    /// path too when the endpoint lives inside another router.
    pub fn bearer_auth(self, verifier: impl TokenVerifier, resource: ProtectedResource) -> Self {
        let verifier: Arc<dyn TokenVerifier> = Arc::new(verifier);
        let resource = Arc::new(resource);
        self.map(|i| {
            i.verifier = Some(verifier);
            i.protected = Some(resource);
        })
    }

    /// Where the DPoP proofs this endpoint accepted are remembered until their acceptance
    /// window ends (`iat` within 300 s), so a captured proof cannot be replayed: by default in
    /// this process, each key with its own share (1,024 proofs a window); a fleet passes a
    /// seen-store all its instances share (`mcp-store-redis`'s seen-store), so a proof spent
    /// on one instance is refused on every other.
    pub fn dpop_replay_store(self, store: Arc<dyn mcp_state_seal::SeenStore>) -> Self {
        let replay = Arc::new(crate::dpop::DpopReplay::Shared(store));
        self.map(|i| i.dpop_replay = replay)
    }

    /// The path of the protected resource metadata, when the endpoint is protected.
    pub fn metadata_path(&self) -> Option<String> {
        self.inner.protected.as_ref().map(|p| p.metadata_path())
    }

    /// The MCP service behind the endpoint.
    pub fn service(&self) -> &Service {
        &self.inner.service
    }

    /// Handles one HTTP request.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<McpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.inner.handle(request, None).await
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
        self.serve_accepted(listener, path, shutdown, Plain).await
    }

    /// The accept loop and the drain of every way of serving (plain TCP, TLS): the connection
    /// cap before anything else (a TLS handshake included, review W7), the peer address in
    /// each request, readiness, drain and closing sessions at shutdown.
    pub(crate) async fn serve_accepted<H: Handshake>(
        self,
        listener: TcpListener,
        path: &str,
        shutdown: impl Future<Output = ()> + Send,
        handshake: H,
    ) -> std::io::Result<()> {
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let path: Arc<str> = Arc::from(path);
        let connections = Arc::new(Semaphore::new(self.inner.max_connections));
        let mut backoff = ACCEPT_BACKOFF_MIN;
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => {
                        backoff = ACCEPT_BACKOFF_MIN;
                        crate::net::accepted(&accepted.0);
                        accepted
                    }
                    Err(e) => {
                        // Out of descriptors fails again at once: wait instead of spinning.
                        tracing::warn!(error = %e, retry_in = ?backoff, "accept failed");
                        tokio::select! {
                            () = tokio::time::sleep(backoff) => {}
                            () = &mut shutdown => break,
                        }
                        backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            let Ok(permit) = connections.clone().try_acquire_owned() else {
                tokio::spawn(H::refuse(stream));
                continue;
            };
            let endpoint = self.clone();
            let path = path.clone();
            let service =
                hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let endpoint = endpoint.clone();
                    let path = path.clone();
                    async move {
                        let mut response = endpoint.route_path(request, &path, peer.ip()).await;
                        if endpoint.inner.is_draining() {
                            // hyper closes the connection once this response is written.
                            response
                                .headers_mut()
                                .insert(header::CONNECTION, HeaderValue::from_static("close"));
                        }
                        Ok::<_, Infallible>(response)
                    }
                });
            let watcher = graceful.watcher();
            let handshake = handshake.clone();
            let mut draining = self.inner.draining.subscribe();
            tokio::spawn(async move {
                // The connection's place is held through its handshake too; a handshake still
                // under way when the drain begins is abandoned rather than waited for.
                let io = tokio::select! {
                    io = handshake.handshake(stream, peer) => io,
                    _ = draining.wait_for(|d| *d) => None,
                };
                let Some(io) = io else {
                    drop(permit);
                    return;
                };
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(HEADER_READ_TIMEOUT)
                    .serve_connection(hyper_util::rt::TokioIo::new(io), service);
                if let Err(e) = watcher.watch(connection).await {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
                drop(permit);
            });
        }
        // Session GET streams end now: their clients reconnect, and are refused or routed to
        // another instance, instead of holding the drain for its whole grace.
        self.inner.draining.send_replace(true);
        drop(listener);
        let max = self.inner.max_connections;
        let open = || max - connections.available_permits();
        tracing::info!(
            connections = open(),
            grace = ?self.inner.drain_grace,
            "draining: no longer accepting connections"
        );
        // Done when no connection is open and no task body runs here (a body cannot move
        // to another instance); the grace bounds the wait.
        let deadline = tokio::time::Instant::now() + self.inner.drain_grace;
        loop {
            if open() == 0 && self.inner.service.running_tasks() == 0 {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::info!(
                    connections = open(),
                    tasks = self.inner.service.running_tasks(),
                    "drain grace over: closing the remaining connections"
                );
                break;
            }
            tokio::time::sleep(DRAIN_POLL).await;
        }
        self.inner.service.shutdown();
        self.inner.close_sessions();
        if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!("requests were still in flight after the shutdown grace period");
        }
        Ok(())
    }

    /// Serves one request of [`serve_with_shutdown`](Self::serve_with_shutdown): the readiness
    /// path, the endpoint (and its metadata), 404 elsewhere.
    async fn route_path(
        &self,
        request: Request<hyper::body::Incoming>,
        path: &str,
        peer: std::net::IpAddr,
    ) -> Response<McpBody> {
        let requested = request.uri().path();
        if self.inner.readiness_path.as_deref() == Some(requested) {
            if request.method() != Method::GET && request.method() != Method::HEAD {
                let mut refused = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
                refused
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
                return refused;
            }
            return if self.inner.is_draining() {
                plain(StatusCode::SERVICE_UNAVAILABLE, "draining")
            } else {
                plain(StatusCode::OK, "ready")
            };
        }
        let served = requested == path
            || self
                .inner
                .protected
                .as_ref()
                .is_some_and(|p| requested == p.metadata_path());
        if !served {
            return plain(StatusCode::NOT_FOUND, "Not Found");
        }
        self.inner.handle(request, Some(peer)).await
    }
}

/// Resolves when the process is asked to stop: SIGTERM (what `kill`, systemd and container
/// runtimes send) or SIGINT (Ctrl-C). Pass it to
/// [`McpHttpService::serve_with_shutdown`] for a drain on either.
pub async fn shutdown_signal() {
    let interrupt = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = terminate.recv() => tracing::info!("SIGTERM: shutting down"),
                    () = interrupt => tracing::info!("SIGINT: shutting down"),
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    interrupt.await;
}

/// The `error_description` of every token a verifier refuses, whatever its reason.
pub(crate) const VERIFIER_REFUSAL: &str = "the access token is not valid";

/// What a client is told when the token verifier refuses the DPoP binding (its reason is logged).
pub(crate) const VERIFIER_DPOP_REFUSAL: &str = "the DPoP proof was refused";

/// How often a draining server looks whether its connections and tasks are done.
const DRAIN_POLL: Duration = Duration::from_millis(20);

const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(50);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// The answer of a connection beyond the cap: one 503, then close (bounded in time).
/// How an accepted connection becomes one HTTP is served on: as it is, or after a TLS
/// handshake.
pub(crate) trait Handshake: Clone + Send + Sync + 'static {
    /// The stream HTTP runs on.
    type Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static;

    /// The stream for `stream`, or `None` (logged) when the connection is to be dropped.
    fn handshake(
        &self,
        stream: tokio::net::TcpStream,
        peer: std::net::SocketAddr,
    ) -> impl Future<Output = Option<Self::Io>> + Send;

    /// What a connection past the cap gets before it is closed.
    fn refuse(stream: tokio::net::TcpStream) -> impl Future<Output = ()> + Send {
        refuse_connection(stream)
    }
}

/// Plain TCP: HTTP on the accepted stream itself.
#[derive(Clone, Copy)]
pub(crate) struct Plain;

impl Handshake for Plain {
    type Io = tokio::net::TcpStream;

    async fn handshake(
        &self,
        stream: tokio::net::TcpStream,
        _peer: std::net::SocketAddr,
    ) -> Option<Self::Io> {
        Some(stream)
    }
}

async fn refuse_connection(stream: tokio::net::TcpStream) {
    const REFUSAL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nretry-after: 1\r\ncontent-length: 20\r\nconnection: close\r\n\r\nToo many connections";
    let write = async {
        let mut rest = REFUSAL;
        while !rest.is_empty() {
            if stream.writable().await.is_err() {
                return;
            }
            match stream.try_write(rest) {
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return,
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
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
        Box::pin(async move { Ok(endpoint.inner.handle(request, None).await) })
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<McpBody> {
    let mut response = Response::new(McpBody::full(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn json(status: StatusCode, message: &JsonRpcMessage) -> Response<McpBody> {
    // Straight into one buffer (`to_string` would go through `Display` and copy twice).
    let mut bytes = Vec::with_capacity(512);
    if let Err(e) = serde_json::to_writer(&mut bytes, message) {
        tracing::error!(error = %e, "a response could not be serialized");
        return plain(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error");
    }
    let mut response = Response::new(McpBody::full(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The status for a JSON-RPC error on the 2026-07-28 path.
fn status_for(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        ErrorCode::PARSE_ERROR
        | ErrorCode::INVALID_REQUEST
        | ErrorCode::INVALID_PARAMS
        | ErrorCode::HEADER_MISMATCH
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

fn error(id: Option<RequestId>, error: ErrorObject) -> Response<McpBody> {
    let status = status_for(error.code);
    json(status, &JsonRpcMessage::Error(JsonRpcError::new(id, error)))
}

/// The MCP header names as parsed [`HeaderName`]s: a lookup by `&str` parses and validates the
/// name on every call.
mod names {
    use hyper::header::HeaderName;

    use crate::headers;

    pub(super) const SESSION_ID: HeaderName = HeaderName::from_static(headers::SESSION_ID);
    pub(super) const LAST_EVENT_ID: HeaderName = HeaderName::from_static(headers::LAST_EVENT_ID);
    pub(super) const PROTOCOL_VERSION: HeaderName =
        HeaderName::from_static(headers::PROTOCOL_VERSION);
    pub(super) const METHOD: HeaderName = HeaderName::from_static(headers::METHOD);
    pub(super) const NAME: HeaderName = HeaderName::from_static(headers::NAME);
}

fn header_str<K>(headers: &HeaderMap, name: K) -> Result<Option<&str>, String>
where
    K: header::AsHeaderName + std::fmt::Display + Copy,
{
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(format!("{name} header appears more than once"));
    }
    first
        .to_str()
        .map(|v| Some(v.trim()))
        .map_err(|_| format!("{name} header is not valid text"))
}

/// What a request's `Accept` headers take: JSON, SSE (`*/*` takes both), read in one pass.
#[derive(Clone, Copy, Default)]
struct Accepted {
    json: bool,
    sse: bool,
}

fn accepted_media(headers: &HeaderMap) -> Accepted {
    let mut accepted = Accepted::default();
    let ranges = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','));
    for range in ranges {
        match range.split(';').next().unwrap_or("").trim() {
            "*/*" => {
                return Accepted {
                    json: true,
                    sse: true,
                };
            }
            "application/json" => accepted.json = true,
            "text/event-stream" => accepted.sse = true,
            _ => {}
        }
    }
    accepted
}

/// The parts of a request's params the HTTP layer checks against headers.
#[derive(serde::Deserialize, Default)]
struct ParamsProbe {
    #[serde(rename = "_meta")]
    meta: Option<MetaProbe>,
    name: Option<Value>,
    uri: Option<Value>,
    #[serde(rename = "taskId")]
    task_id: Option<Value>,
}

impl ParamsProbe {
    /// The same parts, read from params that decoded as their method's type.
    fn of(typed: &ClientRequest) -> Self {
        let text = |v: &str| Some(Value::String(v.to_owned()));
        let mut probe = ParamsProbe {
            meta: Some(MetaProbe {
                protocol_version: typed
                    .meta()
                    .and_then(|m| m.protocol_version.as_deref())
                    .and_then(text),
            }),
            ..ParamsProbe::default()
        };
        match typed {
            ClientRequest::CallTool(p) => probe.name = text(&p.name),
            ClientRequest::GetPrompt(p) => probe.name = text(&p.name),
            ClientRequest::ReadResource(p) => probe.uri = text(&p.uri),
            ClientRequest::GetTask(p) | ClientRequest::CancelTask(p) => {
                probe.task_id = text(&p.task_id);
            }
            ClientRequest::UpdateTask(p) => probe.task_id = text(&p.task_id),
            _ => {}
        }
        probe
    }
}

/// The one member of `_meta` the HTTP layer reads, `protocolVersion`, without building the rest
/// (the service parses the whole envelope again). Any JSON is accepted: a `_meta` that is not
/// an object has no version, as before.
#[derive(Default)]
struct MetaProbe {
    protocol_version: Option<Value>,
}

impl<'de> serde::Deserialize<'de> for MetaProbe {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = MetaProbe;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<MetaProbe, A::Error> {
                let mut probe = MetaProbe::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key == mcp_types::meta::PROTOCOL_VERSION {
                        probe.protocol_version = Some(map.next_value()?);
                    } else {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
                Ok(probe)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<MetaProbe, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(MetaProbe::default())
            }
            fn visit_bool<E>(self, _: bool) -> Result<MetaProbe, E> {
                Ok(MetaProbe::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<MetaProbe, E> {
                Ok(MetaProbe::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<MetaProbe, E> {
                Ok(MetaProbe::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<MetaProbe, E> {
                Ok(MetaProbe::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<MetaProbe, E> {
                Ok(MetaProbe::default())
            }
            fn visit_unit<E>(self) -> Result<MetaProbe, E> {
                Ok(MetaProbe::default())
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

fn new_session_id() -> String {
    use std::fmt::Write;
    let mut bytes = [0u8; 16];
    if ring_fill(&mut bytes).is_err() {
        // Without randomness no session id is safe to mint.
        return String::new();
    }
    bytes.iter().fold(String::with_capacity(32), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn ring_fill(bytes: &mut [u8]) -> Result<(), ()> {
    mcp_state_seal::random_bytes(bytes).map_err(|_| ())
}

impl Inner {
    fn is_draining(&self) -> bool {
        *self.draining.borrow()
    }

    /// A place under the caps for `message`: a `subscriptions/listen` stream under the listen
    /// budget and its client's share of it (review W4), anything else under `max_in_flight`.
    fn admit(
        &self,
        message: &JsonRpcMessage,
        principal: Option<&Principal>,
        peer: Option<std::net::IpAddr>,
    ) -> Result<Arc<Permit>, Response<McpBody>> {
        let listen = matches!(message, JsonRpcMessage::Request(r)
            if r.method == mcp_types::methods::SUBSCRIPTIONS_LISTEN);
        if !listen {
            let Ok(place) = self.in_flight.clone().try_acquire_owned() else {
                return Err(busy("Too many requests in flight; retry shortly"));
            };
            return Ok(Arc::new(Permit {
                _place: place,
                _share: None,
            }));
        }
        let share = match client_key(principal, peer) {
            Some(client) => match self.listen_per_client.take(&client) {
                Some(share) => Some(share),
                None => {
                    return Err(busy_owned(format!(
                        "Too many listen streams for this client (at most {}); close one first",
                        self.listen_per_client.limit()
                    )));
                }
            },
            None => None,
        };
        let Ok(place) = self.listen_streams.clone().try_acquire_owned() else {
            return Err(busy("Too many listen streams; retry shortly"));
        };
        Ok(Arc::new(Permit {
            _place: place,
            _share: share,
        }))
    }

    /// One request through the pipeline: check where it comes from, authenticate, check its
    /// headers, read its body under the limits, route it by era, respond.
    /// `peer` is the address of the connection when this server accepted it (for the
    /// per-client shares), `None` when mounted in another router.
    async fn handle<B>(
        self: &Arc<Self>,
        request: Request<B>,
        peer: Option<std::net::IpAddr>,
    ) -> Response<McpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = request.into_parts();
        let cors_origin = match self.check_origin_and_host(&parts) {
            Ok(origin) => origin,
            Err(refused) => return refused,
        };
        let mut response = self.serve(parts, body, cors_origin.is_some(), peer).await;
        if let Some(origin) = cors_origin {
            cors_headers(response.headers_mut(), &origin);
        }
        response
    }

    async fn serve<B>(
        self: &Arc<Self>,
        parts: hyper::http::request::Parts,
        body: B,
        cors: bool,
        peer: Option<std::net::IpAddr>,
    ) -> Response<McpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if let Some(metadata) = self.metadata(&parts) {
            return metadata;
        }
        if parts.method == Method::OPTIONS && cors {
            return preflight(&parts.headers);
        }
        let principal = match self
            .authenticate(parts.method.as_str(), &parts.headers)
            .await
        {
            Ok(principal) => principal,
            Err(refused) => return refused,
        };
        let session_id = match header_str(&parts.headers, &names::SESSION_ID) {
            Ok(id) => id.map(str::to_owned),
            Err(e) => return plain_owned(StatusCode::BAD_REQUEST, e),
        };
        match parts.method {
            Method::POST => {}
            Method::GET => {
                let last_event_id = match header_str(&parts.headers, &names::LAST_EVENT_ID) {
                    Ok(id) => id,
                    Err(e) => return plain_owned(StatusCode::BAD_REQUEST, e),
                };
                return self
                    .get(session_id.as_deref(), principal.as_ref(), last_event_id)
                    .await;
            }
            Method::DELETE => return self.delete(session_id.as_deref(), principal.as_ref()),
            _ => return not_allowed(),
        }
        let accepted = accepted_media(&parts.headers);
        if let Err(refused) = check_post_headers(&parts.headers, accepted) {
            return refused;
        }
        // The body is read before a place under the caps is taken (review W25): a client that
        // sends its body slowly holds its connection only, and the minimum rate bounds that.
        let bytes = match self.read_body(body).await {
            Ok(bytes) => bytes,
            Err(refused) => return refused,
        };
        let message = match parse_message(&bytes) {
            Ok(message) => message,
            Err(refused) => return refused,
        };
        drop(bytes);
        // Held until the answer is sent, and by a legacy request that runs on after its client
        // hung up until it ends: the whole exchange counts against the cap. A listen stream,
        // which lives long, counts against its own budget and its client's share (review W4).
        let permit = match self.admit(&message, principal.as_ref(), peer) {
            Ok(permit) => permit,
            Err(refused) => return refused,
        };
        let request_headers = Arc::new(parts.headers);
        // The replay guard's claim of this request is marked done once its body was written.
        let delivery = Arc::new(Delivery::new());
        let incoming = Incoming {
            sse: accepted.sse,
            transport: TransportContext {
                principal,
                context: Some(request_headers.clone()),
                delivery: Some(delivery.clone()),
            },
            headers: request_headers,
            permit: permit.clone(),
            peer,
        };
        self.route(message, incoming, session_id)
            .await
            .map(|body| body.holding(permit).delivering(delivery))
    }

    /// DNS-rebinding protection: a browser page elsewhere must not reach a local server. A
    /// value that is not text, or a missing `Host`, is refused like a foreign one. Answers the
    /// origin to echo in CORS headers, when origins are configured and this one is listed.
    fn check_origin_and_host(
        &self,
        parts: &hyper::http::request::Parts,
    ) -> Result<Option<String>, Response<McpBody>> {
        let mut cors = None;
        // A second Origin or Host is refused rather than ignored (review W23): whoever reads
        // the other one would decide on another value than this check did. Scheme and host
        // compare without regard to case, as browsers and DNS treat them.
        let repeated = |name| parts.headers.get_all(name).iter().nth(1).is_some();
        if let Some(origin) = parts.headers.get(header::ORIGIN) {
            let refused = || plain(StatusCode::FORBIDDEN, "Invalid Origin header");
            if repeated(header::ORIGIN) {
                return Err(refused());
            }
            let origin = origin.to_str().map_err(|_| refused())?;
            let allowed = match &self.allowed_origins {
                Some(list) => list.iter().any(|o| o.eq_ignore_ascii_case(origin)),
                None => local_origin(&origin.to_ascii_lowercase()),
            };
            if !allowed {
                return Err(refused());
            }
            if self.allowed_origins.is_some() {
                cors = Some(origin.to_owned());
            }
        }
        let refused = || plain(StatusCode::MISDIRECTED_REQUEST, "Invalid Host header");
        if repeated(header::HOST) {
            return Err(refused());
        }
        let host = match parts.headers.get(header::HOST) {
            Some(host) => host.to_str().map_err(|_| refused())?,
            None => match parts.uri.authority() {
                Some(authority) => authority.as_str(),
                None => {
                    return Err(plain(
                        StatusCode::MISDIRECTED_REQUEST,
                        "Missing Host header",
                    ));
                }
            },
        };
        let allowed = match &self.allowed_hosts {
            Some(list) => list.iter().any(|h| h.eq_ignore_ascii_case(host)),
            None => local_host(&host.to_ascii_lowercase()),
        };
        if !allowed {
            return Err(refused());
        }
        Ok(cors)
    }

    /// The protected resource metadata document, when this request asks for it.
    fn metadata(&self, parts: &hyper::http::request::Parts) -> Option<Response<McpBody>> {
        let protected = self.protected.as_ref()?;
        if parts.uri.path() != protected.metadata_path() {
            return None;
        }
        Some(match parts.method {
            Method::GET | Method::HEAD => {
                let mut response = Response::new(McpBody::full(protected.document().to_string()));
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                response
            }
            _ => not_allowed(),
        })
    }

    /// The bearer check, before anything else of the request is looked at. The verifier's
    /// reason is logged at debug only: it may name internal hosts.
    async fn authenticate(
        &self,
        method: &str,
        headers: &HeaderMap,
    ) -> Result<Option<Principal>, Response<McpBody>> {
        let (Some(verifier), Some(protected)) = (&self.verifier, &self.protected) else {
            return Ok(None);
        };
        // Bearer or DPoP (RFC 9449) tokens; the verifier's own words stay in the log.
        let verified = crate::auth::authenticate(
            verifier.as_ref(),
            protected,
            &self.dpop_replay,
            method,
            headers,
        )
        .await;
        let e = match verified {
            Ok(principal) => return Ok(Some(principal)),
            Err(e) => e,
        };
        tracing::debug!(reason = %e, "request refused");
        let status = match e {
            AuthError::InsufficientScope(_) => StatusCode::FORBIDDEN,
            _ => StatusCode::UNAUTHORIZED,
        };
        let mut response = plain(
            status,
            if status == StatusCode::FORBIDDEN {
                "Forbidden"
            } else {
                "Unauthorized"
            },
        );
        if let Ok(value) = HeaderValue::from_str(&protected.challenge(&e)) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        Err(response)
    }

    /// The body, within the size cap (413) and the read deadline (408): a client that sends
    /// it slowly holds a connection and a buffer only that long.
    async fn read_body<B>(&self, body: B) -> Result<Bytes, Response<McpBody>>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let read = read_at_rate(Limited::new(body, self.max_body), self.min_body_rate);
        match tokio::time::timeout(self.body_timeout, read).await {
            Err(_) | Ok(Err(BodyRead::TooSlow)) => Err(plain(
                StatusCode::REQUEST_TIMEOUT,
                "The request body did not arrive in time",
            )),
            Ok(Ok(collected)) => Ok(collected),
            Ok(Err(BodyRead::Failed(e))) => Err(body_failure(e)),
        }
    }
}

/// Why a body could not be read.
enum BodyRead {
    /// It fell behind the minimum rate.
    TooSlow,
    /// The body itself failed (too large, a broken connection).
    Failed(Box<dyn std::error::Error + Send + Sync>),
}

/// Collects `body`, failing once it falls behind `rate` bytes a second on average after
/// [`BODY_RATE_GRACE`] (review W25): by then it must have sent `rate` bytes for every second
/// past the grace. `0` reads at any rate.
async fn read_at_rate<B>(body: B, rate: u64) -> Result<Bytes, BodyRead>
where
    B: Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let started = tokio::time::Instant::now();
    let mut body = std::pin::pin!(body);
    let mut collected = bytes::BytesMut::new();
    loop {
        let frame = if rate == 0 {
            body.frame().await
        } else {
            // The next bytes must come before the received ones stop covering the time spent.
            let covered = Duration::from_secs_f64(collected.len() as f64 / rate as f64);
            let due = started + BODY_RATE_GRACE + covered;
            match tokio::time::timeout_at(due, body.frame()).await {
                Ok(frame) => frame,
                Err(_) => return Err(BodyRead::TooSlow),
            }
        };
        match frame {
            None => return Ok(collected.freeze()),
            Some(Err(e)) => return Err(BodyRead::Failed(e.into())),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    collected.extend_from_slice(&data);
                }
            }
        }
    }
}

/// The answer to a body that failed to arrive.
fn body_failure(e: Box<dyn std::error::Error + Send + Sync>) -> Response<McpBody> {
    if e.downcast_ref::<http_body_util::LengthLimitError>()
        .is_some()
    {
        plain(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large")
    } else {
        tracing::debug!(error = %e, "reading the request body failed");
        plain(StatusCode::BAD_REQUEST, "Could not read the request body")
    }
}

impl Inner {
    /// Era routing. A request carrying the 2026-07-28 envelope is stateless: it is checked and
    /// served the same with or without `Mcp-Session-Id`, which it never depends on. Anything
    /// else with a session id belongs to that legacy session; an `initialize` opens one.
    async fn route(
        self: &Arc<Self>,
        message: JsonRpcMessage,
        incoming: Incoming,
        session_id: Option<String>,
    ) -> Response<McpBody> {
        let request = match message {
            JsonRpcMessage::Request(request) => request,
            other => {
                if let Some(id) = session_id {
                    return self.in_session(&id, other, incoming).await;
                }
                return match other {
                    JsonRpcMessage::Notification(_) => accepted(),
                    _ => error(
                        None,
                        ErrorObject::new(
                            ErrorCode::INVALID_REQUEST,
                            "a response is only accepted on a 2025-11-25 session",
                        ),
                    ),
                };
            }
        };
        // Without a session id this is (almost always) a stateless 2026-07-28 request: its
        // params are decoded once, here, and the header checks read the typed values; the
        // service gets the decoded request. A request naming a session, or params that do not
        // decode, are probed from the raw JSON as any value.
        let typed = session_id
            .is_none()
            .then(|| ClientRequest::from_request(&request));
        let probe = match &typed {
            Some(Ok(typed)) => ParamsProbe::of(typed),
            _ => request
                .params
                .as_deref()
                .and_then(|p| serde_json::from_str(p.get()).ok())
                .unwrap_or_default(),
        };
        let meta_version = probe
            .meta
            .as_ref()
            .and_then(|m| m.protocol_version.as_ref())
            .and_then(Value::as_str)
            .map(str::to_owned);
        if meta_version.is_none()
            && let Some(id) = session_id
        {
            return self
                .in_session(&id, JsonRpcMessage::Request(request), incoming)
                .await;
        }
        let version_header = match header_str(&incoming.headers, &names::PROTOCOL_VERSION) {
            Ok(v) => v.map(str::to_owned),
            Err(e) => return error(Some(request.id), ErrorObject::header_mismatch(e)),
        };
        let handshake_header = version_header
            .as_deref()
            .is_some_and(|v| LEGACY_VERSIONS.contains(&v));
        let Some(meta_version) = meta_version else {
            // Legacy clients open a session with `initialize` and no modern header or envelope.
            if request.method == mcp_types::methods::INITIALIZE
                && (version_header.is_none() || handshake_header)
            {
                return self.initialize(request, incoming).await;
            }
            if handshake_header {
                return plain(StatusCode::BAD_REQUEST, "Bad Request: Missing session ID");
            }
            // The service answers the missing envelope.
            return respond(
                self.handle_modern(request, typed, incoming.transport),
                incoming.sse,
            )
            .await;
        };
        if let Err(mismatch) = self.check_modern_headers(
            &incoming.headers,
            &request,
            &probe,
            &meta_version,
            version_header.as_deref(),
        ) {
            return error(Some(request.id), mismatch);
        }
        respond(
            self.handle_modern(request, typed, incoming.transport),
            incoming.sse,
        )
        .await
    }

    /// Hands a 2026-07-28 request to the service, with its params if `route` decoded them.
    fn handle_modern(
        &self,
        request: mcp_types::JsonRpcRequest,
        typed: Option<Result<ClientRequest, ParamsError>>,
        transport: TransportContext,
    ) -> ResponseStream {
        match typed {
            Some(typed) => self
                .service
                .handle_modern_decoded(request, typed, transport),
            None => self.service.handle_modern(request, transport),
        }
    }

    /// The 2026-07-28 header checks, in the digest's order: `MCP-Protocol-Version` present
    /// and equal to the envelope's, then (for a version this server speaks) `Mcp-Method`,
    /// `Mcp-Name` and the tool's `Mcp-Param-*` headers against the body.
    fn check_modern_headers(
        &self,
        headers: &HeaderMap,
        request: &mcp_types::JsonRpcRequest,
        probe: &ParamsProbe,
        meta_version: &str,
        version_header: Option<&str>,
    ) -> Result<(), ErrorObject> {
        match version_header {
            None => {
                return Err(ErrorObject::header_mismatch(
                    "the MCP-Protocol-Version header is required",
                ));
            }
            Some(header) if header != meta_version => {
                return Err(ErrorObject::header_mismatch(
                    "mcp-protocol-version header does not match the request envelope's protocol version",
                ));
            }
            Some(_) => {}
        }
        if !MODERN_VERSIONS.contains(&meta_version) {
            // The service answers the unsupported version.
            return Ok(());
        }
        check_routing_headers(headers, &request.method, probe)
            .and_then(|()| self.check_param_headers(headers, request, probe))
            .map_err(ErrorObject::header_mismatch)
    }

    /// `Mcp-Param-{Name}` against the argument it mirrors, for tools that annotate arguments
    /// with `x-mcp-header`: present when the argument is, equal to it once decoded (integers
    /// numerically).
    fn check_param_headers(
        &self,
        headers: &HeaderMap,
        request: &mcp_types::JsonRpcRequest,
        probe: &ParamsProbe,
    ) -> Result<(), String> {
        if request.method != mcp_types::methods::TOOLS_CALL {
            return Ok(());
        }
        let Some(mirrored) = probe
            .name
            .as_ref()
            .and_then(Value::as_str)
            .and_then(|name| self.service.param_headers(name))
        else {
            return Ok(());
        };
        #[derive(serde::Deserialize)]
        struct Arguments {
            arguments: Option<JsonObject>,
        }
        let arguments = request
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str::<Arguments>(p.get()).ok())
            .and_then(|a| a.arguments)
            .unwrap_or_default();
        for param in mirrored {
            let header_name = format!("{}{}", headers::PARAM_PREFIX, param.name);
            let raw = header_str(headers, header_name.as_str())?;
            let argument = param.path.join(".");
            let Some(value) = param.value_in(&arguments) else {
                continue;
            };
            let Some(raw) = raw else {
                return Err(format!(
                    "the Mcp-Param-{} header is required: the body has the '{argument}' argument",
                    param.name
                ));
            };
            let decoded = headers::decode_value(raw).map_err(|e| {
                format!("mcp-param-{} header: {e}", param.name.to_ascii_lowercase())
            })?;
            if !mirrors(&decoded, value) {
                return Err(format!(
                    "mcp-param-{} header does not match the request body's '{argument}' argument",
                    param.name.to_ascii_lowercase()
                ));
            }
        }
        Ok(())
    }

    async fn initialize(
        self: &Arc<Self>,
        request: mcp_types::JsonRpcRequest,
        incoming: Incoming,
    ) -> Response<McpBody> {
        if self.live_sessions() >= self.max_sessions {
            self.sweep();
            if self.live_sessions() >= self.max_sessions {
                return busy("Too many sessions; try again later");
            }
        }
        let client = client_key(incoming.transport.principal.as_ref(), incoming.peer);
        if let Some(client) = &client {
            self.make_room_for(client);
        }
        let id = new_session_id();
        let id = if id.is_empty() {
            id
        } else {
            format!("{}{id}", self.session_id_prefix)
        };
        if id.is_empty() {
            return error(
                Some(request.id),
                ErrorObject::internal("no randomness to mint a session id"),
            );
        }
        let principal = incoming.transport.principal.clone();
        // The session keeps who opened it, never the handshake's headers (review W5: up to
        // hyper's ~400 KB of them, for the session's whole life); each later request brings
        // its own.
        let kept = TransportContext {
            principal: incoming.transport.principal.clone(),
            ..TransportContext::default()
        };
        let (session, unsolicited) = self.service.connect(kept);
        let answer = session
            .handle_with(
                JsonRpcMessage::Request(request),
                incoming.transport,
                incoming.sse,
            )
            .map(ResponseStream::collect);
        let answer = match answer {
            Some(answer) => answer.await.into_iter().next(),
            None => None,
        };
        // Only a successful handshake opens a session; a refused one leaves nothing behind.
        let Some(answer @ JsonRpcMessage::Response(_)) = answer else {
            return match answer {
                Some(message) => json(StatusCode::OK, &message),
                None => accepted(),
            };
        };
        let session = Arc::new(LegacySession {
            id: id.clone(),
            principal,
            stream: Arc::new(StreamSlot::new(unsolicited)),
            posts: Arc::default(),
            resumptions: Arc::default(),
            in_flight: Arc::new(Semaphore::new(session.limits().max_in_flight.max(1))),
            session,
            client,
        });
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.insert(id.clone(), session);
        }
        self.start_sweeper();
        let mut response = json(StatusCode::OK, &answer);
        if let Ok(value) = HeaderValue::from_str(&id) {
            response.headers_mut().insert(headers::SESSION_ID, value);
        }
        response
    }

    /// A message of legacy session `id`, sent by the principal that opened it.
    async fn in_session(
        &self,
        id: &str,
        message: JsonRpcMessage,
        incoming: Incoming,
    ) -> Response<McpBody> {
        let Some(session) = self.session(id, incoming.transport.principal.as_ref()) else {
            return plain(StatusCode::NOT_FOUND, "Session not found");
        };
        // Only requests run handlers: notifications and the client's answers to the server's
        // own questions always get through, or a session at its cap could never finish.
        let session_permit = match &message {
            JsonRpcMessage::Request(_) => match session.in_flight.clone().try_acquire_owned() {
                Ok(permit) => Some(permit),
                Err(_) => {
                    return busy_owned(format!(
                        "Too many requests in flight on this session (at most {}); retry shortly",
                        session.session.limits().max_in_flight
                    ));
                }
            },
            _ => None,
        };
        let held = Held {
            _server: incoming.permit.clone(),
            _session: session_permit,
        };
        let resumable = incoming.sse.then(|| Resumable {
            events: self.events.clone(),
            session: session.id.clone(),
            posts: session.posts.clone(),
            streams: session.resumptions.clone(),
        });
        legacy(
            &session.session,
            message,
            incoming.transport,
            resumable,
            held,
        )
        .await
    }

    /// Forgets the SSE history of a session that closed.
    fn forget_history(&self, session: &str) {
        let events = self.events.clone();
        let session = session.to_owned();
        tokio::spawn(async move {
            if let Err(e) = events.expire(&session).await {
                tracing::warn!(error = %e, "could not expire a closed session's SSE history");
            }
        });
    }

    fn live_sessions(&self) -> usize {
        self.sessions.lock().map(|s| s.len()).unwrap_or(usize::MAX)
    }

    /// Closes sessions idle past the timeout (a session with its GET stream open is in use).
    fn sweep(&self) {
        let now = tokio::time::Instant::now();
        let Ok(mut sessions) = self.sessions.lock() else {
            return;
        };
        sessions.retain(|_, s| {
            let fresh =
                s.stream.is_open() || now.duration_since(s.stream.last_seen()) < self.session_idle;
            if !fresh {
                s.session.close();
                let events = self.events.clone();
                let id = s.id.clone();
                tokio::spawn(async move {
                    let _ = events.expire(&id).await;
                });
            }
            fresh
        });
    }

    /// Closes `client`'s least recently used session when it holds its whole share (review
    /// W6): one client cannot take the session pool, and only its own sessions make room.
    fn make_room_for(&self, client: &str) {
        let evicted = {
            let Ok(mut sessions) = self.sessions.lock() else {
                return;
            };
            let mut held = 0;
            let mut oldest: Option<(&String, tokio::time::Instant)> = None;
            for (id, s) in sessions.iter() {
                if s.client.as_deref() != Some(client) {
                    continue;
                }
                held += 1;
                let seen = s.stream.last_seen();
                if oldest.is_none_or(|(_, at)| seen < at) {
                    oldest = Some((id, seen));
                }
            }
            match oldest {
                Some((id, _)) if held >= self.sessions_per_client => {
                    let id = id.clone();
                    sessions.remove(&id)
                }
                _ => None,
            }
        };
        if let Some(session) = evicted {
            tracing::debug!(
                "a client at its session share: its least recently used session closes"
            );
            session.session.close();
            self.forget_history(&session.id);
        }
    }

    /// Sweeps on a timer for as long as the endpoint lives, so idle sessions go even when no
    /// request names a session.
    fn start_sweeper(self: &Arc<Self>) {
        if self.sweeper.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let weak = Arc::downgrade(self);
        let period =
            (self.session_idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(60));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                inner.sweep();
            }
        });
    }

    /// Closes every legacy session (graceful shutdown): their GET streams end.
    fn close_sessions(&self) {
        let drained: Vec<_> = match self.sessions.lock() {
            Ok(mut sessions) => sessions.drain().map(|(_, s)| s).collect(),
            Err(_) => return,
        };
        for session in drained {
            session.session.close();
            self.forget_history(&session.id);
        }
    }

    /// The live session `id`, touched, when `principal` is the one that opened it (anyone
    /// else is told it does not exist).
    fn session(&self, id: &str, principal: Option<&Principal>) -> Option<Arc<LegacySession>> {
        let now = tokio::time::Instant::now();
        let session = self.sessions.lock().ok()?.get(id).cloned()?;
        if session.principal.as_ref() != principal {
            tracing::debug!("a session id was presented by another principal");
            return None;
        }
        if !session.stream.is_open()
            && now.duration_since(session.stream.last_seen()) >= self.session_idle
        {
            return None;
        }
        session.stream.touch();
        Some(session)
    }

    async fn get(
        &self,
        session_id: Option<&str>,
        principal: Option<&Principal>,
        last_event_id: Option<&str>,
    ) -> Response<McpBody> {
        let Some(id) = session_id else {
            return not_allowed();
        };
        let Some(session) = self.session(id, principal) else {
            return plain(StatusCode::NOT_FOUND, "Session not found");
        };
        let resume = match last_event_id.map(parse_event_id) {
            None => None,
            Some(Some(resume)) => Some(resume),
            Some(None) => {
                return plain(
                    StatusCode::BAD_REQUEST,
                    "Last-Event-ID is not an event id this server sent",
                );
            }
        };
        let mut after_get = 0;
        let mut replayed = Vec::new();
        match resume {
            Some((stream, after)) if stream != GET_STREAM => {
                return self.resume_post(&session, stream, after).await;
            }
            Some((_, after)) => {
                let misses = match session.resumptions.lock() {
                    Ok(streams) => streams.get_gap.misses(after),
                    Err(_) => true,
                };
                if misses {
                    return history_refusal(&EventStoreError::Gone);
                }
                match self
                    .events
                    .read_after(&session.id, GET_STREAM, after, Duration::ZERO)
                    .await
                {
                    Ok(replay) => replayed = replay.events,
                    Err(e) => return history_refusal(&e),
                }
                after_get = after;
            }
            None => {}
        }
        let mut draining = self.draining.subscribe();
        let session_closed = session.session.closed();
        let closed = async move {
            tokio::select! {
                () = session_closed => {}
                _ = draining.wait_for(|draining| *draining) => {}
            }
        };
        let Some(mut stream) = session.stream.open(closed) else {
            return plain(
                StatusCode::CONFLICT,
                "A stream is already open for this session",
            );
        };
        let (tx, rx) = tokio::sync::mpsc::channel(FRAME_QUEUE);
        let events = self.events.clone();
        let session_id = session.id.clone();
        let streams = session.resumptions.clone();
        tokio::spawn(async move {
            for (n, message) in replayed.iter().filter(|(n, _)| *n > after_get) {
                let frame = crate::body::event_with_id(&format!("{GET_STREAM}.{n}"), message);
                if tx.send(frame).await.is_err() {
                    return;
                }
            }
            loop {
                let message = tokio::select! {
                    message = stream.next() => match message {
                        Some(message) => message,
                        None => return,
                    },
                    () = tx.closed() => return,
                };
                // A message the client did not get is in the history: it resumes from there.
                // One the store failed to take goes out live only, and a resumption from
                // before it is refused (`410`) rather than served without it (review W22).
                let stored = stored_frame(&*events, &session_id, GET_STREAM, &message).await;
                if let Ok(mut streams) = streams.lock() {
                    match &stored {
                        Ok((n, _)) => streams.get_gap.stored(*n),
                        Err(_) => streams.get_gap.lost(),
                    }
                }
                let frame = match stored {
                    Ok((_, frame)) => frame,
                    Err(_) => live_frame(&message),
                };
                if tx.send(frame).await.is_err() {
                    return;
                }
            }
        });
        sse_response(McpBody::frames(rx))
    }

    /// A GET resuming POST stream `stream` after event `after`: what it missed, then the rest
    /// as the request produces it, until its answer. A stream whose history misses an event
    /// (the store failed) is refused like an expired one; once the request has ended, the
    /// stream closes after what the history holds, even when the store never recorded the end
    /// (review W22: it used to wait for the history to expire).
    async fn resume_post(
        &self,
        session: &LegacySession,
        stream: &str,
        after: u64,
    ) -> Response<McpBody> {
        let (broken, running) = match session.resumptions.lock() {
            Ok(streams) => (
                streams.is_broken(stream),
                streams.running.get(stream).cloned(),
            ),
            Err(_) => (true, None),
        };
        if broken {
            return history_refusal(&EventStoreError::Gone);
        }
        let first = match self
            .events
            .read_after(&session.id, stream, after, Duration::ZERO)
            .await
        {
            Ok(first) => first,
            Err(e) => return history_refusal(&e),
        };
        let (tx, rx) = tokio::sync::mpsc::channel(FRAME_QUEUE);
        let events = self.events.clone();
        let streams = session.resumptions.clone();
        let session = session.id.clone();
        let stream = stream.to_owned();
        let mut draining = self.draining.subscribe();
        tokio::spawn(async move {
            let mut replay = first;
            let mut after = after;
            let mut running = running;
            loop {
                for (n, message) in &replay.events {
                    let frame = crate::body::event_with_id(&format!("{stream}.{n}"), message);
                    if tx.send(frame).await.is_err() {
                        return;
                    }
                    after = *n;
                }
                let broken = streams.lock().map_or(true, |s| s.is_broken(&stream));
                // Ended, or nothing more will be recorded: a broken stream closes at once, and
                // its client's next resumption is refused.
                if replay.finished || broken {
                    return;
                }
                let Some(ended) = running.as_mut() else {
                    return;
                };
                let next = tokio::select! {
                    next = events.read_after(&session, &stream, after, crate::KEEP_ALIVE) => Some(next),
                    _ = ended.changed() => None,
                    () = tx.closed() => return,
                    _ = draining.wait_for(|draining| *draining) => return,
                };
                let next = match next {
                    Some(next) => next,
                    None => {
                        // The request ended: what it wrote before is in the history.
                        running = None;
                        events
                            .read_after(&session, &stream, after, Duration::ZERO)
                            .await
                    }
                };
                replay = match next {
                    Ok(replay) => replay,
                    Err(e) => {
                        tracing::warn!(error = %e, "a resumed SSE stream lost its history");
                        return;
                    }
                };
            }
        });
        sse_response(McpBody::frames(rx))
    }

    fn delete(&self, session_id: Option<&str>, principal: Option<&Principal>) -> Response<McpBody> {
        let Some(id) = session_id else {
            return not_allowed();
        };
        if self.session(id, principal).is_none() {
            return plain(StatusCode::NOT_FOUND, "Session not found");
        }
        let removed = self.sessions.lock().ok().and_then(|mut s| s.remove(id));
        match removed {
            Some(session) => {
                session.session.close();
                self.forget_history(&session.id);
                plain(StatusCode::OK, "")
            }
            None => plain(StatusCode::NOT_FOUND, "Session not found"),
        }
    }
}

/// What the route stage knows about a POST besides its message.
struct Incoming {
    headers: Arc<HeaderMap>,
    transport: TransportContext,
    sse: bool,
    /// The request's place under the server's caps.
    permit: Arc<Permit>,
    /// The peer address, when this server accepted the connection (see [`client_key`]).
    peer: Option<std::net::IpAddr>,
}

/// `Content-Type` and `Accept` of a POST.
fn check_post_headers(headers: &HeaderMap, accepted: Accepted) -> Result<(), Response<McpBody>> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !content_type.trim_start().starts_with("application/json") {
        return Err(plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        ));
    }
    if !accepted.json && !accepted.sse {
        return Err(plain(
            StatusCode::NOT_ACCEPTABLE,
            "Accept must include application/json and text/event-stream",
        ));
    }
    Ok(())
}

/// The body as one JSON-RPC message, or the error the spec names (400).
fn parse_message(bytes: &[u8]) -> Result<JsonRpcMessage, Response<McpBody>> {
    JsonRpcMessage::from_slice(bytes).map_err(|e| {
        let error_message = match e.kind {
            MessageErrorKind::Parse => "Parse error".to_owned(),
            MessageErrorKind::InvalidRequest => e.message.clone(),
        };
        let response = JsonRpcError {
            id: e
                .id
                .clone()
                .map_or(ErrorResponseId::Null, ErrorResponseId::Id),
            error: ErrorObject::new(e.code(), error_message),
            extra: JsonObject::new(),
        };
        json(StatusCode::BAD_REQUEST, &JsonRpcMessage::Error(response))
    })
}

/// Whether a decoded `Mcp-Param-*` value mirrors the argument: strings exactly, booleans as
/// `true`/`false`, integers exactly (`42.0` is `42` only where a double holds every integer,
/// up to 2^53: review W16, an intermediary must not see another id than the tool acts on),
/// other numbers as doubles.
fn mirrors(header: &str, value: &Value) -> bool {
    match value {
        Value::String(s) => header == s,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        Value::Number(n) => {
            let integer = n.as_i64().map(i128::from).or(n.as_u64().map(i128::from));
            let double = header.parse::<f64>().ok().filter(|h| h.is_finite());
            match integer {
                Some(v) => match header.parse::<i128>() {
                    Ok(h) => h == v,
                    Err(_) => double.is_some_and(|h| {
                        const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
                        h.fract() == 0.0 && h.abs() <= EXACT && h as i128 == v
                    }),
                },
                None => double.is_some_and(|h| n.as_f64() == Some(h)),
            }
        }
        _ => false,
    }
}

/// 503 with `Retry-After`, the refusal of every capacity limit.
fn busy(text: &'static str) -> Response<McpBody> {
    let mut response = plain(StatusCode::SERVICE_UNAVAILABLE, text);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// The request headers a browser client of this endpoint sends.
const CORS_REQUEST_HEADERS: [&str; 9] = [
    "content-type",
    "accept",
    "authorization",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "mcp-session-id",
    "last-event-id",
    "cache-control",
];

fn cors_headers(headers: &mut HeaderMap, origin: &str) {
    if let Ok(origin) = HeaderValue::from_str(origin) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(header::VARY, HeaderValue::from_static("Origin"));
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("Mcp-Session-Id, WWW-Authenticate"),
        );
    }
}

/// The answer to a CORS preflight from a configured origin: the methods, and the requested
/// headers when each is one MCP uses (including any `Mcp-Param-*`).
fn preflight(headers: &HeaderMap) -> Response<McpBody> {
    let mut response = Response::new(McpBody::empty());
    *response.status_mut() = StatusCode::NO_CONTENT;
    let out = response.headers_mut();
    out.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("POST, GET, DELETE"),
    );
    out.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    let requested = headers
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let known = requested
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .all(|h| {
            CORS_REQUEST_HEADERS.contains(&h.as_str()) || h.starts_with(headers::PARAM_PREFIX)
        });
    let allowed = if known && !requested.trim().is_empty() {
        HeaderValue::from_str(requested).ok()
    } else {
        None
    };
    out.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        allowed.unwrap_or_else(|| HeaderValue::from_static("content-type, accept, authorization, mcp-protocol-version, mcp-method, mcp-name, mcp-session-id, last-event-id")),
    );
    response
}

fn busy_owned(text: String) -> Response<McpBody> {
    let mut response = plain_owned(StatusCode::SERVICE_UNAVAILABLE, text);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

fn plain_owned(status: StatusCode, text: String) -> Response<McpBody> {
    let mut response = Response::new(McpBody::full(text));
    *response.status_mut() = status;
    response
}

fn not_allowed() -> Response<McpBody> {
    let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

fn accepted() -> Response<McpBody> {
    let mut response = Response::new(McpBody::empty());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

fn sse_response(body: McpBody) -> Response<McpBody> {
    let mut response = Response::new(body);
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-transform"),
    );
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// `Mcp-Method` and `Mcp-Name` against the body (values case-sensitive, names not).
fn check_routing_headers(
    headers: &HeaderMap,
    method: &str,
    probe: &ParamsProbe,
) -> Result<(), String> {
    match header_str(headers, &names::METHOD)? {
        None => return Err("the Mcp-Method header is required".to_owned()),
        Some(m) if m != method => {
            return Err("mcp-method header does not match the request body's method".to_owned());
        }
        Some(_) => {}
    }
    let (field, expected) = match method {
        mcp_types::methods::TOOLS_CALL | mcp_types::methods::PROMPTS_GET => ("name", &probe.name),
        mcp_types::methods::RESOURCES_READ => ("uri", &probe.uri),
        mcp_types::methods::TASKS_GET
        | mcp_types::methods::TASKS_UPDATE
        | mcp_types::methods::TASKS_CANCEL => ("taskId", &probe.task_id),
        _ => return Ok(()),
    };
    let Some(expected) = expected.as_ref().and_then(Value::as_str) else {
        return Ok(());
    };
    match header_str(headers, &names::NAME)? {
        None => Err("the Mcp-Name header is required".to_owned()),
        Some(raw) => {
            let value = headers::decode_value(raw).map_err(|e| format!("mcp-name header: {e}"))?;
            if value == expected {
                Ok(())
            } else {
                Err(format!(
                    "mcp-name header does not match the request body's '{field}' parameter"
                ))
            }
        }
    }
}

/// A 2026-07-28 request's answer: JSON when the response comes first, SSE when
/// notifications precede it (and the client accepts SSE; otherwise they are dropped).
async fn respond(mut stream: ResponseStream, sse: bool) -> Response<McpBody> {
    loop {
        let Some(first) = stream.next().await else {
            // Cancelled before answering: nothing more may be sent for it.
            return accepted();
        };
        match &first {
            JsonRpcMessage::Notification(_) | JsonRpcMessage::Request(_) if sse => {
                return sse_response(McpBody::sse(Some(first), stream));
            }
            JsonRpcMessage::Notification(_) | JsonRpcMessage::Request(_) => continue,
            JsonRpcMessage::Error(e) => return json(status_for(e.error.code), &first),
            JsonRpcMessage::Response(_) => return json(StatusCode::OK, &first),
        }
    }
}

/// Where a legacy POST's SSE answer is recorded, so that a client can resume it.
struct Resumable {
    events: Arc<dyn EventStore>,
    session: String,
    /// The session's count of POST streams, which names this one when it opens.
    posts: Arc<std::sync::atomic::AtomicU64>,
    /// The session's running and broken POST streams.
    streams: Arc<Mutex<Resumptions>>,
}

/// A message of a legacy session: requests answer like modern ones (server-to-client requests
/// ride the SSE stream), everything else is accepted. A client that takes no SSE has no
/// back-channel, so its handlers cannot ask it anything. An SSE answer is resumable: its
/// events are recorded under `resumable`, and a client that disconnects does not cancel the
/// request (2025-11-25: a disconnect is not a cancellation); it resumes with `Last-Event-ID`.
async fn legacy(
    session: &Session,
    message: JsonRpcMessage,
    transport: TransportContext,
    resumable: Option<Resumable>,
    held: Held,
) -> Response<McpBody> {
    let sse = resumable.is_some();
    match session.handle_with(message, transport, sse) {
        None => accepted(),
        Some(mut stream) => {
            let Some(first) = stream.next().await else {
                return accepted();
            };
            match (&first, resumable) {
                (JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_), _) => {
                    json(StatusCode::OK, &first)
                }
                (_, Some(resumable)) => sse_response(record(resumable, first, stream, held)),
                (_, None) => {
                    // A JSON-only client cannot receive mid-call requests; send the final answer.
                    while let Some(next) = stream.next().await {
                        if matches!(next, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)) {
                            return json(StatusCode::OK, &next);
                        }
                    }
                    accepted()
                }
            }
        }
    }
}

/// The SSE body of a resumable POST answer: a priming event, then each message stored and
/// sent with its id. The request runs to its end even when the client went away (its session
/// closing still cancels it), so its answer waits in the history; until then it holds its
/// in-flight permits (`held`), so hanging up does not free a place under the caps.
///
/// A message the store fails to take is delivered live if the client is still connected, and
/// the stream is marked broken either way: the history misses that message, so a resumption
/// is refused (`410`) rather than served without it (review W22). Nothing more is recorded for
/// a broken stream. The end of an intact stream is recorded, again after a failure, for up to
/// [`FINISH_RETRY_FOR`].
fn record(
    resumable: Resumable,
    first: JsonRpcMessage,
    mut stream: ResponseStream,
    held: Held,
) -> McpBody {
    let (tx, rx) = tokio::sync::mpsc::channel(FRAME_QUEUE);
    let Resumable {
        events,
        session,
        posts,
        streams,
    } = resumable;
    let name = format!(
        "p{}",
        posts.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
    );
    let (running, ended) = tokio::sync::watch::channel(());
    if let Ok(mut streams) = streams.lock() {
        streams.running.insert(name.clone(), ended);
    }
    tokio::spawn(async move {
        let priming = Bytes::from(format!(
            "id: {name}.0\nretry: {}\ndata: \n\n",
            SSE_RETRY.as_millis()
        ));
        let mut live = tx.send(priming).await.is_ok().then_some(tx);
        let mut next = Some(first);
        let mut broken = false;
        loop {
            let message = match next.take() {
                Some(message) => message,
                None => match stream.next().await {
                    Some(message) => message,
                    None => break,
                },
            };
            let frame = if broken {
                live_frame(&message)
            } else {
                match stored_frame(&*events, &session, &name, &message).await {
                    Ok((_, frame)) => frame,
                    Err(_) => {
                        broken = true;
                        if let Ok(mut streams) = streams.lock() {
                            streams.mark_broken(&name);
                        }
                        if live.is_none() {
                            tracing::warn!(
                                "an SSE stream lost a message: the event store failed and its client is gone; resuming it is refused"
                            );
                        }
                        live_frame(&message)
                    }
                }
            };
            if let Some(tx) = &live
                && tx.send(frame).await.is_err()
            {
                live = None;
            }
        }
        drop(held);
        // The request ended: resumptions waiting on it close after what the history holds.
        if let Ok(mut streams) = streams.lock() {
            streams.running.remove(&name);
        }
        drop(running);
        if !broken {
            finish_stream(&*events, &session, &name).await;
        }
    });
    McpBody::frames(rx)
}

/// Records the end of a stream, again after a failure (50 ms apart, doubling to 2 s) for up to
/// [`FINISH_RETRY_FOR`]: without it a resumption on another process would wait for the
/// history to expire.
async fn finish_stream(events: &dyn EventStore, session: &str, stream: &str) {
    let give_up = tokio::time::Instant::now() + FINISH_RETRY_FOR;
    let mut pause = Duration::from_millis(50);
    loop {
        let Err(e) = events.finish(session, stream).await else {
            return;
        };
        if tokio::time::Instant::now() + pause > give_up {
            tracing::warn!(error = %e, "could not mark an SSE stream ended in the event store");
            return;
        }
        tracing::debug!(error = %e, "marking an SSE stream ended failed; trying again");
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// `message` appended to the history: its number and its encoding with its event id; the
/// store's error (and a warning) when it fails.
async fn stored_frame(
    events: &dyn EventStore,
    session: &str,
    stream: &str,
    message: &JsonRpcMessage,
) -> Result<(u64, Bytes), EventStoreError> {
    match events.append(session, stream, message).await {
        Ok(n) => Ok((
            n,
            crate::body::event_with_id(&format!("{stream}.{n}"), message),
        )),
        Err(e) => {
            tracing::warn!(error = %e, "an SSE event could not be recorded in the event store");
            Err(e)
        }
    }
}

/// `message` as an SSE event without an id: for the live client only.
fn live_frame(message: &JsonRpcMessage) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

/// `p3.5` → (`p3`, 5); `g.2` → (`g`, 2). Anything else is not ours.
fn parse_event_id(id: &str) -> Option<(&str, u64)> {
    let (stream, n) = id.split_once('.')?;
    let n = n.parse().ok()?;
    let ours = stream == GET_STREAM
        || stream
            .strip_prefix('p')
            .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()));
    ours.then_some((stream, n))
}

/// The answer to a resumption the history cannot serve.
fn history_refusal(error: &EventStoreError) -> Response<McpBody> {
    match error {
        EventStoreError::Gone => plain(
            StatusCode::GONE,
            "The events after Last-Event-ID are no longer kept",
        ),
        other => {
            tracing::warn!(error = %other, "SSE resumption failed");
            busy("The event history is unavailable; retry shortly")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Review W16: past 2^53 two integers a double cannot tell apart are different arguments.
    #[test]
    fn a_param_header_mirrors_an_integer_exactly() {
        let big = serde_json::json!(9_007_199_254_740_993_u64);
        assert!(mirrors("9007199254740993", &big));
        assert!(!mirrors("9007199254740992", &big));
        assert!(!mirrors("9007199254740992.0", &big));
        assert!(mirrors("-5", &serde_json::json!(-5)));
        assert!(mirrors("42.0", &serde_json::json!(42)));
        assert!(!mirrors("42.5", &serde_json::json!(42)));
        assert!(mirrors("0.5", &serde_json::json!(0.5)));
        assert!(!mirrors("NaN", &serde_json::json!(0.5)));
    }

    fn probe(params: &str) -> ParamsProbe {
        serde_json::from_str(params).unwrap()
    }

    fn version(params: &str) -> Option<Value> {
        probe(params).meta.and_then(|m| m.protocol_version)
    }

    /// The probe read from decoded params and the one read from the raw JSON, as
    /// `(version, name, uri, taskId)`.
    /// `(version, name, uri, taskId)` of one probe.
    type Read = (Option<Value>, Option<Value>, Option<Value>, Option<Value>);

    fn both_probes(method: &str, params: &str) -> [Read; 2] {
        let raw = serde_json::value::RawValue::from_string(params.to_owned()).unwrap();
        let typed = ClientRequest::from_parts(method, Some(&raw)).unwrap();
        [ParamsProbe::of(&typed), probe(params)].map(|p| {
            (
                p.meta.and_then(|m| m.protocol_version),
                p.name,
                p.uri,
                p.task_id,
            )
        })
    }

    #[test]
    fn the_probe_of_decoded_params_reads_what_the_raw_probe_reads() {
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let cases = [
            (
                "tools/call",
                format!(r#"{{"name":"echo","arguments":{{"text":"hi"}},{meta}}}"#),
            ),
            ("prompts/get", format!(r#"{{"name":"greet",{meta}}}"#)),
            ("resources/read", format!(r#"{{"uri":"file:///a",{meta}}}"#)),
            ("tasks/get", format!(r#"{{"taskId":"t-1",{meta}}}"#)),
            ("tasks/cancel", format!(r#"{{"taskId":"t-2",{meta}}}"#)),
            ("tasks/list", format!(r#"{{{meta}}}"#)),
            ("tools/call", r#"{"name":"echo"}"#.to_owned()),
        ];
        for (method, params) in cases {
            let [typed, raw] = both_probes(method, &params);
            assert_eq!(typed, raw, "{method} {params}");
        }
        let [typed, _] = both_probes("tasks/get", &format!(r#"{{"taskId":"t-1",{meta}}}"#));
        assert_eq!(typed.0, Some(Value::from("2026-07-28")));
        assert_eq!(typed.3, Some(Value::from("t-1")));
    }

    #[test]
    fn accept_is_read_in_one_pass() {
        let read = |values: &[&str]| {
            let mut headers = HeaderMap::new();
            for v in values {
                headers.append(header::ACCEPT, HeaderValue::from_str(v).unwrap());
            }
            let a = accepted_media(&headers);
            (a.json, a.sse)
        };
        assert_eq!(read(&[]), (false, false));
        assert_eq!(read(&["application/json, text/event-stream"]), (true, true));
        assert_eq!(read(&["text/event-stream;q=0.5"]), (false, true));
        assert_eq!(
            read(&["text/html", " application/json ;q=1"]),
            (true, false)
        );
        assert_eq!(read(&["*/*"]), (true, true));
        assert_eq!(read(&["application/*"]), (false, false));
    }

    #[test]
    fn the_meta_probe_reads_only_the_protocol_version() {
        let params = r#"{"name":"echo","_meta":{"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},
            "io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}"#;
        assert_eq!(version(params), Some(Value::from("2026-07-28")));
        assert_eq!(probe(params).name, Some(Value::from("echo")));
        // Not a string: kept as sent, so the caller sees no version (as with a `Value` probe).
        assert_eq!(
            version(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}"#),
            Some(Value::from(7))
        );
        // A repeated key: the last one counts, as when `_meta` was read into a map.
        assert_eq!(
            version(
                r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"a","io.modelcontextprotocol/protocolVersion":"b"}}"#
            ),
            Some(Value::from("b"))
        );
        assert_eq!(version(r#"{"_meta":{}}"#), None);
    }

    #[test]
    fn a_meta_that_is_not_an_object_has_no_version_and_the_rest_is_still_read() {
        for meta in ["5", "-1", "1.5", "true", "null", r#""x""#, r#"[1,{"a":2}]"#] {
            let parsed = probe(&format!(
                r#"{{"_meta":{meta},"name":"echo","uri":"a://b"}}"#
            ));
            assert!(
                parsed.meta.and_then(|m| m.protocol_version).is_none(),
                "{meta}"
            );
            assert_eq!(parsed.name, Some(Value::from("echo")), "{meta}");
            assert_eq!(parsed.uri, Some(Value::from("a://b")), "{meta}");
        }
    }

    #[test]
    fn a_json_response_is_the_message_serialized() {
        let message = JsonRpcMessage::Error(JsonRpcError::new(
            Some(RequestId::Number(3)),
            ErrorObject::new(ErrorCode::INVALID_PARAMS, "bad \"quote\""),
        ));
        let response = json(StatusCode::BAD_REQUEST, &message);
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            HeaderValue::from_static("application/json")
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let body = runtime
            .block_on(response.into_body().collect())
            .unwrap()
            .to_bytes();
        assert_eq!(body, Bytes::from(message.to_string()));
    }
}
