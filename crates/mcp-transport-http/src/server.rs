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
use mcp_server_core::seal::Principal;
use mcp_server_core::{
    LEGACY_VERSIONS, MODERN_VERSIONS, ResponseStream, Service, Session, TransportContext,
};
use mcp_types::jsonrpc::{ErrorResponseId, MessageErrorKind};
use mcp_types::{ErrorCode, ErrorObject, JsonObject, JsonRpcError, JsonRpcMessage, RequestId};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

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
/// The most open connections unless configured (503 and close beyond).
pub const DEFAULT_MAX_CONNECTIONS: usize = 2_048;
/// The most POSTs being answered at once unless configured (503 beyond).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1_024;
/// How long a client may take to send its request body unless configured (408 beyond).
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// A legacy session on this endpoint, bound to the principal that opened it.
struct LegacySession {
    session: Session,
    principal: Option<Principal>,
    stream: Arc<StreamSlot>,
}

struct Inner {
    service: Service,
    allowed_origins: Option<Vec<String>>,
    allowed_hosts: Option<Vec<String>>,
    max_body: usize,
    verifier: Option<Arc<dyn TokenVerifier>>,
    protected: Option<Arc<ProtectedResource>>,
    sessions: Mutex<HashMap<String, Arc<LegacySession>>>,
    session_idle: Duration,
    max_sessions: usize,
    max_connections: usize,
    in_flight: Arc<Semaphore>,
    max_in_flight: usize,
    body_timeout: Duration,
    sweeper: AtomicBool,
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
                sessions: Mutex::new(HashMap::new()),
                session_idle: SESSION_IDLE_TIMEOUT,
                max_sessions: DEFAULT_MAX_SESSIONS,
                max_connections: DEFAULT_MAX_CONNECTIONS,
                in_flight: Arc::new(Semaphore::new(DEFAULT_MAX_IN_FLIGHT)),
                max_in_flight: DEFAULT_MAX_IN_FLIGHT,
                body_timeout: DEFAULT_BODY_TIMEOUT,
                sweeper: AtomicBool::new(false),
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
            sessions: Mutex::new(HashMap::new()),
            session_idle: arc.session_idle,
            max_sessions: arc.max_sessions,
            max_connections: arc.max_connections,
            in_flight: Arc::new(Semaphore::new(arc.max_in_flight)),
            max_in_flight: arc.max_in_flight,
            body_timeout: arc.body_timeout,
            sweeper: AtomicBool::new(false),
        });
        f(&mut inner);
        inner.in_flight = Arc::new(Semaphore::new(inner.max_in_flight));
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

    /// How long a client may take to send a request body once its headers arrived (default
    /// 30 s); `408 "The request body did not arrive in time"` beyond.
    pub fn body_timeout(self, timeout: Duration) -> Self {
        self.map(|i| i.body_timeout = timeout)
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
        self.inner.handle(request).await
    }

    /// Serves the endpoint at `path` on `addr` until `shutdown` resolves, then stops accepting,
    /// ends `subscriptions/listen` streams, and waits (up to 30 s) for requests in flight.
    pub async fn serve_with_shutdown(
        self,
        listener: TcpListener,
        path: &str,
        shutdown: impl Future<Output = ()> + Send,
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
                tokio::spawn(refuse_connection(stream));
                continue;
            };
            let endpoint = self.clone();
            let path = path.clone();
            let service =
                hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let endpoint = endpoint.clone();
                    let path = path.clone();
                    async move {
                        let served = request.uri().path() == &*path
                            || endpoint
                                .inner
                                .protected
                                .as_ref()
                                .is_some_and(|p| request.uri().path() == p.metadata_path());
                        if !served {
                            return Ok::<_, Infallible>(plain(StatusCode::NOT_FOUND, "Not Found"));
                        }
                        Ok(endpoint.handle(request).await)
                    }
                });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let connection = graceful.watch(connection);
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
                drop(permit);
            });
        }
        drop(listener);
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
}

/// The `error_description` of every token a verifier refuses, whatever its reason.
pub(crate) const VERIFIER_REFUSAL: &str = "the access token is not valid";

