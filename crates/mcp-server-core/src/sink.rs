//! The outgoing side of one request: notifications (progress, logs), legacy server-to-client
//! requests, and finally the response, in order, on one bounded stream the transport drains.
//!
//! A stream of its own rather than a tokio channel (issue #50): every request makes one, and
//! most carry a single message (the response). A tokio `mpsc` channel costs two allocations
//! when it is made (its shared state and an aligned block of slots) and asked each message to
//! be boxed to keep that block small; this one is one allocation, a queue that allocates on its
//! first message, and the messages kept as they are. Its semantics are the channel's: a
//! bounded queue whose senders wait for room, the stream ends once every sender is gone and the
//! queue is drained, and the senders learn when the receiver is gone.

use std::collections::VecDeque;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use mcp_types::{JsonRpcMessage, ServerNotification};
use tokio::sync::Notify;

/// How many messages a request may queue before its handler waits for the transport.
const REQUEST_STREAM_BUFFER: usize = 32;

/// What the senders and the receiver of one stream share.
struct Shared {
    state: Mutex<State>,
    /// Woken when the receiver is gone.
    closed: Notify,
    /// Woken when a message left a full queue (only when a sender waits for room).
    room: Notify,
}

struct State {
    queue: VecDeque<JsonRpcMessage>,
    /// Live [`Sink`]s: the stream ends when none is left and the queue is empty.
    senders: usize,
    /// The receiver was dropped: what is sent is swallowed.
    receiver_gone: bool,
    /// Senders waiting for room.
    waiting_for_room: usize,
    /// The receiver waiting for a message.
    receiver: Option<Waker>,
}

impl Shared {
    fn new(senders: usize, receiver_gone: bool) -> Arc<Shared> {
        Arc::new(Shared {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                senders,
                receiver_gone,
                waiting_for_room: 0,
                receiver: None,
            }),
            closed: Notify::new(),
            room: Notify::new(),
        })
    }

    /// The state; a poisoned lock (a panic while holding it, which nothing here can do) is
    /// taken as it is.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The sending half of a request's stream.
pub(crate) struct Sink {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink").finish_non_exhaustive()
    }
}

