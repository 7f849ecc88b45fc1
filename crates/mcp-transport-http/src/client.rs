//! The Streamable HTTP client transport: every request is a POST carrying the headers its era
//! needs; answers come back as JSON or SSE and are fed to the client's reader. Tools whose
//! `x-mcp-header` annotations are invalid are dropped from `tools/list` (with a warning), and
//! valid ones become `Mcp-Param-*` headers on their calls.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, StatusCode, Uri};
use mcp_client::{BoxFuture, Transport};
use mcp_types::methods;
use mcp_types::{ErrorCode, ErrorObject, JsonRpcError, JsonRpcMessage, JsonRpcResponse, RequestId};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::headers;
use crate::oauth::{Attempts, Auth, Retry};

/// One `x-mcp-header` annotation: the argument path and the header name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The property path inside `arguments`.
    pub path: Vec<String>,
    /// The `{Name}` of `Mcp-Param-{Name}`.
    pub name: String,
}

/// Reads a tool's `x-mcp-header` annotations, or says why they are invalid.
pub fn header_params(input_schema: &Value) -> Result<Vec<HeaderParam>, String> {
    fn walk(
        schema: &Value,
        path: &mut Vec<String>,
        via_properties: bool,
        out: &mut Vec<HeaderParam>,
    ) -> Result<(), String> {
        let Some(object) = schema.as_object() else {
            return Ok(());
        };
        if let Some(annotation) = object.get("x-mcp-header") {
            if !via_properties || path.is_empty() {
                return Err(
                    "an x-mcp-header annotation is not on a property reached through `properties`"
                        .into(),
                );
            }
            let name = annotation
                .as_str()
                .ok_or("an x-mcp-header annotation is not a string")?;
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
            {
                return Err(format!("x-mcp-header {name:?} is not a valid header name"));
            }
            let primitive = match object.get("type") {
                Some(Value::String(t)) => matches!(t.as_str(), "string" | "integer" | "boolean"),
                _ => false,
            };
            if !primitive {
                return Err(format!(
                    "x-mcp-header {name:?} annotates a property that is not a string, integer or boolean"
                ));
            }
            out.push(HeaderParam {
                path: path.clone(),
                name: name.to_owned(),
            });
        }
        for (key, child) in object {
            match key.as_str() {
                "properties" => {
                    for (prop, sub) in child.as_object().into_iter().flatten() {
                        path.push(prop.clone());
                        walk(sub, path, true, out)?;
                        path.pop();
                    }
                }
                "x-mcp-header" => {}
                _ => match child {
                    Value::Object(_) => walk(child, path, false, out)?,
                    Value::Array(items) => {
                        for item in items {
                            walk(item, path, false, out)?;
                        }
                    }
                    _ => {}
                },
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(input_schema, &mut Vec::new(), false, &mut out)?;
    let mut seen = std::collections::HashSet::new();
    for p in &out {
        if !seen.insert(p.name.to_ascii_lowercase()) {
            return Err(format!("x-mcp-header {:?} appears twice", p.name));
        }
    }
    Ok(out)
}

struct State {
    session_id: Mutex<Option<String>>,
    legacy_version: Mutex<Option<String>>,
    in_flight: Mutex<HashMap<RequestId, AbortHandle>>,
    tool_headers: Mutex<HashMap<String, Vec<HeaderParam>>>,
    error: Mutex<Option<String>>,
    /// Requests answered with an error made up here (never reached the server, or its reply
    /// was not MCP), and why: the newest [`MAX_FAILURES`], for callers that ask.
    failures: Mutex<VecDeque<(RequestId, String)>>,
    /// The standalone GET stream of a 2025-11-25 session (server-initiated messages).
    listener: Mutex<Option<AbortHandle>>,
    limits: Limits,
    /// The `initialize` this transport sent, replayed to start a new session when the server
    /// lost the old one (404 on its `Mcp-Session-Id`).
    initialize: Mutex<Option<Bytes>>,
    /// One session recovery at a time.
    recovering: tokio::sync::Mutex<()>,
}

impl State {
    fn new(limits: Limits) -> Self {
        State {
            session_id: Mutex::new(None),
            legacy_version: Mutex::new(None),
            in_flight: Mutex::new(HashMap::new()),
            tool_headers: Mutex::new(HashMap::new()),
            error: Mutex::new(None),
            failures: Mutex::new(VecDeque::new()),
            listener: Mutex::new(None),
            limits,
            initialize: Mutex::new(None),
            recovering: tokio::sync::Mutex::new(()),
        }
    }

    /// Remembers why a request failed here; the oldest reason goes when the list is full (its
    /// caller has long stopped waiting).
    fn record_failure(&self, id: &RequestId, why: &str) {
        if let Ok(mut failures) = self.failures.lock() {
            if failures.len() >= MAX_FAILURES {
                failures.pop_front();
            }
            failures.push_back((id.clone(), why.to_owned()));
        }
    }
}

/// How many locally made-up failures are kept for [`Transport::local_failure`].
const MAX_FAILURES: usize = 256;

/// The default of [`HttpTransport::max_message_size`]: 16 MiB.
pub const DEFAULT_MAX_MESSAGE: usize = 16 * 1024 * 1024;
/// The default of [`HttpTransport::max_retry_delay`]: one minute.
pub const DEFAULT_MAX_RETRY: Duration = Duration::from_secs(60);
/// The shortest reconnection delay honoured, whatever `retry:` says.
pub const MIN_RETRY: Duration = Duration::from_millis(100);

/// What a transport accepts from a server.
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// The largest JSON response body or SSE event.
    max_message: usize,
    /// The longest reconnection delay a `retry:` field may ask for.
    max_retry: Duration,
}

impl Limits {
    /// The delay `retry: {ms}` asks for, within [`MIN_RETRY`] and the maximum.
    fn retry_delay(&self, ms: u64) -> Duration {
        Duration::from_millis(ms).clamp(MIN_RETRY, self.max_retry.max(MIN_RETRY))
    }
}

/// Removes a request's abort handle when its task ends, whichever way it ends.
struct InFlightGuard {
    state: Arc<State>,
    id: Option<RequestId>,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if let Some(id) = &self.id
            && let Ok(mut f) = self.state.in_flight.lock()
        {
            f.remove(id);
        }
    }
}

/// A client connection to a Streamable HTTP endpoint.
pub struct HttpTransport {
    url: Uri,
    client: crate::net::HttpClient,
    /// The roots servers are verified against (feature `tls`).
    #[cfg(feature = "tls")]
    roots: rustls::RootCertStore,
    extra_headers: HeaderMap,
    /// Authorization on 401/403 (feature `oauth`).
    auth: Auth,
    state: Arc<State>,
    tx: mpsc::UnboundedSender<JsonRpcMessage>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<JsonRpcMessage>>,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl HttpTransport {
    /// A transport to `url` (e.g. `https://mcp.example.com/mcp` or
    /// `http://127.0.0.1:8000/mcp`). With the `tls` feature, `https://` servers are verified
    /// against Mozilla's root certificates (see [`add_root_pem`](Self::add_root_pem) and
    /// `native_roots`); without it only `http://` is accepted.
    pub fn new(url: &str) -> Result<Self, String> {
        let url: Uri = url
            .parse()
            .map_err(|e| format!("invalid URL {url:?}: {e}"))?;
        match url.scheme_str() {
            Some("http") => {}
            #[cfg(feature = "tls")]
            Some("https") => {}
            #[cfg(not(feature = "tls"))]
            Some("https") => {
                return Err(
                    "https:// needs the `tls` feature of mcp-transport-http (on by default in `mcp`)"
                        .into(),
                );
            }
            _ => return Err(format!("{url} is not an http:// or https:// URL")),
        }
        #[cfg(feature = "tls")]
        let roots = crate::net::mozilla_roots();
        #[cfg(feature = "tls")]
        let client = crate::net::client(crate::net::tls_config(roots.clone())?);
        #[cfg(not(feature = "tls"))]
        let client = crate::net::client();
        let (tx, rx) = mpsc::unbounded_channel();
        Ok(HttpTransport {
            url,
            client,
            #[cfg(feature = "tls")]
            roots,
            extra_headers: HeaderMap::new(),
            auth: Auth::default(),
            state: Arc::new(State::new(Limits {
                max_message: DEFAULT_MAX_MESSAGE,
                max_retry: DEFAULT_MAX_RETRY,
            })),
            tx,
            rx: tokio::sync::Mutex::new(rx),
        })
    }

    /// Adds a header to every request (e.g. `Authorization: Bearer …`).
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, String> {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| e.to_string())?;
        let value = HeaderValue::from_str(value).map_err(|e| e.to_string())?;
        self.extra_headers.insert(name, value);
        Ok(self)
    }

    /// The largest JSON response body or SSE event accepted from the server (default
    /// [`DEFAULT_MAX_MESSAGE`], 16 MiB). A larger answer fails its request with "the server's
    /// answer is larger than the N-byte limit"; a larger SSE event abandons the stream.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        if let Some(state) = Arc::get_mut(&mut self.state) {
            state.limits.max_message = bytes;
        }
        self
    }

    /// The longest reconnection delay an SSE `retry:` field may ask for (default
    /// [`DEFAULT_MAX_RETRY`], one minute); longer ones are cut to it, shorter than
    /// [`MIN_RETRY`] raised to that.
    pub fn max_retry_delay(mut self, delay: Duration) -> Self {
        if let Some(state) = Arc::get_mut(&mut self.state) {
            state.limits.max_retry = delay;
        }
        self
    }

    /// Also trusts the CA certificates in `pem` (one or more `-----BEGIN CERTIFICATE-----`
    /// blocks) for `https://` servers: a private CA, or a test one.
    #[cfg(feature = "tls")]
    pub fn add_root_pem(mut self, pem: &[u8]) -> Result<Self, String> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("reading a root certificate: {e}"))?;
            self.roots
                .add(cert)
                .map_err(|e| format!("a root certificate was refused: {e}"))?;
            added += 1;
        }
        if added == 0 {
            return Err("no certificate found in the PEM text".into());
        }
        self.client = crate::net::client(crate::net::tls_config(self.roots.clone())?);
        Ok(self)
    }

    /// Verifies `https://` servers against the platform's certificate store (and
    /// `SSL_CERT_FILE` when set) instead of Mozilla's roots.
    #[cfg(feature = "native-roots")]
    pub fn native_roots(mut self) -> Result<Self, String> {
        let found = rustls_native_certs::load_native_certs();
        let mut roots = rustls::RootCertStore::empty();
        let (added, _) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            return Err(format!(
                "no usable certificate in the platform store ({} errors)",
                found.errors.len()
            ));
        }
        self.roots = roots;
        self.client = crate::net::client(crate::net::tls_config(self.roots.clone())?);
        Ok(self)
    }

    /// A bearer token on every request.
    pub fn bearer(self, token: &str) -> Result<Self, String> {
        self.header("authorization", &format!("Bearer {token}"))
    }

    /// Authorizes with OAuth when the server answers 401, and asks for more scope on a 403
    /// `insufficient_scope` (once per request each); the token then goes on every request.
    #[cfg(feature = "oauth")]
    pub fn oauth(mut self, oauth: Arc<mcp_client::oauth::OAuth>) -> Self {
        self.auth = Auth::new(oauth);
        self
    }

    /// Plain HTTP requests for OAuth discovery, registration and tokens over this transport's
    /// connection pool (`https://` with the `tls` feature; redirects are not followed; bodies
    /// capped at [`crate::DEFAULT_MAX_FETCH_BODY`], each fetch bounded by
    /// [`crate::DEFAULT_FETCH_TIMEOUT`]).
    #[cfg(feature = "oauth")]
    pub fn fetcher(&self) -> Arc<dyn mcp_client::oauth::HttpFetch> {
        Arc::new(crate::oauth::HyperFetch::new(self.client.clone()))
    }

    #[cfg(all(test, feature = "oauth"))]
    pub(crate) fn http_client(&self) -> crate::net::HttpClient {
        self.client.clone()
    }

    fn request_headers(&self, message: &JsonRpcMessage) -> Vec<(HeaderName, String)> {
        let mut out = Vec::new();
        let session = self.state.session_id.lock().ok().and_then(|s| s.clone());
        if let Some(session) = &session {
            out.push((
                HeaderName::from_static(headers::SESSION_ID),
                session.clone(),
            ));
        }
        let JsonRpcMessage::Request(request) = message else {
            if let Some(v) = self
                .state
                .legacy_version
                .lock()
                .ok()
                .and_then(|v| v.clone())
            {
                out.push((HeaderName::from_static(headers::PROTOCOL_VERSION), v));
            }
            return out;
        };
        let params: Value = request
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or(Value::Null);
        let modern = params
            .get("_meta")
            .and_then(|m| m.get(mcp_types::meta::PROTOCOL_VERSION))
            .and_then(Value::as_str);
        match modern {
            Some(version) => {
                out.push((
                    HeaderName::from_static(headers::PROTOCOL_VERSION),
                    version.to_owned(),
                ));
                out.push((
                    HeaderName::from_static(headers::METHOD),
                    request.method.clone(),
                ));
                let name = match request.method.as_str() {
                    methods::TOOLS_CALL | methods::PROMPTS_GET => params.get("name"),
                    methods::RESOURCES_READ => params.get("uri"),
                    methods::TASKS_GET | methods::TASKS_UPDATE | methods::TASKS_CANCEL => {
                        params.get("taskId")
                    }
                    _ => None,
                };
                if let Some(name) = name.and_then(Value::as_str) {
                    out.push((
                        HeaderName::from_static(headers::NAME),
                        headers::encode_value(name),
                    ));
                }
                if request.method == methods::TOOLS_CALL
                    && let Some(tool) = params.get("name").and_then(Value::as_str)
                {
                    let annotations = self
                        .state
                        .tool_headers
                        .lock()
                        .ok()
                        .and_then(|t| t.get(tool).cloned())
                        .unwrap_or_default();
                    for param in annotations {
                        let mut value = params.get("arguments");
                        for key in &param.path {
                            value = value.and_then(|v| v.get(key));
                        }
                        let rendered = match value {
                            Some(Value::String(s)) => Some(headers::encode_value(s)),
                            Some(Value::Bool(b)) => Some(b.to_string()),
                            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => {
                                Some(n.to_string())
                            }
                            _ => None,
                        };
                        if let (Some(rendered), Ok(name)) = (
                            rendered,
                            HeaderName::from_bytes(
                                format!("{}{}", headers::PARAM_PREFIX, param.name).as_bytes(),
                            ),
                        ) {
                            out.push((name, rendered));
                        }
                    }
                }
            }
            None if request.method != methods::INITIALIZE => {
                if let Some(v) = self
                    .state
                    .legacy_version
                    .lock()
                    .ok()
                    .and_then(|v| v.clone())
                {
                    out.push((HeaderName::from_static(headers::PROTOCOL_VERSION), v));
                }
            }
            None => {}
        }
        out
    }
}