const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(50);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// The answer of a connection beyond the cap: one 503, then close (bounded in time).
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
        Box::pin(async move { Ok(endpoint.inner.handle(request).await) })
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

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, String> {
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

fn accepts(headers: &HeaderMap, media: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|m| {
            let m = m.split(';').next().unwrap_or("").trim();
            m == media || m == "*/*"
        })
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
    /// One request through the pipeline: check where it comes from, authenticate, check its
    /// headers, read its body under the limits, route it by era, respond.
    async fn handle<B>(self: &Arc<Self>, request: Request<B>) -> Response<McpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = request.into_parts();
        let cors_origin = match self.check_origin_and_host(&parts) {
            Ok(origin) => origin,
            Err(refused) => return refused,
        };
        let mut response = self.serve(parts, body, cors_origin.is_some()).await;
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
        let session_id = match header_str(&parts.headers, headers::SESSION_ID) {
            Ok(id) => id.map(str::to_owned),
            Err(e) => return plain_owned(StatusCode::BAD_REQUEST, e),
        };
        match parts.method {
            Method::POST => {}
            Method::GET => return self.get(session_id.as_deref(), principal.as_ref()),
            Method::DELETE => return self.delete(session_id.as_deref(), principal.as_ref()),
            _ => return not_allowed(),
        }
        if let Err(refused) = check_post_headers(&parts.headers) {
            return refused;
        }
        // Held until the answer is sent: the whole exchange counts against the cap.
        let Ok(permit) = self.in_flight.clone().try_acquire_owned() else {
            return busy("Too many requests in flight; retry shortly");
        };
        let bytes = match self.read_body(body).await {
            Ok(bytes) => bytes,
            Err(refused) => return refused,
        };
        let message = match parse_message(&bytes) {
            Ok(message) => message,
            Err(refused) => return refused,
        };
        drop(bytes);
        let request_headers = Arc::new(parts.headers);
        let incoming = Incoming {
            sse: accepts(&request_headers, "text/event-stream"),
            transport: TransportContext {
                principal,
                context: Some(request_headers.clone()),
            },
            headers: request_headers,
        };
        self.route(message, incoming, session_id)
            .await
            .map(|body| body.holding(permit))
    }

    /// DNS-rebinding protection: a browser page elsewhere must not reach a local server. A
    /// value that is not text, or a missing `Host`, is refused like a foreign one. Answers the
    /// origin to echo in CORS headers, when origins are configured and this one is listed.
    fn check_origin_and_host(
        &self,
        parts: &hyper::http::request::Parts,
    ) -> Result<Option<String>, Response<McpBody>> {
        let mut cors = None;
        if let Some(origin) = parts.headers.get(header::ORIGIN) {
            let refused = || plain(StatusCode::FORBIDDEN, "Invalid Origin header");
            let origin = origin.to_str().map_err(|_| refused())?;
            let allowed = match &self.allowed_origins {
                Some(list) => list.iter().any(|o| o == origin),
                None => local_origin(origin),
            };
            if !allowed {
                return Err(refused());
            }
            if self.allowed_origins.is_some() {
                cors = Some(origin.to_owned());
            }
        }
        let refused = || plain(StatusCode::MISDIRECTED_REQUEST, "Invalid Host header");
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
            Some(list) => list.iter().any(|h| h == host),
            None => local_host(host),
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
        let verified =
            crate::auth::authenticate(verifier.as_ref(), protected, method, headers).await;
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
        let read = Limited::new(body, self.max_body).collect();
        match tokio::time::timeout(self.body_timeout, read).await {
            Err(_) => Err(plain(
                StatusCode::REQUEST_TIMEOUT,
                "The request body did not arrive in time",
            )),
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
            Ok(Err(e))
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some() =>
            {
                Err(plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "Request body too large",
                ))
            }
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "reading the request body failed");
                Err(plain(
                    StatusCode::BAD_REQUEST,
                    "Could not read the request body",
                ))
            }
        }
    }

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
        let probe: ParamsProbe = request
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default();
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
        let version_header = match header_str(&incoming.headers, headers::PROTOCOL_VERSION) {
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
                self.service.handle_modern(request, incoming.transport),
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
            self.service.handle_modern(request, incoming.transport),
            incoming.sse,
        )
        .await
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
            let raw = header_str(headers, &header_name)?;
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
        let id = new_session_id();
        if id.is_empty() {
            return error(
                Some(request.id),
                ErrorObject::internal("no randomness to mint a session id"),
            );
        }
        let principal = incoming.transport.principal.clone();
        let (session, unsolicited) = self.service.connect(incoming.transport.clone());
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
            session,
            principal,
            stream: Arc::new(StreamSlot::new(unsolicited)),
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
        legacy(&session.session, message, incoming.transport, incoming.sse).await
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
            }
            fresh
        });
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

    fn get(&self, session_id: Option<&str>, principal: Option<&Principal>) -> Response<McpBody> {
        let Some(id) = session_id else {
            return not_allowed();
        };
        let Some(session) = self.session(id, principal) else {
            return plain(StatusCode::NOT_FOUND, "Session not found");
        };
        let Some(stream) = session.stream.open(session.session.closed()) else {
            return plain(
                StatusCode::CONFLICT,
                "A stream is already open for this session",
            );
        };
        sse_response(McpBody::session_sse(stream))
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
}

/// `Content-Type` and `Accept` of a POST.
fn check_post_headers(headers: &HeaderMap) -> Result<(), Response<McpBody>> {
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
    if !accepts(headers, "application/json") && !accepts(headers, "text/event-stream") {
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

/// Whether a decoded `Mcp-Param-*` value mirrors the argument: strings exactly, integers
/// numerically (`42.0` is `42`), booleans as `true`/`false`.
fn mirrors(header: &str, value: &Value) -> bool {
    match value {
        Value::String(s) => header == s,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        Value::Number(n) => match (header.parse::<f64>(), n.as_f64()) {
            (Ok(h), Some(v)) => h.is_finite() && h == v,
            _ => false,
        },
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
    match header_str(headers, headers::METHOD)? {
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
    match header_str(headers, headers::NAME)? {
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

/// A message of a legacy session: requests answer like modern ones (server-to-client requests
/// ride the SSE stream), everything else is accepted. A client that takes no SSE has no
/// back-channel, so its handlers cannot ask it anything.
async fn legacy(
    session: &Session,
    message: JsonRpcMessage,
    transport: TransportContext,
    sse: bool,
) -> Response<McpBody> {
    match session.handle_with(message, transport, sse) {
        None => accepted(),
        Some(mut stream) => {
            let Some(first) = stream.next().await else {
                return accepted();
            };
            match &first {
                JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {
                    json(StatusCode::OK, &first)
                }
                _ if sse => sse_response(McpBody::sse(Some(first), stream)),
                _ => {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(params: &str) -> ParamsProbe {
        serde_json::from_str(params).unwrap()
    }

    fn version(params: &str) -> Option<Value> {
        probe(params).meta.and_then(|m| m.protocol_version)
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
