//! The legacy (2025-11-25) back-channel: server-to-client requests sent in the middle of a
//! call, on that call's stream, and correlated with the answers the client sends back.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_types::capabilities::ClientCapabilities;
use mcp_types::notifications::CancelledParams;
use mcp_types::{
    ClientResult, ErrorCode, ErrorObject, JsonObject, JsonRpcMessage, RequestId,
    ServerNotification, ServerRequest,
};
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use crate::cancel::CancellationToken;
use crate::gating::Requirement;
use crate::sink::Sink;

/// Why a server-to-client request did not produce a result.
#[derive(Debug, Clone, PartialEq)]
pub enum PeerError {
    /// This is a 2026-07-28 request: there is no back-channel. Return an
    /// `InputRequiredResult` (or use resolvers) instead.
    NoBackChannel {
        /// The method that could not be sent.
        method: &'static str,
    },
    /// The client did not declare the capability the request needs.
    MissingCapability(Requirement),
    /// The client did not answer in time; the request was cancelled.
    Timeout {
        /// The method.
        method: &'static str,
        /// How long the server waited.
        after: Duration,
    },
    /// The call that sent the request was cancelled.
    Cancelled,
    /// The session ended before the client answered.
    Disconnected,
    /// The client answered with an error.
    Client(ErrorObject),
    /// The request could not be posted (a task's question limit, its store failing).
    Refused(String),
    /// The client's answer does not have the method's result shape.
    InvalidResult {
        /// The method.
        method: &'static str,
        /// What is wrong.
        reason: String,
    },
}

impl PeerError {
    pub(crate) fn wrong_result(method: &'static str, got: &ClientResult) -> Self {
        PeerError::InvalidResult {
            method,
            reason: format!("unexpected result {got:?}"),
        }
    }
}

impl fmt::Display for PeerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerError::NoBackChannel { method } => write!(
                f,
                "Cannot send '{method}': this transport context has no back-channel for server-initiated requests."
            ),
            PeerError::MissingCapability(r) => {
                write!(f, "Client did not declare the {} capability", r.describe())
            }
            PeerError::Timeout { method, after } => {
                write!(
                    f,
                    "The client did not answer '{method}' within {} ms",
                    after.as_millis()
                )
            }
            PeerError::Cancelled => f.write_str("The request was cancelled"),
            PeerError::Disconnected => f.write_str("The session ended before the client answered"),
            PeerError::Client(e) => write!(f, "The client answered with an error: {e}"),
            PeerError::Refused(why) => write!(f, "The request could not be sent: {why}"),
            PeerError::InvalidResult { method, reason } => {
                write!(f, "Invalid result for '{method}': {reason}")
            }
        }
    }
}

impl std::error::Error for PeerError {}

impl From<PeerError> for ErrorObject {
    fn from(e: PeerError) -> Self {
        match e {
            PeerError::NoBackChannel { .. } => {
                ErrorObject::new(ErrorCode::INVALID_REQUEST, e.to_string())
            }
            PeerError::MissingCapability(r) => r.error("this request"),
            PeerError::Client(error) => error,
            other => ErrorObject::internal(other.to_string()),
        }
    }
}

type Answer = Result<Box<RawValue>, ErrorObject>;

/// The server-to-client requests of one session waiting for their answers.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    next_id: AtomicI64,
    waiting: Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>,
    /// A fleet instance's request prefix (`i1:`): ids are then `i1:1`, `i1:2`, … so that an
    /// answer reaching another instance finds its way back; numbers otherwise.
    prefix: Option<String>,
}

impl Pending {
    pub(crate) fn named(prefix: Option<String>) -> Self {
        Pending {
            prefix,
            ..Pending::default()
        }
    }

    /// Delivers the client's answer to `id`; an answer nobody waits for is dropped.
    pub(crate) fn resolve(&self, id: &RequestId, answer: Answer) {
        let waiter = self.waiting.lock().ok().and_then(|mut w| w.remove(id));
        match waiter {
            Some(tx) => {
                let _ = tx.send(answer);
            }
            None => {
                tracing::debug!(%id, "an answer arrived for no pending server-to-client request")
            }
        }
    }