impl HttpTransport {
    /// Opens the standalone GET stream of a 2025-11-25 session, on which the server sends
    /// requests and notifications unrelated to a POST (the spec's "listening for messages from
    /// the server"). A server without one answers 405 and nothing more is tried; a stream the
    /// server closes is reopened (with `Last-Event-ID`) while the session lives.
    ///
    /// The returned receiver fires once the first GET has its answer's status.
    fn open_listener(&self) -> tokio::sync::oneshot::Receiver<()> {
        let (opened_tx, opened) = tokio::sync::oneshot::channel();
        let mut opened_tx = Some(opened_tx);
        let client = self.client.clone();
        let state = self.state.clone();
        let tx = self.tx.clone();
        let url = self.url.clone();
        let extra_headers = self.extra_headers.clone();
        let auth = self.auth.clone();
        let task = tokio::spawn(async move {
            let mut last_event_id: Option<String> = None;
            let mut retry = DEFAULT_RETRY;
            let mut reopened = 0;
            loop {
                let Some(session) = state.session_id.lock().ok().and_then(|s| s.clone()) else {
                    return;
                };
                let Some(request) = stream_request(
                    &url,
                    &session,
                    &state,
                    last_event_id.as_deref(),
                    &extra_headers,
                    &auth,
                ) else {
                    return;
                };
                let response = client.request(request).await;
                if let Some(opened) = opened_tx.take() {
                    let _ = opened.send(());
                }
                let response = match response {
                    Ok(r) if r.status() == StatusCode::OK => r,
                    Ok(r) => {
                        tracing::debug!(status = %r.status(), "the server offers no standalone SSE stream");
                        return;
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "opening the standalone SSE stream failed");
                        return;
                    }
                };
                let end = read_sse(response.into_body(), &state, &tx, "", None).await;
                if end.abandoned.is_some() {
                    return;
                }
                last_event_id = end.last_event_id.or(last_event_id);
                retry = end.retry.unwrap_or(retry);
                reopened += 1;
                if reopened > MAX_RESUMPTIONS {
                    return;
                }
                tokio::time::sleep(retry).await;
            }
        });
        if let Ok(mut listener) = self.state.listener.lock()
            && let Some(old) = listener.replace(task.abort_handle())
        {
            old.abort();
        }
        opened
    }
}

