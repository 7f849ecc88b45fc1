//! An upstream in this process: a [`Service`] driven through [`Service::handle_modern`], as a
//! 2026-07-28 client would drive it, with the caller's principal in its transport context so
//! that its own resolvers, policy layers and tasks see who calls.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_client::ClientError;
use mcp_server_core::{RequestContext, Service, TransportContext};
use mcp_types::{JsonRpcMessage, JsonRpcRequest, RequestId, ServerNotification};
use serde_json::value::RawValue;

use crate::failure::UpstreamFailure;

/// A mounted in-process service.
pub(crate) struct LocalLink {
    service: Service,
    next_id: AtomicU64,
}

impl std::fmt::Debug for LocalLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalLink")
            .field("server", &self.service.server_info().name)
            .finish_non_exhaustive()
    }
}

/// The progress token the gateway puts on an in-process request whose caller asked for
/// progress; the service's reports under it go to the caller's request.
pub(crate) const RELAYED_PROGRESS: &str = "gateway";

impl LocalLink {
    /// A link to `service`.
    pub(crate) fn new(service: Service) -> LocalLink {
        LocalLink {
            service,
            next_id: AtomicU64::new(0),
        }
    }

    /// Sends `method` with `params` and waits, at most `deadline`, for its answer. With a
    /// `caller`, the service runs as the caller's principal and its progress and log
    /// notifications go to the caller's request; without one it runs as nobody.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Box<RawValue>,
        caller: Option<&RequestContext>,
        deadline: Duration,
    ) -> Result<Box<RawValue>, UpstreamFailure> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let request = JsonRpcRequest {
            id: RequestId::Number(id.try_into().unwrap_or(i64::MAX)),
            method: method.to_owned(),
            params: Some(params),
            extra: mcp_types::JsonObject::new(),
        };
        let transport = TransportContext {
            principal: caller.and_then(|c| c.principal().cloned()),
            ..TransportContext::default()
        };
        // Dropping the stream (the deadline, or the caller's cancellation dropping this
        // future) cancels the request inside the service.
        let mut stream = self.service.handle_modern(request, transport);
        let answer = async {
            while let Some(message) = stream.next().await {
                match message {
                    JsonRpcMessage::Response(r) => return Ok(r.result),
                    JsonRpcMessage::Error(e) => {
                        return Err(UpstreamFailure::Client(ClientError::Server(e.error)));
                    }
                    JsonRpcMessage::Notification(n) => {
                        if let Some(caller) = caller {
                            relay(caller, &n).await;
                        }
                    }
                    JsonRpcMessage::Request(_) => {}
                }
            }
            Err(UpstreamFailure::Client(ClientError::Transport(
                "the in-process server ended the request without an answer".into(),
            )))
        };
        tokio::time::timeout(deadline, answer)
            .await
            .unwrap_or(Err(UpstreamFailure::Deadline(deadline)))
    }
}

/// Passes a progress or log notification of the service on to the caller's request.
async fn relay(caller: &RequestContext, notification: &mcp_types::JsonRpcNotification) {
    match ServerNotification::from_notification(notification) {
        Ok(ServerNotification::Progress(p)) => {
            let total = p.total.as_ref().and_then(serde_json::Number::as_f64);
            if let Some(progress) = p.progress.as_f64() {
                caller.progress(progress, total, p.message.as_deref()).await;
            }
        }
        Ok(ServerNotification::LoggingMessage(m)) => {
            caller.log(m.level, m.logger.as_deref(), m.data).await;
        }
        _ => {}
    }
}
