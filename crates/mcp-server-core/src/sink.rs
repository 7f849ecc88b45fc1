//! The outgoing side of one request: notifications (progress, logs), legacy server-to-client
//! requests, and finally the response, in order, on one channel the transport drains.

use mcp_types::{JsonRpcMessage, ServerNotification};
use tokio::sync::mpsc;

/// How many messages a request may queue before its handler waits for the transport.
const REQUEST_STREAM_BUFFER: usize = 32;

/// A message in a request's stream, boxed: a channel allocates room for a block of its items
/// when it is made, and a block of 32 messages (136 bytes each) was 4.3 KiB held by every
/// request, every `subscriptions/listen` stream for its whole life included (the largest
/// single allocation of a listen stream after hyper's buffers, by massif). Boxed, the block is
/// 256 bytes and a message costs its own allocation when it is sent.
pub(crate) type Queued = Box<JsonRpcMessage>;

/// The sending half of a request's stream.
#[derive(Debug, Clone)]
pub(crate) struct Sink {
    tx: mpsc::Sender<Queued>,
}

impl Sink {
    pub(crate) fn channel() -> (Sink, mpsc::Receiver<Queued>) {
        let (tx, rx) = mpsc::channel(REQUEST_STREAM_BUFFER);
        (Sink { tx }, rx)
    }

    /// A sink nobody reads: what a task's body (which outlives its request) sends into.
    pub(crate) fn detached() -> Sink {
        let (tx, _) = mpsc::channel(1);
        Sink { tx }
    }

    /// Queues a message; a stream nobody reads any more swallows it.
    pub(crate) async fn send(&self, message: JsonRpcMessage) {
        let _ = self.tx.send(Box::new(message)).await;
    }

    pub(crate) async fn notify(&self, notification: ServerNotification) {
        match notification.to_notification() {
            Ok(n) => self.send(JsonRpcMessage::Notification(n)).await,
            Err(e) => tracing::warn!(error = %e, "a notification could not be serialized"),
        }
    }

    /// Queues a notification without waiting (for `Drop` paths); dropped if the stream is full.
    pub(crate) fn try_notify(&self, notification: ServerNotification) {
        if let Ok(n) = notification.to_notification() {
            let _ = self.tx.try_send(Box::new(JsonRpcMessage::Notification(n)));
        }
    }

    /// Resolves when the transport dropped the stream (an HTTP client closed it).
    pub(crate) async fn closed(&self) {
        self.tx.closed().await;
    }
}
