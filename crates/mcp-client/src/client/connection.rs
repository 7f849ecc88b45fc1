//! The running connection: the task that reads the transport, the requests waiting for
//! their answers, the server's own requests served through the callbacks, and the
//! cancellation of a request its caller stopped waiting for.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_types::capabilities::ClientCapabilities;
use mcp_types::error::ErrorCode;
use mcp_types::lifecycle::Implementation;
use mcp_types::logging::LoggingLevel;
use mcp_types::mrtr::{InputRequest, InputResponse};
use mcp_types::notifications::CancelledParams;
use mcp_types::version::Era;
use mcp_types::{
    ClientNotification, ClientResult, ErrorObject, JsonObject, JsonRpcError, JsonRpcMessage,
    JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, RequestId, ServerNotification,
    ServerRequest,
};
use serde_json::value::RawValue;
use tokio::sync::{Notify, oneshot};

use crate::callbacks::{Callbacks, RequestInfo};
use crate::transport::Transport;

use crate::Negotiated;
use crate::client::dispatch;

pub(crate) type Answer = Result<Box<RawValue>, ErrorObject>;

pub(crate) struct Inner {
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) pending: Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>,
    pub(crate) next_id: AtomicI64,
    pub(crate) callbacks: Callbacks,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) info: Arc<Implementation>,
    pub(crate) request_timeout: Duration,
    /// The longest a request waits in all, progress or not.
    pub(crate) max_total_timeout: Duration,
    /// The progress tokens of requests waiting now, each woken by its progress.
    pub(crate) progress_waiters: Mutex<HashMap<RequestId, Arc<Notify>>>,
    pub(crate) next_progress: AtomicI64,
    /// Which tools `tools/list` said are safe to call twice (`readOnlyHint` or
    /// `idempotentHint`); at most [`MAX_KNOWN_TOOLS`](super::handle::MAX_KNOWN_TOOLS) are remembered.
    pub(crate) repeatable_tools: Mutex<HashMap<String, bool>>,
    /// One permit per request on the wire ([`DEFAULT_MAX_IN_FLIGHT`]); the rest queue, in
    /// order.
    pub(crate) in_flight: Arc<tokio::sync::Semaphore>,
    /// Where cacheable results are kept; `None` when caching is off.
    pub(crate) cache: Option<Arc<dyn crate::cache::CacheStore>>,
    /// Whose results this client's cache entries are.
    pub(crate) cache_scope: super::cache_key::CacheScope,
    pub(crate) max_rounds: u32,
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) max_server_requests: usize,
    pub(crate) max_input_requests: usize,
    /// The longest a task is followed, whatever TTL its server names.
    pub(crate) max_task_wait: Duration,
    /// Server-to-client requests being served now.
    pub(crate) serving: Arc<AtomicUsize>,
    pub(crate) negotiated: Mutex<Option<Negotiated>>,
    pub(crate) closed: Mutex<Option<String>>,
    /// When the connection opened (`mcp.client.session.duration`).
    #[cfg(feature = "otel")]
    pub(crate) opened: std::time::Instant,
}