impl Clone for Sink {
    fn clone(&self) -> Self {
        self.shared.lock().senders += 1;
        Sink {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let waker = {
            let mut state = self.shared.lock();
            state.senders -= 1;
            if state.senders == 0 {
                state.receiver.take()
            } else {
                None
            }
        };
        // The last sender gone: a receiver waiting on an empty queue learns the stream ended.
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Sink {
    pub(crate) fn channel() -> (Sink, Receiver) {
        let shared = Shared::new(1, false);
        (
            Sink {
                shared: shared.clone(),
            },
            Receiver { shared },
        )
    }

    /// A sink nobody reads: what a task's body (which outlives its request) sends into.
    pub(crate) fn detached() -> Sink {
        Sink {
            shared: Shared::new(1, true),
        }
    }

    /// Queues a message, waiting while the queue is full; a stream nobody reads any more
    /// swallows it.
    pub(crate) async fn send(&self, message: JsonRpcMessage) {
        let mut message = Some(message);
        loop {
            let mut room = pin!(self.shared.room.notified());
            // Registered before the queue is looked at, so a message leaving it after the
            // look wakes this sender.
            room.as_mut().enable();
            {
                let mut state = self.shared.lock();
                if state.receiver_gone {
                    return;
                }
                if state.queue.len() < REQUEST_STREAM_BUFFER {
                    if let Some(message) = message.take() {
                        state.queue.push_back(message);
                    }
                    let waker = state.receiver.take();
                    drop(state);
                    if let Some(waker) = waker {
                        waker.wake();
                    }
                    return;
                }
                state.waiting_for_room += 1;
            }
            room.await;
            self.shared.lock().waiting_for_room -= 1;
        }
    }

    pub(crate) async fn notify(&self, notification: ServerNotification) {
        match notification.to_notification() {
            Ok(n) => self.send(JsonRpcMessage::Notification(n)).await,
            Err(e) => tracing::warn!(error = %e, "a notification could not be serialized"),
        }
    }

    /// Queues a notification without waiting (for `Drop` paths); dropped if the stream is full.
    pub(crate) fn try_notify(&self, notification: ServerNotification) {
        let Ok(n) = notification.to_notification() else {
            return;
        };
        let waker = {
            let mut state = self.shared.lock();
            if state.receiver_gone || state.queue.len() >= REQUEST_STREAM_BUFFER {
                return;
            }
            state.queue.push_back(JsonRpcMessage::Notification(n));
            state.receiver.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Resolves when the transport dropped the stream (an HTTP client closed it).
    pub(crate) async fn closed(&self) {
        let mut closed = pin!(self.shared.closed.notified());
        closed.as_mut().enable();
        if self.shared.lock().receiver_gone {
            return;
        }
        closed.await;
    }
}

/// The receiving half of a request's stream: what [`crate::ResponseStream`] reads.
pub(crate) struct Receiver {
    shared: Arc<Shared>,
}

impl Receiver {
    /// A stream that holds `message` and has ended.
    pub(crate) fn ready(message: JsonRpcMessage) -> Receiver {
        let shared = Shared::new(0, false);
        shared.lock().queue.push_back(message);
        Receiver { shared }
    }

    /// The next message; `None` once every sender is gone and the queue is empty.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<JsonRpcMessage>> {
        let mut state = self.shared.lock();
        if let Some(message) = state.queue.pop_front() {
            let waiting = state.waiting_for_room > 0;
            drop(state);
            if waiting {
                self.shared.room.notify_waiters();
            }
            return Poll::Ready(Some(message));
        }
        if state.senders == 0 {
            return Poll::Ready(None);
        }
        match &state.receiver {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => state.receiver = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// The next message; `None` once the stream ended.
    pub(crate) async fn recv(&mut self) -> Option<JsonRpcMessage> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let waiting = {
            let mut state = self.shared.lock();
            state.receiver_gone = true;
            state.queue.clear();
            state.waiting_for_room > 0
        };
        self.shared.closed.notify_waiters();
        if waiting {
            self.shared.room.notify_waiters();
        }
    }
}

impl std::fmt::Debug for Receiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_types::JsonRpcNotification;
    use std::time::Duration;

    fn note(n: usize) -> JsonRpcMessage {
        JsonRpcMessage::Notification(
            JsonRpcNotification::new("notifications/message", &serde_json::json!({"n": n}))
                .unwrap(),
        )
    }

    fn number(message: &JsonRpcMessage) -> u64 {
        let JsonRpcMessage::Notification(n) = message else {
            panic!("{message}")
        };
        let params: serde_json::Value =
            serde_json::from_str(n.params.as_ref().unwrap().get()).unwrap();
        params["n"].as_u64().unwrap()
    }

    #[tokio::test]
    async fn messages_arrive_in_order_and_the_stream_ends_with_the_last_sender() {
        let (sink, mut rx) = Sink::channel();
        let other = sink.clone();
        sink.send(note(1)).await;
        other.send(note(2)).await;
        drop(sink);
        assert_eq!(number(&rx.recv().await.unwrap()), 1);
        assert_eq!(number(&rx.recv().await.unwrap()), 2);
        // One sender is left: the stream waits for it.
        let waiting = tokio::time::timeout(Duration::from_millis(50), rx.recv()).await;
        assert!(waiting.is_err(), "the stream ended with a sender left");
        let reader = tokio::spawn(async move { rx.recv().await.is_none() });
        tokio::task::yield_now().await;
        drop(other);
        assert!(
            reader.await.unwrap(),
            "the stream did not end with its last sender"
        );
    }

    #[tokio::test]
    async fn a_full_stream_makes_its_sender_wait_until_a_message_leaves() {
        let (sink, mut rx) = Sink::channel();
        for n in 0..REQUEST_STREAM_BUFFER {
            sink.send(note(n)).await;
        }
        let sender = tokio::spawn(async move {
            sink.send(note(999)).await;
            sink
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !sender.is_finished(),
            "a send into a full stream did not wait"
        );
        assert_eq!(number(&rx.recv().await.unwrap()), 0);
        let sink = tokio::time::timeout(Duration::from_secs(5), sender)
            .await
            .expect("the waiting sender was not woken when room was made")
            .unwrap();
        for n in 1..REQUEST_STREAM_BUFFER {
            assert_eq!(number(&rx.recv().await.unwrap()) as usize, n);
        }
        assert_eq!(number(&rx.recv().await.unwrap()), 999);
        // A full stream refuses try_notify instead of waiting.
        for n in 0..REQUEST_STREAM_BUFFER {
            sink.send(note(n)).await;
        }
        sink.try_notify(ServerNotification::ToolListChanged(Default::default()));
        for _ in 0..REQUEST_STREAM_BUFFER {
            rx.recv().await.unwrap();
        }
        drop(sink);
        assert!(
            rx.recv().await.is_none(),
            "try_notify queued into a full stream"
        );
    }

    #[tokio::test]
    async fn senders_learn_the_receiver_is_gone_and_their_messages_are_swallowed() {
        let (sink, rx) = Sink::channel();
        for n in 0..REQUEST_STREAM_BUFFER {
            sink.send(note(n)).await;
        }
        let waiting = tokio::spawn({
            let sink = sink.clone();
            async move { sink.send(note(1000)).await }
        });
        let closed = tokio::spawn({
            let sink = sink.clone();
            async move { sink.closed().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !closed.is_finished(),
            "closed() resolved with the receiver alive"
        );
        drop(rx);
        tokio::time::timeout(Duration::from_secs(5), closed)
            .await
            .expect("closed() did not resolve when the receiver went")
            .unwrap();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("a sender waiting for room was not released when the receiver went")
            .unwrap();
        // Afterwards: a send returns at once, closed() resolves at once.
        tokio::time::timeout(Duration::from_secs(1), sink.send(note(1)))
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(1), sink.closed())
            .await
            .unwrap();
        let detached = Sink::detached();
        tokio::time::timeout(Duration::from_secs(1), detached.send(note(1)))
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(1), detached.closed())
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_ready_stream_holds_its_one_message_and_ends() {
        let mut rx = Receiver::ready(note(7));
        assert_eq!(number(&rx.recv().await.unwrap()), 7);
        assert!(rx.recv().await.is_none());
    }
}