    fn register(&self) -> (RequestId, oneshot::Receiver<Answer>) {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let id = match &self.prefix {
            Some(prefix) => RequestId::String(format!("{prefix}{n}")),
            None => RequestId::Number(n),
        };
        let (tx, rx) = oneshot::channel();
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.insert(id.clone(), tx);
        }
        (id, rx)
    }

    fn forget(&self, id: &RequestId) {
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.remove(id);
        }
    }

    /// Fails every waiting request: the session is gone.
    pub(crate) fn close(&self) {
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.clear();
        }
    }
}

/// Forgets a pending server-to-client request when its caller stops waiting, whichever way.
struct PendingGuard<'a> {
    pending: &'a Pending,
    id: Option<RequestId>,
    sink: &'a Sink,
}

impl PendingGuard<'_> {
    fn disarm(&mut self, tell_client: bool) {
        if let Some(id) = self.id.take() {
            self.pending.forget(&id);
            if tell_client {
                self.cancel_on_client(id);
            }
        }
    }

    fn cancel_on_client(&self, id: RequestId) {
        self.sink
            .try_notify(ServerNotification::Cancelled(CancelledParams {
                request_id: Some(id),
                reason: Some("the server stopped waiting for this request".into()),
                meta: None,
                extra: JsonObject::new(),
            }));
    }
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.pending.forget(&id);
            self.cancel_on_client(id);
        }
    }
}

/// A handle to send server-to-client requests on a legacy session.
#[derive(Debug, Clone)]
pub(crate) struct ClientRequester {
    pub(crate) pending: Arc<Pending>,
    pub(crate) timeout: Duration,
}

impl ClientRequester {
    pub(crate) async fn request(
        &self,
        request: ServerRequest,
        caps: &ClientCapabilities,
        cancel: &CancellationToken,
        sink: &Sink,
    ) -> Result<ClientResult, PeerError> {
        if let Some(requirement) = Requirement::of_server_request(&request)
            && !requirement.is_met(caps)
        {
            return Err(PeerError::MissingCapability(requirement));
        }
        let method = request.method();
        let (id, answer) = self.pending.register();
        // If the call is cancelled while waiting, its future is dropped here: the guard then
        // forgets the pending entry and tells the client to stop working on the request.
        let mut guard = PendingGuard {
            pending: &self.pending,
            id: Some(id.clone()),
            sink,
        };
        let message = match request.to_request(id.clone()) {
            #[cfg(feature = "otel")]
            Ok(mut m) => {
                // The client's handling of this request continues the call's trace.
                crate::otel::inject_into_params(&tracing::Span::current(), &mut m.params);
                m
            }
            #[cfg(not(feature = "otel"))]
            Ok(m) => m,
            Err(e) => {
                guard.disarm(false);
                return Err(PeerError::InvalidResult {
                    method,
                    reason: format!("the request could not be encoded: {e}"),
                });
            }
        };
        sink.send(JsonRpcMessage::Request(message)).await;
        let outcome = tokio::select! {
            answer = answer => answer.map_err(|_| PeerError::Disconnected),
            () = tokio::time::sleep(self.timeout) => Err(PeerError::Timeout { method, after: self.timeout }),
            () = cancel.cancelled() => Err(PeerError::Cancelled),
        };
        let answer = match outcome {
            Ok(answer) => {
                guard.disarm(false);
                answer
            }
            Err(e) => {
                let tell_client = matches!(e, PeerError::Timeout { .. } | PeerError::Cancelled);
                guard.disarm(tell_client);
                return Err(e);
            }
        };
        match answer {
            Ok(raw) => ClientResult::decode(method, &raw).map_err(|e| PeerError::InvalidResult {
                method,
                reason: e.to_string(),
            }),
            Err(error) => Err(PeerError::Client(error)),
        }
    }
}