/// Reads every message from the server: answers go to their waiting requests, notifications
/// to their handlers, legacy server-to-client requests to the callbacks.
pub(crate) async fn read_loop(inner: Arc<Inner>) {
    while let Some(message) = inner.transport.receive().await {
        match message {
            JsonRpcMessage::Response(r) => inner.resolve(&r.id, Ok(r.result)),
            JsonRpcMessage::Error(e) => match e.id.request_id() {
                Some(id) => inner.resolve(id, Err(e.error)),
                None => tracing::warn!(
                    code = e.error.code.0,
                    message = %mcp_types::LogSafe(&e.error.message),
                    "the server sent an error without an id"
                ),
            },
            JsonRpcMessage::Notification(n) => inner.notification(&n),
            JsonRpcMessage::Request(request) => {
                let era = inner
                    .negotiated
                    .lock()
                    .ok()
                    .and_then(|n| n.as_ref().map(|n| n.era));
                if era == Some(Era::Modern) {
                    // 2026-07-28 servers ask through `inputRequests`, never with requests.
                    let error = ErrorObject::new(
                        ErrorCode::METHOD_NOT_FOUND,
                        format!(
                            "'{}': a 2026-07-28 client serves no server-to-client requests",
                            request.method
                        ),
                    );
                    inner.refuse(request.id, error).await;
                    continue;
                }
                let Some(slot) = ServingSlot::take(&inner.serving, inner.max_server_requests)
                else {
                    let error = ErrorObject::new(
                        ErrorCode(-32000),
                        format!(
                            "the client is already serving {} server requests \
                             (ClientBuilder::max_server_requests); try again later",
                            inner.max_server_requests
                        ),
                    );
                    inner.refuse(request.id, error).await;
                    continue;
                };
                let inner = inner.clone();
                tokio::spawn(async move {
                    inner.serve_server_request(request).await;
                    drop(slot);
                });
            }
        }
    }
    // The connection is gone: every waiting request fails now rather than at its timeout.
    let reason = inner
        .transport
        .error()
        .unwrap_or_else(|| "the connection closed".to_owned());
    if let Ok(mut closed) = inner.closed.lock() {
        *closed = Some(reason);
    }
    if let Ok(mut pending) = inner.pending.lock() {
        pending.clear();
    }
}

/// One of the client's `max_server_requests` slots, given back on drop.
pub(crate) struct ServingSlot(Arc<AtomicUsize>);

impl ServingSlot {
    pub(crate) fn take(serving: &Arc<AtomicUsize>, max: usize) -> Option<ServingSlot> {
        serving
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()?;
        Some(ServingSlot(serving.clone()))
    }
}

impl Drop for ServingSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Inner {
    /// Answers a server-to-client request with an error, without serving it.
    pub(crate) async fn refuse(&self, id: RequestId, error: ErrorObject) {
        let reply = JsonRpcMessage::Error(JsonRpcError::new(Some(id), error));
        if let Err(e) = self.transport.send(reply).await {
            tracing::warn!(error = %e, "could not refuse a server-to-client request");
        }
    }

    pub(crate) fn resolve(&self, id: &RequestId, answer: Answer) {
        let waiter = self.pending.lock().ok().and_then(|mut p| p.remove(id));
        match waiter {
            Some(tx) => {
                let _ = tx.send(answer);
            }
            None => {
                tracing::debug!(%id, "an answer arrived for no waiting request (late or cancelled)")
            }
        }
    }

    pub(crate) fn notification(&self, n: &JsonRpcNotification) {
        let notification = match ServerNotification::from_notification(n) {
            Ok(notification) => notification,
            Err(e) => return tracing::debug!(error = %e, "unknown notification ignored"),
        };
        self.invalidate(&notification);
        match &notification {
            ServerNotification::Progress(p) => {
                // Progress proves the request is alive: its timeout starts again.
                let waiter = self
                    .progress_waiters
                    .lock()
                    .ok()
                    .and_then(|w| w.get(&p.progress_token).cloned());
                if let Some(waiter) = waiter {
                    waiter.notify_one();
                }
                if let Some(handler) = &self.callbacks.progress {
                    handler(p.clone());
                }
            }
            ServerNotification::LoggingMessage(m) => {
                if let Some(handler) = &self.callbacks.log {
                    handler(m.clone());
                }
            }
            other => tracing::debug!(method = other.method(), "notification"),
        }
        if let Some(handler) = &self.callbacks.notification {
            handler(&notification);
        }
    }

    /// Answers a legacy server-to-client request with the same callbacks the 2026-07-28 loop
    /// uses.
    pub(crate) async fn serve_server_request(&self, request: JsonRpcRequest) {
        // The span ends once the answer is ready, before it is sent: the server goes on as
        // soon as the answer arrives, and a program that exits right after its call ended
        // still has this span to export.
        let span = crate::trace::served_span(&request);
        let reply =
            tracing::Instrument::instrument(self.answer_server_request(request), span).await;
        if let Err(e) = self.transport.send(reply).await {
            tracing::warn!(error = %e, "could not answer a server-to-client request");
        }
    }

