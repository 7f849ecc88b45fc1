//! The Streamable HTTP server: one endpoint, both eras. Modern requests are stateless POSTs
//! validated in the digest's order; legacy clients get `initialize` + `Mcp-Session-Id`
//! sessions with server-to-client requests on the POST's SSE stream.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body::Body;
use http_body_util::{BodyExt, Limited};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use mcp_server_core::{
    LEGACY_VERSIONS, MODERN_VERSIONS, ResponseStream, Service, Session, TransportContext,
};
use mcp_types::jsonrpc::{ErrorResponseId, MessageErrorKind};
use mcp_types::{ErrorCode, ErrorObject, JsonObject, JsonRpcError, JsonRpcMessage, RequestId};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::auth::{AuthError, ProtectedResource, TokenVerifier};
use crate::body::McpBody;
use crate::headers;

/// The largest request body accepted unless configured (413 beyond).
pub const DEFAULT_MAX_BODY: usize = 4 * 1024 * 1024;
/// How long a client may take to send its request headers.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a legacy session may stay unused before it is closed.
pub const SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How long graceful shutdown waits for requests in flight.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// A legacy session on this endpoint.
struct LegacySession {
    session: Session,
    unsolicited: Mutex<Option<mpsc::UnboundedReceiver<JsonRpcMessage>>>,
    last_seen: Mutex<tokio::time::Instant>,
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
        });
        f(&mut inner);
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
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => {
                        crate::net::accepted(&accepted.0);
                        accepted
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        continue;
                    }
                },
                () = &mut shutdown => break,
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
            });
        }
        drop(listener);
        self.inner.service.shutdown();
        if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!("requests were still in flight after the shutdown grace period");
        }
        Ok(())
    }
}