/// Starts a new 2025-11-25 session in place of `lost`: the `initialize` this transport sent
/// first, again, then `notifications/initialized`. Requests that saw the same 404 wait for
/// one recovery; a session already replaced is not replaced twice.
async fn recover_session(
    client: &crate::net::HttpClient,
    url: &Uri,
    state: &State,
    extra_headers: &HeaderMap,
    auth: &Auth,
    lost: &str,
) -> Result<(), String> {
    let _one = state.recovering.lock().await;
    let current = state.session_id.lock().ok().and_then(|s| s.clone());
    if current.as_deref() != Some(lost) {
        return if current.is_some() {
            Ok(())
        } else {
            Err("the previous recovery failed".into())
        };
    }
    if let Ok(mut s) = state.session_id.lock() {
        *s = None;
    }
    let initialize = state
        .initialize
        .lock()
        .ok()
        .and_then(|i| i.clone())
        .ok_or("no initialize was sent on this transport")?;
    let post = |body: Bytes, session: Option<&str>| {
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(url.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream");
        if let Some(session) = session {
            builder = builder.header(headers::SESSION_ID, session);
            if let Some(version) = state.legacy_version.lock().ok().and_then(|v| v.clone()) {
                builder = builder.header(headers::PROTOCOL_VERSION, version);
            }
        }
        for (name, value) in extra_headers {
            builder = builder.header(name, value);
        }
        for (name, value) in auth.headers(auth.token().as_deref(), "POST", &url.to_string()) {
            builder = builder.header(name, value);
        }
        builder
            .body(Full::new(body))
            .map_err(|e| format!("could not build the request: {e}"))
    };
    let answer = tokio::time::timeout(RECOVERY_TIMEOUT, client.request(post(initialize, None)?))
        .await
        .map_err(|_| format!("initialize got no answer within {RECOVERY_TIMEOUT:?}"))?
        .map_err(|e| format!("initialize failed: {}", crate::net::describe(&e)))?;
    if !answer.status().is_success() {
        return Err(format!("initialize was answered HTTP {}", answer.status()));
    }
    let fresh = answer
        .headers()
        .get(headers::SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or("the new initialize carried no Mcp-Session-Id")?;
    drop(answer);
    let initialized =
        Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let done = tokio::time::timeout(
        RECOVERY_TIMEOUT,
        client.request(post(initialized, Some(&fresh))?),
    )
    .await
    .map_err(|_| format!("notifications/initialized got no answer within {RECOVERY_TIMEOUT:?}"))?
    .map_err(|e| {
        format!(
            "notifications/initialized failed: {}",
            crate::net::describe(&e)
        )
    })?;
    if !done.status().is_success() {
        return Err(format!(
            "notifications/initialized was answered HTTP {}",
            done.status()
        ));
    }
    if let Ok(mut s) = state.session_id.lock() {
        *s = Some(fresh);
    }
    tracing::info!("the server lost the session; a new one was started");
    Ok(())
}

/// How long each request of a session recovery may take.
const RECOVERY_TIMEOUT: Duration = Duration::from_secs(30);

/// A GET for a 2025-11-25 session's SSE stream (the standalone one, or a POST's stream being
/// resumed after `last_event_id`).
fn stream_request(
    url: &Uri,
    session: &str,
    state: &State,
    last_event_id: Option<&str>,
    extra_headers: &HeaderMap,
    auth: &Auth,
) -> Option<Request<Full<Bytes>>> {
    let mut builder = Request::builder()
        .method(Method::GET)
        .uri(url.clone())
        .header(header::ACCEPT, "text/event-stream")
        .header(headers::SESSION_ID, session);
    if let Some(version) = state.legacy_version.lock().ok().and_then(|v| v.clone()) {
        builder = builder.header(headers::PROTOCOL_VERSION, version);
    }
    if let Some(id) = last_event_id {
        builder = builder.header(headers::LAST_EVENT_ID, id);
    }
    for (name, value) in extra_headers {
        builder = builder.header(name, value);
    }
    for (name, value) in auth.headers(auth.token().as_deref(), "GET", &url.to_string()) {
        builder = builder.header(name, value);
    }
    builder.body(Full::new(Bytes::new())).ok()
}

/// Drops tools with invalid `x-mcp-header` annotations from a `tools/list` result and records
/// the valid ones.
fn filter_tools(state: &State, result: &mut Value) {
    let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
        return;
    };
    tools.retain(|tool| {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
        match header_params(tool.get("inputSchema").unwrap_or(&Value::Null)) {
            Ok(params) => {
                if let Ok(mut t) = state.tool_headers.lock() {
                    t.insert(name, params);
                }
                true
            }
            Err(why) => {
                tracing::warn!(tool = %name, %why, "dropping a tool with an invalid x-mcp-header annotation");
                false
            }
        }
    });
}

fn deliver(
    state: &State,
    tx: &mpsc::UnboundedSender<JsonRpcMessage>,
    method: &str,
    message: JsonRpcMessage,
) {
    let message = match (method, message) {
        (methods::TOOLS_LIST, JsonRpcMessage::Response(response)) => {
            let mut result: Value =
                serde_json::from_str(response.result.get()).unwrap_or(Value::Null);
            filter_tools(state, &mut result);
            match JsonRpcResponse::new(response.id.clone(), &result) {
                Ok(filtered) => JsonRpcMessage::Response(filtered),
                Err(_) => JsonRpcMessage::Response(response),
            }
        }
        (methods::INITIALIZE, JsonRpcMessage::Response(response)) => {
            if let Some(version) = serde_json::from_str::<Value>(response.result.get())
                .ok()
                .and_then(|r| {
                    r.get("protocolVersion")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                && let Ok(mut v) = state.legacy_version.lock()
            {
                *v = Some(version);
            }
            JsonRpcMessage::Response(response)
        }
        (_, other) => other,
    };
    let _ = tx.send(message);
}

/// One SSE event: the fields this client uses.
#[derive(Debug, Default, PartialEq, Eq)]
struct SseEvent {
    /// `id:`, the event id a resumed stream names in `Last-Event-ID`.
    id: Option<String>,
    /// `retry:`, how long to wait (ms) before reconnecting.
    retry: Option<u64>,
    /// The `data:` lines joined, when there were any.
    data: Option<String>,
}

/// An event grew past the parser's limit: the stream is abandoned.
#[derive(Debug, PartialEq, Eq)]
struct SseTooLarge {
    limit: usize,
}

/// Splits an SSE byte stream into events, in one pass over the bytes: only the unfinished line
/// and the event being assembled are kept, and an event's data is decoded as UTF-8 once it is
/// complete, so a character split across two reads arrives whole. An event (its lines together)
/// larger than `max_event` bytes ends the stream.
struct SseParser {
    /// The line being read (its terminator not seen yet).
    line: Vec<u8>,
    /// The `data:` lines of the event being assembled, joined with `\n`.
    data: Vec<u8>,
    has_data: bool,
    event: SseEvent,
    /// Bytes of the event being assembled, its unfinished line included.
    event_size: usize,
    /// The previous chunk ended on `\r`: a `\n` starting this one belongs to it.
    after_cr: bool,
    /// The stream's first bytes are still to be checked for a byte-order mark.
    at_start: bool,
    max_event: usize,
}

impl SseParser {
    fn new(max_event: usize) -> Self {
        SseParser {
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            event: SseEvent::default(),
            event_size: 0,
            after_cr: false,
            at_start: true,
            max_event,
        }
    }

    fn push(&mut self, mut chunk: &[u8]) -> Result<Vec<SseEvent>, SseTooLarge> {
        let mut events = Vec::new();
        if self.at_start {
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            let seen = self.line.len() + chunk.len();
            let mut probe = self.line.clone();
            probe.extend_from_slice(&chunk[..chunk.len().min(BOM.len())]);
            if seen < BOM.len() && BOM.starts_with(&probe) {
                // Too few bytes to tell yet: keep them as the line's start.
                self.line = probe;
                return Ok(events);
            }
            self.at_start = false;
            if probe.starts_with(BOM) {
                let from_chunk = BOM.len() - self.line.len();
                self.line.clear();
                chunk = &chunk[from_chunk..];
            }
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while !chunk.is_empty() {
            match chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(at) => {
                    self.grow(at)?;
                    self.line.extend_from_slice(&chunk[..at]);
                    let cr = chunk[at] == b'\r';
                    chunk = &chunk[at + 1..];
                    if cr {
                        match chunk.first() {
                            Some(b'\n') => chunk = &chunk[1..],
                            Some(_) => {}
                            None => self.after_cr = true,
                        }
                    }
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_done(&line) {
                        events.push(event);
                    }
                }
                None => {
                    self.grow(chunk.len())?;
                    self.line.extend_from_slice(chunk);
                    chunk = &[];
                }
            }
        }
        Ok(events)
    }

    fn grow(&mut self, by: usize) -> Result<(), SseTooLarge> {
        self.event_size = self.event_size.saturating_add(by);
        if self.event_size > self.max_event {
            return Err(SseTooLarge {
                limit: self.max_event,
            });
        }
        Ok(())
    }

    /// A complete line: an empty one ends the event.
    fn line_done(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            let mut event = std::mem::take(&mut self.event);
            if std::mem::take(&mut self.has_data) {
                event.data = Some(String::from_utf8_lossy(&self.data).into_owned());
            }
            self.data.clear();
            self.event_size = 0;
            return (event != SseEvent::default()).then_some(event);
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"id" if !value.contains(&0) => {
                self.event.id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" => {
                if let Some(ms) = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()) {
                    self.event.retry = Some(ms);
                }
            }
            _ => {}
        }
        None
    }
}

/// The client's SSE parser for the fuzz targets (feature `fuzzing`; not a stable API).
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    /// Feeds `chunks` to a parser capped at `max_event` bytes; returns each event as
    /// `(id, retry, data)`, and whether the stream was abandoned at the cap.
    #[allow(clippy::type_complexity)]
    pub fn sse_events<'a>(
        chunks: impl IntoIterator<Item = &'a [u8]>,
        max_event: usize,
    ) -> (Vec<(Option<String>, Option<u64>, Option<String>)>, bool) {
        let mut parser = super::SseParser::new(max_event);
        let mut out = Vec::new();
        for chunk in chunks {
            match parser.push(chunk) {
                Ok(events) => out.extend(events.into_iter().map(|e| (e.id, e.retry, e.data))),
                Err(_) => return (out, true),
            }
        }
        (out, false)
    }
}