    async fn answer_server_request(&self, request: JsonRpcRequest) -> JsonRpcMessage {
        let info = RequestInfo {
            key: input_key(&request).unwrap_or_else(|| request.id.to_string()),
            method: request.method.clone(),
        };
        let question = match ServerRequest::from_request(&request) {
            Ok(ServerRequest::Ping(_)) => Ok(None),
            Ok(ServerRequest::Elicit(p)) => Ok(Some(InputRequest::Elicit(p))),
            Ok(ServerRequest::CreateMessage(p)) => Ok(Some(InputRequest::CreateMessage(p))),
            Ok(ServerRequest::ListRoots(p)) => Ok(Some(InputRequest::ListRoots(p))),
            Ok(other) => Err(ErrorObject::method_not_found(other.method())),
            Err(e) => Err(ErrorObject::new(e.code(), e.to_string())),
        };
        let result: Result<ClientResult, ErrorObject> = match question {
            Err(e) => Err(e),
            Ok(None) => Ok(ClientResult::Empty(Default::default())),
            Ok(Some(question)) => {
                match dispatch::answer(&self.callbacks, &self.capabilities, info, question) {
                    Err(refusal) => Err(refusal.to_error()),
                    Ok(answer) => answer.await.map(|response| match response {
                        InputResponse::Elicit(r) => ClientResult::Elicit(r),
                        InputResponse::CreateMessage(r) => ClientResult::CreateMessage(r),
                        InputResponse::ListRoots(r) => ClientResult::ListRoots(r),
                    }),
                }
            }
        };
        match result.and_then(|r| {
            JsonRpcResponse::new(request.id.clone(), &r)
                .map_err(|e| ErrorObject::internal(e.to_string()))
        }) {
            Ok(response) => JsonRpcMessage::Response(response),
            Err(error) => JsonRpcMessage::Error(JsonRpcError::new(Some(request.id), error)),
        }
    }
}

/// How long the client tries to write the cancellation of a request its caller stopped
/// waiting for.
const CANCEL_SEND_LIMIT: Duration = Duration::from_secs(2);

/// Cancels a request on the server if its caller stops waiting (dropped future or timeout).
pub(crate) struct Inflight<'a> {
    pub(crate) inner: &'a Arc<Inner>,
    pub(crate) id: Option<RequestId>,
}

impl Inflight<'_> {
    pub(crate) fn done(&mut self) {
        self.id = None;
    }
}

impl Drop for Inflight<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        if let Ok(mut pending) = self.inner.pending.lock() {
            pending.remove(&id);
        }
        let params = CancelledParams {
            request_id: Some(id),
            reason: Some("the client stopped waiting".into()),
            meta: None,
            extra: JsonObject::new(),
        };
        if let Ok(n) = ClientNotification::Cancelled(params).to_notification() {
            let transport = self.inner.transport.clone();
            // Best effort, off the dropping path, and bounded: a peer that stops reading
            // does not keep it (and the transport's writer) forever.
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    let sent = transport.send(JsonRpcMessage::Notification(n));
                    let _ = tokio::time::timeout(CANCEL_SEND_LIMIT, sent).await;
                });
            }
        }
    }
}

/// The resolver key a server of this SDK puts in a live question's `_meta`
/// ([`INPUT_KEY`](mcp_types::meta::INPUT_KEY)), so the callback sees the name a 2026-07-28
/// round would give the same question.
fn input_key(request: &JsonRpcRequest) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Option<serde_json::Map<String, serde_json::Value>>,
    }
    let params: Params = serde_json::from_str(request.params.as_ref()?.get()).ok()?;
    match params.meta?.remove(mcp_types::meta::INPUT_KEY)? {
        serde_json::Value::String(key) => Some(key),
        _ => None,
    }
}
