//! The Streamable HTTP client transport: every request is a POST carrying the headers its era
//! needs; answers come back as JSON or SSE and are fed to the client's reader. Tools whose
//! `x-mcp-header` annotations are invalid are dropped from `tools/list` (with a warning), and
//! valid ones become `Mcp-Param-*` headers on their calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
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
    /// was not MCP), and why.
    failures: Mutex<HashMap<RequestId, String>>,
    /// The standalone GET stream of a 2025-11-25 session (server-initiated messages).
    listener: Mutex<Option<AbortHandle>>,
}

/// A client connection to a Streamable HTTP endpoint.
pub struct HttpTransport {
    url: Uri,
    client: HyperClient<HttpConnector, Full<Bytes>>,
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
    /// A transport to `url` (e.g. `http://127.0.0.1:8000/mcp`).
    pub fn new(url: &str) -> Result<Self, String> {
        let url: Uri = url
            .parse()
            .map_err(|e| format!("invalid URL {url:?}: {e}"))?;
        if url.scheme_str() != Some("http") {
            return Err(
                "only http:// URLs are supported by this transport (put TLS in front)".into(),
            );
        }
        let (tx, rx) = mpsc::unbounded_channel();
        Ok(HttpTransport {
            url,
            client: HyperClient::builder(TokioExecutor::new()).build(crate::net::connector()),
            extra_headers: HeaderMap::new(),
            auth: Auth::default(),
            state: Arc::new(State {
                session_id: Mutex::new(None),
                legacy_version: Mutex::new(None),
                in_flight: Mutex::new(HashMap::new()),
                tool_headers: Mutex::new(HashMap::new()),
                error: Mutex::new(None),
                failures: Mutex::new(HashMap::new()),
                listener: Mutex::new(None),
            }),
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
    /// connection pool (http:// only; redirects are not followed).
    #[cfg(feature = "oauth")]
    pub fn fetcher(&self) -> Arc<dyn mcp_client::oauth::HttpFetch> {
        Arc::new(crate::oauth::HyperFetch::new(self.client.clone()))
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

/// Splits an SSE byte stream into events.
#[derive(Default)]
struct SseParser {
    buffer: String,
}

impl SseParser {
    fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buffer.push_str(&String::from_utf8_lossy(chunk));
        let mut events = Vec::new();
        loop {
            let normalized = self.buffer.replace("\r\n", "\n");
            let Some(end) = normalized.find("\n\n") else {
                self.buffer = normalized;
                break;
            };
            let block = normalized[..end].to_owned();
            self.buffer = normalized[end + 2..].to_owned();
            let mut event = SseEvent::default();
            let mut data: Vec<&str> = Vec::new();
            for line in block.lines() {
                let (field, value) = match line.split_once(':') {
                    Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                    None => (line, ""),
                };
                match field {
                    "data" => data.push(value),
                    "id" if !value.contains('\0') => event.id = Some(value.to_owned()),
                    "retry" => {
                        if let Ok(ms) = value.parse() {
                            event.retry = Some(ms);
                        }
                    }
                    _ => {}
                }
            }
            if !data.is_empty() {
                event.data = Some(data.join("\n"));
            }
            if event != SseEvent::default() {
                events.push(event);
            }
        }
        events
    }
}

/// How a response's SSE stream ended.
#[derive(Debug, Default)]
struct StreamEnd {
    /// The answer to the request arrived.
    answered: bool,
    /// The last event id seen: the stream can be resumed from it.
    last_event_id: Option<String>,
    /// The reconnection delay the server asked for.
    retry: Option<Duration>,
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
    let mut parser = SseParser::default();
    let mut end = StreamEnd::default();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { break };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        for event in parser.push(&data) {
            if let Some(event_id) = event.id {
                end.last_event_id = Some(event_id);
            }
            if let Some(ms) = event.retry {
                end.retry = Some(Duration::from_millis(ms));
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
            let auth = self.auth.clone();
            let client = self.client.clone();
            let state = self.state.clone();
            let tx = self.tx.clone();
            let url = self.url.clone();
            let extra_headers = self.extra_headers.clone();
            let task = tokio::spawn(async move {
                let id = method.as_ref().map(|(id, _)| id.clone());
                let method_name = method.as_ref().map(|(_, m)| m.clone()).unwrap_or_default();
                let fail = |why: String| {
                    if let Some(id) = &id {
                        if let Ok(mut failures) = state.failures.lock() {
                            failures.insert(id.clone(), why.clone());
                        }
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
                    for (name, value) in auth.headers(token.as_deref(), "POST", &url.to_string()) {
                        request.headers_mut().insert(name, value);
                    }
                    let response = match client.request(request).await {
                        Ok(response) => response,
                        Err(e) => {
                            if let Ok(mut err) = state.error.lock() {
                                *err = Some(format!("HTTP request failed: {e}"));
                            }
                            return fail(format!("HTTP request failed: {e}"));
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
                    while let (false, Some(last_event_id)) =
                        (end.answered, end.last_event_id.clone())
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
                        let next =
                            read_sse(resumed.into_body(), &state, &tx, &method_name, id.as_ref())
                                .await;
                        end = StreamEnd {
                            answered: next.answered,
                            last_event_id: next.last_event_id.or(Some(last_event_id)),
                            retry: next.retry.or(end.retry),
                        };
                    }
                } else {
                    let bytes = match body.collect().await {
                        Ok(collected) => collected.to_bytes(),
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
                if let Some(id) = &id
                    && let Ok(mut f) = state.in_flight.lock()
                {
                    f.remove(id);
                }
            });
            match &message_id(&message) {
                Some((id, _)) => {
                    if let Ok(mut f) = self.state.in_flight.lock() {
                        f.insert(id.clone(), task.abort_handle());
                    }
                }
                // Notifications and answers are posted in order: `notifications/initialized`
                // reaches the server before the session's next request.
                None => {
                    let _ = task.await;
                }
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
        self.state
            .failures
            .lock()
            .ok()
            .and_then(|mut f| f.remove(id))
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
        let mut p = SseParser::default();
        assert!(p.push(b"event: message\r\ndata: {\"a\":").is_empty());
        let events = p.push(b"1}\r\n\r\n: ping\n\nevent: message\ndata: 2\n\n");
        let data: Vec<_> = events.iter().map(|e| e.data.as_deref()).collect();
        assert_eq!(data, [Some("{\"a\":1}"), Some("2")]);
    }

    #[test]
    fn sse_events_carry_their_id_and_retry() {
        let mut p = SseParser::default();
        let events = p.push(b"id: event-1\nretry: 500\ndata: \n\nid: event-2\ndata: {}\n\n");
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

    #[test]
    fn filtered_tools_lose_only_the_invalid_ones() {
        let state = State {
            session_id: Mutex::new(None),
            legacy_version: Mutex::new(None),
            in_flight: Mutex::new(HashMap::new()),
            tool_headers: Mutex::new(HashMap::new()),
            error: Mutex::new(None),
            failures: Mutex::new(HashMap::new()),
            listener: Mutex::new(None),
        };
        let mut result = json!({"tools": [
            {"name": "valid_tool", "inputSchema": {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "Region"}}}},
            {"name": "invalid_empty_header", "inputSchema": {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": ""}}}}]});
        filter_tools(&state, &mut result);
        assert_eq!(result["tools"].as_array().unwrap().len(), 1);
    }
}