/// How a response's SSE stream ended.
#[derive(Debug, Default)]
struct StreamEnd {
    /// The answer to the request arrived.
    answered: bool,
    /// The last event id seen: the stream can be resumed from it.
    last_event_id: Option<String>,
    /// The reconnection delay the server asked for (clamped).
    retry: Option<Duration>,
    /// Why the stream was given up before its end (an event over the size limit).
    abandoned: Option<String>,
}

/// How long to wait before resuming a stream when the server named no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// How long `notifications/initialized` waits for the standalone GET stream to open.
const LISTENER_OPEN_TIMEOUT: Duration = Duration::from_secs(5);
/// How many times one request's stream is resumed before giving up.
const MAX_RESUMPTIONS: u32 = 5;

/// Reads an SSE response body, delivering its messages, until the answer to `id` arrives or
/// the stream ends.
async fn read_sse(
    mut body: hyper::body::Incoming,
    state: &State,
    tx: &mpsc::UnboundedSender<JsonRpcMessage>,
    method: &str,
    id: Option<&RequestId>,
) -> StreamEnd {
    let mut parser = SseParser::new(state.limits.max_message);
    let mut end = StreamEnd::default();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { break };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let events = match parser.push(&data) {
            Ok(events) => events,
            Err(SseTooLarge { limit }) => {
                let why = format!(
                    "the server sent an SSE event larger than the {limit}-byte limit \
                     (HttpTransport::max_message_size); the stream was abandoned"
                );
                tracing::warn!(%why);
                end.abandoned = Some(why);
                break;
            }
        };
        for event in events {
            if let Some(event_id) = event.id {
                end.last_event_id = Some(event_id);
            }
            if let Some(ms) = event.retry {
                end.retry = Some(state.limits.retry_delay(ms));
            }
            // A priming event (an id with empty data) carries no message.
            let Some(json) = event.data.filter(|d| !d.trim().is_empty()) else {
                continue;
            };
            match JsonRpcMessage::from_str(&json) {
                Ok(message) => {
                    let answers = id.is_some()
                        && matches!(
                            &message,
                            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)
                        )
                        && message.id() == id;
                    deliver(state, tx, method, message);
                    end.answered |= answers;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the server sent an SSE event that is not a JSON-RPC message")
                }
            }
        }
        if end.answered {
            break;
        }
    }
    end
}