/// Serves `service` at `http://{addr}/mcp` until the process ends.
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
    async fn handle<B>(&self, request: Request<B>) -> Response<McpBody>
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = request.into_parts();
        // DNS-rebinding protection: a browser page elsewhere must not reach a local server.
        if let Some(origin) = parts
            .headers
            .get(header::ORIGIN)
            .and_then(|o| o.to_str().ok())
        {
            let allowed = match &self.allowed_origins {
                Some(list) => list.iter().any(|o| o == origin),
                None => local_origin(origin),
            };
            if !allowed {
                return plain(StatusCode::FORBIDDEN, "Invalid Origin header");
            }
        }
        if let Some(host) = parts
            .headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
        {
            let allowed = match &self.allowed_hosts {
                Some(list) => list.iter().any(|h| h == host),
                None => local_host(host),
            };
            if !allowed {
                return plain(StatusCode::MISDIRECTED_REQUEST, "Invalid Host header");
            }
        }
        if let Some(protected) = &self.protected
            && parts.uri.path() == protected.metadata_path()
        {
            return match parts.method {
                Method::GET | Method::HEAD => {
                    let mut response =
                        Response::new(McpBody::full(protected.document().to_string()));
                    response.headers_mut().insert(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    );
                    response
                }
                _ => not_allowed(),
            };
        }
        let principal = match (&self.verifier, &self.protected) {
            (Some(verifier), Some(protected)) => {
                let token = parts
                    .headers
                    .get(header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| {
                        v.get(..7)
                            .filter(|scheme| scheme.eq_ignore_ascii_case("bearer "))
                            .map(|_| v[7..].trim())
                    })
                    .filter(|t| !t.is_empty());
                let verified = match token {
                    None => Err(AuthError::Missing),
                    Some(token) => match verifier.verify(token).await {
                        Ok(verified) => protected.admit(&verified).map(|()| verified.principal),
                        Err(e) => Err(e),
                    },
                };
                match verified {
                    Ok(principal) => Some(principal),
                    Err(e) => {
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
                        return response;
                    }
                }
            }
            _ => None,
        };
        let session_id = match header_str(&parts.headers, headers::SESSION_ID) {
            Ok(id) => id.map(str::to_owned),
            Err(e) => return plain_owned(StatusCode::BAD_REQUEST, e),
        };
        match parts.method {
            Method::POST => {}
            Method::GET => return self.get(session_id.as_deref()),
            Method::DELETE => return self.delete(session_id.as_deref()),
            _ => return not_allowed(),
        }
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !content_type.trim_start().starts_with("application/json") {
            return plain(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Content-Type must be application/json",
            );
        }
        if !accepts(&parts.headers, "application/json")
            && !accepts(&parts.headers, "text/event-stream")
        {
            return plain(
                StatusCode::NOT_ACCEPTABLE,
                "Accept must include application/json and text/event-stream",
            );
        }
        let bytes = match Limited::new(body, self.max_body).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e)
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some() =>
            {
                return plain(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large");
            }
            Err(e) => {
                tracing::debug!(error = %e, "reading the request body failed");
                return plain(StatusCode::BAD_REQUEST, "Could not read the request body");
            }
        };
        let message = match JsonRpcMessage::from_slice(&bytes) {
            Ok(message) => message,
            Err(e) => {
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
                return json(StatusCode::BAD_REQUEST, &JsonRpcMessage::Error(response));
            }
        };
        // The headers move into the context the handlers see; the checks below borrow them.
        let request_headers = Arc::new(parts.headers);
        let sse = accepts(&request_headers, "text/event-stream");
        let transport = TransportContext {
            principal,
            context: Some(request_headers.clone()),
        };

        if let Some(id) = session_id {
            let Some(session) = self.session(&id) else {
                return plain(StatusCode::NOT_FOUND, "Session not found");
            };
            return legacy(&session.session, message, sse).await;
        }
        let version_header = match header_str(&request_headers, headers::PROTOCOL_VERSION) {
            Ok(v) => v.map(str::to_owned),
            Err(e) => return error(message.id().cloned(), ErrorObject::header_mismatch(e)),
        };
        let handshake_header = version_header
            .as_deref()
            .is_some_and(|v| LEGACY_VERSIONS.contains(&v));
        let request = match message {
            JsonRpcMessage::Request(request) => request,
            JsonRpcMessage::Notification(_) => return accepted(),
            _ => {
                return error(
                    None,
                    ErrorObject::new(
                        ErrorCode::INVALID_REQUEST,
                        "a response is only accepted on a 2025-11-25 session",
                    ),
                );
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
        // Legacy clients open a session with `initialize` and no modern header or envelope.
        if request.method == mcp_types::methods::INITIALIZE
            && meta_version.is_none()
            && (version_header.is_none() || handshake_header)
        {
            return self.initialize(request, transport, sse).await;
        }
        if handshake_header && meta_version.is_none() {
            return plain(StatusCode::BAD_REQUEST, "Bad Request: Missing session ID");
        }
        // The 2026-07-28 pipeline: envelope, header vs envelope, version, routing headers.
        if let Some(meta_version) = &meta_version {
            match &version_header {
                None => {
                    return error(
                        Some(request.id),
                        ErrorObject::header_mismatch("the MCP-Protocol-Version header is required"),
                    );
                }
                Some(header) if header != meta_version => {
                    return error(
                        Some(request.id),
                        ErrorObject::header_mismatch(
                            "mcp-protocol-version header does not match the request envelope's protocol version",
                        ),
                    );
                }
                Some(_) => {}
            }
            if MODERN_VERSIONS.contains(&meta_version.as_str())
                && let Err(mismatch) =
                    check_routing_headers(&request_headers, &request.method, &probe)
            {
                return error(Some(request.id), ErrorObject::header_mismatch(mismatch));
            }
        }
        respond(self.service.handle_modern(request, transport), sse).await
    }

    async fn initialize(
        &self,
        request: mcp_types::JsonRpcRequest,
        transport: TransportContext,
        sse: bool,
    ) -> Response<McpBody> {
        let id = new_session_id();
        if id.is_empty() {
            return error(
                Some(request.id),
                ErrorObject::internal("no randomness to mint a session id"),
            );
        }
        let (session, unsolicited) = self.service.connect(transport);
        let session = Arc::new(LegacySession {
            session,
            unsolicited: Mutex::new(Some(unsolicited)),
            last_seen: Mutex::new(tokio::time::Instant::now()),
        });
        let mut response = legacy(&session.session, JsonRpcMessage::Request(request), sse).await;
        if response.status() == StatusCode::OK {
            if let Ok(mut sessions) = self.sessions.lock() {
                sessions.insert(id.clone(), session);
            }
            if let Ok(value) = HeaderValue::from_str(&id) {
                response.headers_mut().insert(headers::SESSION_ID, value);
            }
        }
        response
    }

    /// The live session `id`, touched; sessions idle past the timeout are closed on the way.
    fn session(&self, id: &str) -> Option<Arc<LegacySession>> {
        let now = tokio::time::Instant::now();
        let mut sessions = self.sessions.lock().ok()?;
        sessions.retain(|_, s| {
            let fresh = s
                .last_seen
                .lock()
                .map(|t| now.duration_since(*t) < self.session_idle)
                .unwrap_or(false);
            if !fresh {
                s.session.close();
            }
            fresh
        });
        let session = sessions.get(id).cloned()?;
        if let Ok(mut t) = session.last_seen.lock() {
            *t = now;
        }
        Some(session)
    }

    fn get(&self, session_id: Option<&str>) -> Response<McpBody> {
        let Some(id) = session_id else {
            return not_allowed();
        };
        let Some(session) = self.session(id) else {
            return plain(StatusCode::NOT_FOUND, "Session not found");
        };
        let Some(rx) = session.unsolicited.lock().ok().and_then(|mut u| u.take()) else {
            return plain(
                StatusCode::CONFLICT,
                "A stream is already open for this session",
            );
        };
        sse_response(McpBody::session_sse(rx))
    }

    fn delete(&self, session_id: Option<&str>) -> Response<McpBody> {
        let Some(id) = session_id else {
            return not_allowed();
        };
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
/// ride the SSE stream), everything else is accepted.
async fn legacy(session: &Session, message: JsonRpcMessage, sse: bool) -> Response<McpBody> {
    match session.handle(message) {
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
