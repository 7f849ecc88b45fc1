//! The endpoint's response bodies: nothing, one JSON document, or a server-sent-event stream fed by a
//! request's [`ResponseStream`] (dropping the body, as hyper does when the client goes away,
//! drops the stream, which cancels the handler).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use mcp_server_core::{Delivery, ResponseStream};
use mcp_types::JsonRpcMessage;
use tokio::sync::mpsc;

use super::quota::Permit;

/// How often an open SSE stream gets a keep-alive comment.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

enum Source {
    Request(ResponseStream),
    /// Frames written by a task (a resumable legacy stream: each event carries its id).
    Frames(mpsc::Receiver<Bytes>),
    /// Frames the body pulls itself as the client reads: no task and no queue between (a
    /// session's GET stream, which stays open for the session's life). In a `Mutex` only so
    /// that the body stays `Sync` (polling has `&mut` and takes no lock).
    Pulled(Mutex<Box<dyn FrameSource>>),
}

/// Frames an SSE body pulls itself; `None` ends the stream.
pub(crate) trait FrameSource: Send {
    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>>;
}

/// Where a legacy session's unsolicited messages wait between GET streams: one stream at a
/// time takes the receiver and gives it back when it ends, so a client can reopen it.
pub(crate) struct StreamSlot {
    rx: Mutex<Option<mpsc::Receiver<JsonRpcMessage>>>,
    last_seen: Mutex<tokio::time::Instant>,
}

impl StreamSlot {
    pub(crate) fn new(rx: mpsc::Receiver<JsonRpcMessage>) -> Self {
        StreamSlot {
            rx: Mutex::new(Some(rx)),
            last_seen: Mutex::new(tokio::time::Instant::now()),
        }
    }

    /// Whether a GET stream holds the receiver now (the session is in use).
    pub(crate) fn is_open(&self) -> bool {
        self.rx.lock().map(|rx| rx.is_none()).unwrap_or(false)
    }

    pub(crate) fn last_seen(&self) -> tokio::time::Instant {
        self.last_seen
            .lock()
            .map(|t| *t)
            .unwrap_or_else(|_| tokio::time::Instant::now())
    }

    pub(crate) fn touch(&self) {
        if let Ok(mut t) = self.last_seen.lock() {
            *t = tokio::time::Instant::now();
        }
    }

    /// Opens the GET stream, ending when `closed` resolves; `None` while another is open.
    pub(crate) fn open(
        self: &Arc<Self>,
        closed: impl Future<Output = ()> + Send + 'static,
    ) -> Option<SessionStream> {
        let rx = self.rx.lock().ok()?.take()?;
        Some(SessionStream {
            slot: self.clone(),
            rx: Some(rx),
            closed: Box::pin(closed),
        })
    }
}

/// A legacy session's GET stream; dropping it hands the receiver back to its slot.
pub(crate) struct SessionStream {
    slot: Arc<StreamSlot>,
    rx: Option<mpsc::Receiver<JsonRpcMessage>>,
    closed: Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl SessionStream {
    /// The next unsolicited message; `None` once the session closed or the server drains.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<JsonRpcMessage>> {
        if self.closed.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        match &mut self.rx {
            Some(rx) => rx.poll_recv(cx),
            None => Poll::Ready(None),
        }
    }
}

impl Drop for SessionStream {
    fn drop(&mut self) {
        self.slot.touch();
        if let (Some(rx), Ok(mut slot)) = (self.rx.take(), self.slot.rx.lock()) {
            *slot = Some(rx);
        }
    }
}

/// The body of every response the MCP endpoint sends.
pub struct McpBody {
    kind: Kind,
    /// A capacity permit (in-flight requests) released when the body is done or dropped (and
    /// when whatever else shares it, such as a detached legacy request, is done too).
    permit: Option<Arc<Permit>>,
    /// The request's replay-guard claims, marked done when the body is dropped (written, or
    /// its connection gone).
    delivery: Option<Arc<Delivery>>,
}

impl Drop for McpBody {
    fn drop(&mut self) {
        if let Some(delivery) = self.delivery.take()
            && !delivery.is_empty()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move { delivery.finish().await });
        }
    }
}

enum Kind {
    Empty,
    Full(Option<Bytes>),
    Sse {
        first: Option<JsonRpcMessage>,
        source: Source,
        keep_alive: Pin<Box<tokio::time::Sleep>>,
    },
}