impl Transport for HttpTransport {
    fn send(&self, message: JsonRpcMessage) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let session = self.state.session_id.lock().ok().and_then(|s| s.clone());
            // A cancellation on 2026-07-28 HTTP is dropping the request's stream.
            if let JsonRpcMessage::Notification(n) = &message
                && session.is_none()
            {
                if n.method == methods::NOTIFICATION_CANCELLED
                    && let Some(id) = n
                        .params
                        .as_deref()
                        .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                        .and_then(|p| p.get("requestId").and_then(RequestId::from_value))
                    && let Some(handle) = self
                        .state
                        .in_flight
                        .lock()
                        .ok()
                        .and_then(|mut f| f.remove(&id))
                {
                    handle.abort();
                }
                return Ok(());
            }
            let method = match &message {
                JsonRpcMessage::Request(r) => Some((r.id.clone(), r.method.clone())),
                _ => None,
            };
            let mut base_headers: Vec<(HeaderName, HeaderValue)> = vec![
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                ),
                (
                    header::ACCEPT,
                    HeaderValue::from_static("application/json, text/event-stream"),
                ),
            ];
            for (name, value) in self.request_headers(&message) {
                let value =
                    HeaderValue::from_str(&value).map_err(|e| format!("header {name}: {e}"))?;
                base_headers.push((name, value));
            }
            for (name, value) in &self.extra_headers {
                base_headers.push((name.clone(), value.clone()));
            }
            let payload = Bytes::from(message.to_string());
            if matches!(&message, JsonRpcMessage::Request(r) if r.method == methods::INITIALIZE)
                && let Ok(mut initialize) = self.state.initialize.lock()
            {
                *initialize = Some(payload.clone());
            }
            let sent_session = session.clone();
            let auth = self.auth.clone();
            let client = self.client.clone();
            let state = self.state.clone();
            let tx = self.tx.clone();
            let url = self.url.clone();
            let extra_headers = self.extra_headers.clone();
            // The map stays locked until the new task's handle is in it, so a task that ends at
            // once still finds (and removes) its own entry.
            let tracked_id = message_id(&message).map(|(id, _)| id);
            let untracked = {
                let mut in_flight = self.state.in_flight.lock().ok();
                let task = tokio::spawn(async move {
                    let id = method.as_ref().map(|(id, _)| id.clone());
                    let _guard = InFlightGuard {
                        state: state.clone(),
                        id: id.clone(),
                    };
                    let method_name = method.as_ref().map(|(_, m)| m.clone()).unwrap_or_default();
                    let fail = |why: String| {
                        if let Some(id) = &id {
                            state.record_failure(id, &why);
                            let error = ErrorObject::new(ErrorCode(-32000), why);
                            let _ = tx.send(JsonRpcMessage::Error(JsonRpcError::new(
                                Some(id.clone()),
                                error,
                            )));
                        } else {
                            tracing::warn!(%why, "a message the client sent was refused");
                        }
                    };
                    let mut attempts = Attempts::default();
                    let response = loop {
                        let mut request = Request::builder().method(Method::POST).uri(url.clone());
                        for (name, value) in &base_headers {
                            request = request.header(name, value);
                        }
                        let mut request = match request.body(Full::new(payload.clone())) {
                            Ok(request) => request,
                            Err(e) => return fail(format!("could not build the request: {e}")),
                        };
                        let token = auth.token();
                        for (name, value) in
                            auth.headers(token.as_deref(), "POST", &url.to_string())
                        {
                            request.headers_mut().insert(name, value);
                        }
                        let response = match client.request(request).await {
                            Ok(response) => response,
                            Err(e) => {
                                let why =
                                    format!("HTTP request failed: {}", crate::net::describe(&e));
                                if let Ok(mut err) = state.error.lock() {
                                    *err = Some(why.clone());
                                }
                                return fail(why);
                            }
                        };
                        let challenge = response
                            .headers()
                            .get(header::WWW_AUTHENTICATE)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned);
                        let dpop_nonce = response
                            .headers()
                            .get("dpop-nonce")
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned);
                        match auth
                            .refused(
                                &url.to_string(),
                                response.status(),
                                challenge.as_deref(),
                                dpop_nonce.as_deref(),
                                token.as_deref(),
                                &mut attempts,
                            )
                            .await
                        {
                            Retry::Again => continue,
                            Retry::Fail(why) => return fail(why),
                            Retry::Deliver => break response,
                        }
                    };
                    let status = response.status();
                    // The server no longer knows the session (it expired, or its instance
                    // restarted): start a new one, as the spec asks, and report this request
                    // lost rather than guess whether to send it again.
                    if status == StatusCode::NOT_FOUND
                        && method_name != methods::INITIALIZE
                        && let Some(lost) = sent_session.as_deref()
                    {
                        let why = match recover_session(
                            &client,
                            &url,
                            &state,
                            &extra_headers,
                            &auth,
                            lost,
                        )
                        .await
                        {
                            Ok(()) => {
                                "the server lost this client's session (404 Session not found): \
                                       this request was not processed; a new session was started, \
                                       send it again"
                                    .to_owned()
                            }
                            Err(e) => format!(
                                "the server lost this client's session (404 Session not found) \
                                 and a new session could not be started: {e}"
                            ),
                        };
                        return fail(why);
                    }
                    if method_name == methods::INITIALIZE
                        && let Some(session) = response
                            .headers()
                            .get(headers::SESSION_ID)
                            .and_then(|v| v.to_str().ok())
                        && let Ok(mut s) = state.session_id.lock()
                    {
                        *s = Some(session.to_owned());
                    }
                    let content_type = response
                        .headers()
                        .get(header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    let body = response.into_body();
                    if content_type.starts_with("text/event-stream") {
                        let mut end = read_sse(body, &state, &tx, &method_name, id.as_ref()).await;
                        // A 2025-11-25 server may close the stream before answering (SSE polling):
                        // resume it with GET and Last-Event-ID after the delay it asked for.
                        let mut resumptions = 0;
                        while let (false, None, Some(last_event_id)) =
                            (end.answered, &end.abandoned, end.last_event_id.clone())
                        {
                            let session = state.session_id.lock().ok().and_then(|s| s.clone());
                            let Some(session) = session.filter(|_| id.is_some()) else {
                                break;
                            };
                            if resumptions == MAX_RESUMPTIONS {
                                break;
                            }
                            resumptions += 1;
                            tokio::time::sleep(end.retry.unwrap_or(DEFAULT_RETRY)).await;
                            let Some(request) = stream_request(
                                &url,
                                &session,
                                &state,
                                Some(&last_event_id),
                                &extra_headers,
                                &auth,
                            ) else {
                                break;
                            };
                            let resumed = match client.request(request).await {
                                Ok(r) if r.status() == StatusCode::OK => r,
                                Ok(r) => {
                                    tracing::warn!(status = %r.status(), "the server refused to resume an SSE stream");
                                    break;
                                }
                                Err(e) => {
                                    tracing::warn!(error = %e, "resuming an SSE stream failed");
                                    break;
                                }
                            };
                            let next = read_sse(
                                resumed.into_body(),
                                &state,
                                &tx,
                                &method_name,
                                id.as_ref(),
                            )
                            .await;
                            end = StreamEnd {
                                answered: next.answered,
                                last_event_id: next.last_event_id.or(Some(last_event_id)),
                                retry: next.retry.or(end.retry),
                                abandoned: next.abandoned,
                            };
                        }
                        if let (false, Some(why)) = (end.answered, end.abandoned) {
                            fail(why);
                        }
                    } else {
                        let limit = state.limits.max_message;
                        let bytes = match http_body_util::Limited::new(body, limit).collect().await
                        {
                            Ok(collected) => collected.to_bytes(),
                            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                                return fail(format!(
                                    "the server's answer is larger than the {limit}-byte limit \
                                 (HttpTransport::max_message_size)"
                                ));
                            }
                            Err(e) => return fail(format!("reading the response failed: {e}")),
                        };
                        if status == StatusCode::ACCEPTED || bytes.is_empty() {
                            if status.is_success() {
                                return;
                            }
                            return fail(format!("HTTP {status}"));
                        }
                        match JsonRpcMessage::from_slice(&bytes) {
                            Ok(message) => deliver(&state, &tx, &method_name, message),
                            Err(_) => fail(format!(
                                "HTTP {status}: {}",
                                String::from_utf8_lossy(&bytes)
                                    .chars()
                                    .take(200)
                                    .collect::<String>()
                            )),
                        }
                    }
                });
                match tracked_id {
                    Some(id) => {
                        if let Some(f) = in_flight.as_mut() {
                            f.insert(id, task.abort_handle());
                        }
                        None
                    }
                    None => Some(task),
                }
            };
            // Notifications and answers are posted in order: `notifications/initialized`
            // reaches the server before the session's next request.
            if let Some(task) = untracked {
                let _ = task.await;
            }
            if let JsonRpcMessage::Notification(n) = &message
                && n.method == methods::NOTIFICATION_INITIALIZED
                && session.is_some()
            {
                // Wait until the stream is open (or refused), so a server request sent during
                // the session's first call finds it.
                let opened = self.open_listener();
                let _ = tokio::time::timeout(LISTENER_OPEN_TIMEOUT, opened).await;
            }
            Ok(())
        })
    }

    fn receive(&self) -> BoxFuture<'_, Option<JsonRpcMessage>> {
        Box::pin(async move { self.rx.lock().await.recv().await })
    }

    fn error(&self) -> Option<String> {
        self.state.error.lock().ok().and_then(|e| e.clone())
    }

    fn local_failure(&self, id: &RequestId) -> Option<String> {
        let mut failures = self.state.failures.lock().ok()?;
        let at = failures.iter().position(|(failed, _)| failed == id)?;
        failures.remove(at).map(|(_, why)| why)
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Ok(mut f) = self.state.in_flight.lock() {
                f.drain().for_each(|(_, h)| h.abort());
            }
            if let Some(listener) = self.state.listener.lock().ok().and_then(|mut l| l.take()) {
                listener.abort();
            }
            let session = self.state.session_id.lock().ok().and_then(|mut s| s.take());
            if let Some(session) = session
                && let Ok(request) = Request::builder()
                    .method(Method::DELETE)
                    .uri(self.url.clone())
                    .header(headers::SESSION_ID, session)
                    .body(Full::new(Bytes::new()))
            {
                let _ = self.client.request(request).await;
            }
        })
    }
}

