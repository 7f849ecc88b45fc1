//! The proxy's response body: chunks fed through a channel by the task relaying the server's
//! answer. An `Err` chunk makes hyper abort the connection mid-body (a dropped stream); a
//! sender kept alive without sending is a stalled one.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};
use tokio::sync::mpsc;

/// Why the proxy cut a connection on purpose.
#[derive(Debug)]
pub(crate) struct Cut(pub(crate) &'static str);

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the proxy cut the connection: {}", self.0)
    }
}

impl std::error::Error for Cut {}

/// A body read from a channel.
pub(crate) struct ChannelBody {
    rx: mpsc::Receiver<Result<Bytes, Cut>>,
}

impl ChannelBody {
    /// The body and the sender that feeds it (capacity: a few chunks; the relay waits).
    pub(crate) fn new() -> (mpsc::Sender<Result<Bytes, Cut>>, ChannelBody) {
        let (tx, rx) = mpsc::channel(8);
        (tx, ChannelBody { rx })
    }

    /// A body of `bytes`, complete.
    pub(crate) fn full(bytes: Bytes) -> ChannelBody {
        let (tx, body) = ChannelBody::new();
        if !bytes.is_empty() {
            let _ = tx.try_send(Ok(bytes));
        }
        body
    }
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Cut;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Cut>>> {
        self.rx
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| c.map(Frame::data)))
    }
}