impl std::fmt::Debug for McpBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.kind {
            Kind::Empty => "McpBody::Empty",
            Kind::Full(_) => "McpBody::Full",
            Kind::Sse { .. } => "McpBody::Sse",
        })
    }
}

impl McpBody {
    /// No body.
    pub fn empty() -> Self {
        McpBody {
            kind: Kind::Empty,
            permit: None,
            delivery: None,
        }
    }

    /// A complete body.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        McpBody {
            kind: Kind::Full(Some(bytes.into())),
            permit: None,
            delivery: None,
        }
    }

    /// An SSE stream of a request's messages, starting with `first`.
    pub(crate) fn sse(first: Option<JsonRpcMessage>, stream: ResponseStream) -> Self {
        Self::sse_from(first, Source::Request(stream))
    }

    /// An SSE stream of frames already encoded (ids, `retry:`) by the task holding `frames`'
    /// sender; it ends when that task drops the sender.
    pub(crate) fn frames(frames: mpsc::Receiver<Bytes>) -> Self {
        Self::sse_from(None, Source::Frames(frames))
    }

    /// An SSE stream of the frames `source` yields when the client reads.
    pub(crate) fn pulled(source: Box<dyn FrameSource>) -> Self {
        Self::sse_from(None, Source::Pulled(Mutex::new(source)))
    }

    /// This body, holding `permit` until it is done.
    pub(crate) fn holding(mut self, permit: Arc<Permit>) -> Self {
        self.permit = Some(permit);
        self
    }

    /// This body, marking the claims in `delivery` done once it is dropped.
    pub(crate) fn delivering(mut self, delivery: Arc<Delivery>) -> Self {
        self.delivery = Some(delivery);
        self
    }

    fn sse_from(first: Option<JsonRpcMessage>, source: Source) -> Self {
        McpBody {
            kind: Kind::Sse {
                first,
                source,
                keep_alive: Box::pin(tokio::time::sleep(KEEP_ALIVE)),
            },
            permit: None,
            delivery: None,
        }
    }
}

fn event(message: &JsonRpcMessage) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

/// One SSE event carrying `message` under the event id `id`.
pub(crate) fn event_with_id(id: &str, message: &JsonRpcMessage) -> Bytes {
    Bytes::from(format!("id: {id}\nevent: message\ndata: {message}\n\n"))
}

impl Body for McpBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.kind {
            Kind::Empty => Poll::Ready(None),
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Sse {
                first,
                source,
                keep_alive,
            } => {
                if let Some(message) = first.take() {
                    return Poll::Ready(Some(Ok(Frame::data(event(&message)))));
                }
                let polled = match source {
                    Source::Request(stream) => stream.poll_next(cx).map(|m| m.map(|m| event(&m))),
                    Source::Frames(frames) => frames.poll_recv(cx),
                    Source::Pulled(pulled) => match pulled.get_mut() {
                        Ok(pulled) => pulled.poll_frame(cx),
                        // A source that panicked mid-poll has nothing more to send.
                        Err(_) => Poll::Ready(None),
                    },
                };
                match polled {
                    Poll::Ready(Some(frame)) => {
                        keep_alive
                            .as_mut()
                            .reset(tokio::time::Instant::now() + KEEP_ALIVE);
                        Poll::Ready(Some(Ok(Frame::data(frame))))
                    }
                    Poll::Ready(None) => Poll::Ready(None),
                    Poll::Pending => match keep_alive.as_mut().poll(cx) {
                        Poll::Ready(()) => {
                            keep_alive
                                .as_mut()
                                .reset(tokio::time::Instant::now() + KEEP_ALIVE);
                            Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b": ping\n\n")))))
                        }
                        Poll::Pending => Poll::Pending,
                    },
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Empty => true,
            Kind::Full(b) => b.is_none(),
            Kind::Sse { .. } => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Empty => SizeHint::with_exact(0),
            Kind::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Kind::Full(None) => SizeHint::with_exact(0),
            Kind::Sse { .. } => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod auto_traits {
    /// `McpBody` is public: it stays `Send` and `Sync` whatever its source (the release's
    /// semver check refused a change that made it `!Sync`).
    #[test]
    fn the_body_is_send_and_sync() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<super::McpBody>();
    }
}