fn message_id(message: &JsonRpcMessage) -> Option<(RequestId, ())> {
    match message {
        JsonRpcMessage::Request(r) => Some((r.id.clone(), ())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn valid_and_invalid_header_annotations() {
        let ok = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {"p": {"type": "integer", "x-mcp-header": "Priority"}}}}});
        let params = header_params(&ok).unwrap();
        assert_eq!(
            params[0],
            HeaderParam {
                path: vec!["nested".into(), "p".into()],
                name: "Priority".into()
            }
        );
        assert_eq!(
            params[1],
            HeaderParam {
                path: vec!["region".into()],
                name: "Region".into()
            }
        );
        for bad in [
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Ä"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
        ] {
            assert!(header_params(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sse_events_are_split_on_blank_lines() {
        let mut p = SseParser::new(DEFAULT_MAX_MESSAGE);
        assert!(
            p.push(b"event: message\r\ndata: {\"a\":")
                .unwrap()
                .is_empty()
        );
        let events = p
            .push(b"1}\r\n\r\n: ping\n\nevent: message\ndata: 2\n\n")
            .unwrap();
        let data: Vec<_> = events.iter().map(|e| e.data.as_deref()).collect();
        assert_eq!(data, [Some("{\"a\":1}"), Some("2")]);
    }

    #[test]
    fn sse_events_carry_their_id_and_retry() {
        let mut p = SseParser::new(DEFAULT_MAX_MESSAGE);
        let events = p
            .push(b"id: event-1\nretry: 500\ndata: \n\nid: event-2\ndata: {}\n\n")
            .unwrap();
        assert_eq!(
            events,
            [
                SseEvent {
                    id: Some("event-1".into()),
                    retry: Some(500),
                    data: Some(String::new())
                },
                SseEvent {
                    id: Some("event-2".into()),
                    retry: None,
                    data: Some("{}".into())
                }
            ]
        );
    }

    fn data(events: Vec<SseEvent>) -> Vec<String> {
        events.into_iter().filter_map(|e| e.data).collect()
    }

    #[test]
    fn a_character_split_across_two_reads_arrives_whole() {
        // "café ☕": é is C3 A9, ☕ is E2 98 95; every split point inside them.
        let event = "data: {\"t\":\"café ☕\"}\n\n".as_bytes();
        for at in 1..event.len() {
            let mut p = SseParser::new(DEFAULT_MAX_MESSAGE);
            let mut got = data(p.push(&event[..at]).unwrap());
            got.extend(data(p.push(&event[at..]).unwrap()));
            assert_eq!(got, ["{\"t\":\"café ☕\"}"], "split at {at}");
        }
        // One byte per read.
        let mut p = SseParser::new(DEFAULT_MAX_MESSAGE);
        let mut got = Vec::new();
        for byte in event {
            got.extend(data(p.push(std::slice::from_ref(byte)).unwrap()));
        }
        assert_eq!(got, ["{\"t\":\"café ☕\"}"]);
    }

    #[test]
    fn every_line_ending_and_a_split_crlf_end_events() {
        let mut p = SseParser::new(DEFAULT_MAX_MESSAGE);
        let mut got = data(p.push(b"\xEF\xBB\xBFdata: a\r").unwrap());
        got.extend(data(p.push(b"\n\r\ndata: b\r\rdata: c\n").unwrap()));
        got.extend(data(p.push(b"data: d\n\n").unwrap()));
        assert_eq!(got, ["a", "b", "c\nd"]);
    }

    #[test]
    fn an_event_over_the_limit_ends_the_stream() {
        let mut p = SseParser::new(64);
        assert_eq!(
            data(p.push(b"data: 0123456789\n\n").unwrap()),
            ["0123456789"]
        );
        // Without a blank line the event grows until the limit, not forever.
        let mut refused = None;
        for _ in 0..100 {
            if let Err(e) = p.push(b"data: xxxxxxxxxxxxxxxx\n") {
                refused = Some(e);
                break;
            }
        }
        assert_eq!(refused, Some(SseTooLarge { limit: 64 }));
        // A single endless line too.
        let mut p = SseParser::new(64);
        assert!(p.push(&[b'x'; 60]).is_ok());
        assert_eq!(p.push(&[b'x'; 60]), Err(SseTooLarge { limit: 64 }));
    }

    #[test]
    fn a_long_stream_is_parsed_in_linear_time() {
        // 4 MiB of one event in 1-KiB reads: a parser that rescans its buffer per read does
        // ~8 GiB of work here; this one touches each byte once. Counted, not timed: the
        // parser keeps only the unfinished line, never the whole stream.
        let mut p = SseParser::new(DEFAULT_MAX_MESSAGE);
        let line = [b"data: ".as_slice(), &[b'y'; 1017], b"\n"].concat();
        for _ in 0..4096 {
            assert!(p.push(&line).unwrap().is_empty());
            assert!(p.line.is_empty());
        }
        let events = p.push(b"\n").unwrap();
        assert_eq!(
            events[0].data.as_ref().map(String::len),
            Some(4096 * 1018 - 1)
        );
    }

    #[test]
    fn retry_is_clamped() {
        let limits = Limits {
            max_message: DEFAULT_MAX_MESSAGE,
            max_retry: DEFAULT_MAX_RETRY,
        };
        assert_eq!(limits.retry_delay(u64::MAX), DEFAULT_MAX_RETRY);
        assert_eq!(limits.retry_delay(0), MIN_RETRY);
        assert_eq!(limits.retry_delay(1500), Duration::from_millis(1500));
    }

    #[tokio::test]
    async fn failed_requests_leave_no_in_flight_entry_and_failures_stay_bounded() {
        let port = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // Nothing listens there any more: every request fails before reaching a server.
        let transport = HttpTransport::new(&format!("http://127.0.0.1:{port}/mcp")).unwrap();
        let count = MAX_FAILURES as i64 + 50;
        for i in 0..count {
            let request =
                mcp_types::JsonRpcRequest::new(i, "ping", &serde_json::json!({})).unwrap();
            transport
                .send(JsonRpcMessage::Request(request))
                .await
                .unwrap();
        }
        for _ in 0..count {
            let message = transport.receive().await.unwrap();
            assert!(matches!(message, JsonRpcMessage::Error(_)), "{message}");
        }
        // Each task has sent its error; wait for all of them to end.
        while !transport.state.in_flight.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        assert_eq!(transport.state.failures.lock().unwrap().len(), MAX_FAILURES);
        assert!(
            transport
                .local_failure(&RequestId::Number(count - 1))
                .unwrap()
                .starts_with("HTTP request failed")
        );
        assert_eq!(transport.local_failure(&RequestId::Number(0)), None);
    }

    #[test]
    fn filtered_tools_lose_only_the_invalid_ones() {
        let state = State::new(Limits {
            max_message: DEFAULT_MAX_MESSAGE,
            max_retry: DEFAULT_MAX_RETRY,
        });
        let mut result = json!({"tools": [
            {"name": "valid_tool", "inputSchema": {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "Region"}}}},
            {"name": "invalid_empty_header", "inputSchema": {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": ""}}}}]});
        filter_tools(&state, &mut result);
        assert_eq!(result["tools"].as_array().unwrap().len(), 1);
    }
}
