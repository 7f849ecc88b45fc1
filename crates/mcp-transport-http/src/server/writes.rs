//! A fleet session's record changes, written to the shared store in order, and awaited before
//! the answer to the request that caused them goes out. Without the wait, a client that
//! subscribed (or set its log level) on one instance and then opened its GET stream on another
//! could be served from the record as it was before: the fleet run saw a GET stream that heard
//! none of the notices its session had subscribed to, when the store write lost the race with
//! the next request.

use std::future::Future;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_server_core::fleet::SessionRecord;
use tokio::sync::Notify;

/// How long an answer waits for its writes at most (each store call has its own deadline;
/// this bounds the queue behind a slow one).
const SETTLE_WAIT: Duration = Duration::from_secs(3);

/// The pending writes of one session's record.
#[derive(Default)]
pub(crate) struct RecordWrites {
    /// The newest record not yet written: a write takes whatever is newest when it runs, so
    /// writes that start late never put an older record over a newer one.
    latest: Mutex<Option<SessionRecord>>,
    /// One write at a time.
    turn: tokio::sync::Mutex<()>,
    pending: AtomicUsize,
    settled: Notify,
}

impl RecordWrites {
    /// Queues `record` to be written by `write` (the store put and the bus announcement).
    pub(crate) fn push<W, F>(self: &Arc<Self>, record: SessionRecord, write: W)
    where
        W: FnOnce(SessionRecord) -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        if let Ok(mut latest) = self.latest.lock() {
            *latest = Some(record);
        }
        self.pending.fetch_add(1, Ordering::SeqCst);
        let this = self.clone();
        tokio::spawn(async move {
            {
                let _turn = this.turn.lock().await;
                let newest = this.latest.lock().ok().and_then(|mut l| l.take());
                // Taken by a write that ran before this one: already written.
                if let Some(record) = newest {
                    write(record).await;
                }
            }
            if this.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
                this.settled.notify_waiters();
            }
        });
    }

    /// Waits until every write queued so far has finished (or [`SETTLE_WAIT`] has passed).
    pub(crate) async fn settled(&self) {
        if !self.settled_within(SETTLE_WAIT).await {
            tracing::warn!("a session's change is still being stored; answering anyway");
        }
    }

    /// Waits at most `limit` for the writes queued so far: whether they all finished.
    async fn settled_within(&self, limit: Duration) -> bool {
        let wait = async {
            loop {
                let notified = self.settled.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.pending.load(Ordering::SeqCst) == 0 {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(limit, wait).await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record told apart from others by its one subscription.
    fn record(uri: &str) -> SessionRecord {
        SessionRecord {
            protocol_version: "2025-11-25".into(),
            capabilities: Default::default(),
            client_info: None,
            log_level: None,
            subscriptions: vec![uri.to_owned()],
            principal: None,
            ended: false,
            peer: None,
        }
    }

    #[tokio::test]
    async fn settled_waits_for_every_write_and_the_newest_record_is_written_last() {
        let writes = Arc::new(RecordWrites::default());
        let written = Arc::new(Mutex::new(Vec::new()));
        for uri in ["a://1", "a://2", "a://3"] {
            let written = written.clone();
            writes.push(record(uri), move |r| async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                written.lock().unwrap().push(r.subscriptions[0].clone());
            });
        }
        writes.settled().await;
        let written = written.lock().unwrap().clone();
        assert_eq!(
            written.last().map(String::as_str),
            Some("a://3"),
            "{written:?}"
        );
        assert!(!written.is_empty() && written.len() <= 3, "{written:?}");
        assert_eq!(writes.pending.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn settled_returns_at_once_with_nothing_pending_and_gives_up_on_a_stuck_write() {
        let writes = Arc::new(RecordWrites::default());
        assert!(writes.settled_within(Duration::ZERO).await);
        writes.push(record("a://1"), |_| std::future::pending::<()>());
        assert!(!writes.settled_within(Duration::from_millis(50)).await);
        assert_eq!(writes.pending.load(Ordering::SeqCst), 1);
    }
}
