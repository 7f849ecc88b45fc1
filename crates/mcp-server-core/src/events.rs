//! SSE event history: what a 2025-11-25 client that reconnects with `Last-Event-ID` gets
//! back. The [`EventStore`] trait (append an event to a stream, read after an event, expire a
//! session's history) and [`MemoryEventStore`], the bounded in-memory default.
//!
//! A stream is named by its legacy session and a stream id the transport picks (one per POST
//! answered with SSE, one for the session's GET stream). Events are numbered from 1 within
//! their stream, so an event id is the pair. 2026-07-28 has no SSE event ids and no
//! resumption (a broken stream loses its request, which the client re-issues), so nothing of
//! that era goes through a store.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use mcp_types::JsonRpcMessage;
use tokio::sync::watch;
use tokio::time::Instant;

/// The future an [`EventStore`] method returns (the workspace's one boxed future, re-exported
/// beside the trait for implementers).
pub use mcp_types::BoxFuture;

/// Why an event store operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventStoreError {
    /// The history no longer holds the events after the one named (expired, evicted or
    /// never written): the client cannot resume there.
    Gone,
    /// The store holds as many streams as it may and none can be evicted.
    Full {
        /// The limit.
        limit: usize,
    },
    /// The event is larger than the store keeps: it was not recorded.
    TooLarge {
        /// The event's size in bytes.
        bytes: usize,
        /// The store's limit.
        limit: usize,
    },
    /// The store could not be reached or answered an error (a remote store).
    Unavailable(String),
}

impl fmt::Display for EventStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventStoreError::Gone => f.write_str("the event history no longer holds that event"),
            EventStoreError::Full { limit } => {
                write!(f, "the event store holds its limit of {limit} streams")
            }
            EventStoreError::TooLarge { bytes, limit } => write!(
                f,
                "an event of {bytes} bytes is over the event store's limit of {limit} bytes"
            ),
            EventStoreError::Unavailable(why) => write!(f, "the event store is unavailable: {why}"),
        }
    }
}

impl std::error::Error for EventStoreError {}

/// Events read after an event id.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The events, oldest first, each with its number in the stream.
    pub events: Vec<(u64, JsonRpcMessage)>,
    /// Whether the stream has ended: nothing will follow the last event.
    pub finished: bool,
}

/// Where SSE events wait for a client to resume (see the module docs).
pub trait EventStore: Send + Sync + fmt::Debug {
    /// Appends `message` to the stream `stream` of `session` (creating the stream) and answers
    /// its number, 1 for the first event of a stream.
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        message: &'a JsonRpcMessage,
    ) -> BoxFuture<'a, Result<u64, EventStoreError>>;

    /// Marks the stream ended: a reader gets `finished` after its last event, and the store
    /// may forget it after its retention.
    fn finish<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
    ) -> BoxFuture<'a, Result<(), EventStoreError>>;

    /// The events of the stream after event number `after` (0: from the start). When there
    /// are none yet and the stream has not ended, waits up to `wait` for one. A stream the
    /// store does not know, or whose history no longer reaches back to `after`, is
    /// [`EventStoreError::Gone`].
    fn read_after<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
        wait: Duration,
    ) -> BoxFuture<'a, Result<Replay, EventStoreError>>;

    /// Forgets every stream of `session` (it closed or expired).
    fn expire<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), EventStoreError>>;
}

/// The most streams a [`MemoryEventStore`] keeps unless configured.
pub const DEFAULT_MAX_STREAMS: usize = 10_000;
/// The most streams one session holds in a [`MemoryEventStore`] unless configured: a new
/// one evicts the session's own oldest ended stream, else its oldest stream, so one session
/// cannot push out the histories of others (review W11).
pub const DEFAULT_MAX_STREAMS_PER_SESSION: usize = 100;
/// The most events one stream of a [`MemoryEventStore`] keeps unless configured; older ones
/// are dropped, and resuming before them is [`EventStoreError::Gone`].
pub const DEFAULT_MAX_EVENTS_PER_STREAM: usize = 1_000;
/// How long a [`MemoryEventStore`] keeps an ended stream unless configured.
pub const DEFAULT_FINISHED_RETENTION: Duration = Duration::from_secs(5 * 60);
/// The largest event a [`MemoryEventStore`] records unless configured (its JSON text); a
/// larger one is refused with [`EventStoreError::TooLarge`].
pub const DEFAULT_MAX_EVENT_BYTES: usize = 1024 * 1024;
/// The most bytes of events one stream of a [`MemoryEventStore`] keeps unless configured;
/// past it the stream's oldest events are dropped.
pub const DEFAULT_MAX_STREAM_BYTES: usize = 8 * 1024 * 1024;
/// The most bytes of events a [`MemoryEventStore`] keeps in all unless configured; past it
/// the oldest streams are evicted (ended ones first).
pub const DEFAULT_MAX_BYTES: usize = 256 * 1024 * 1024;

struct Log {
    /// The retained events, oldest first, each with its size.
    events: VecDeque<(u64, JsonRpcMessage, usize)>,
    /// The size of the retained events.
    bytes: usize,
    /// The number of the last event appended (0: none).
    last: u64,
    finished_at: Option<Instant>,
    created: Instant,
    /// Carries `last` to readers waiting for a new event.
    changed: watch::Sender<u64>,
}

/// Every stream's log, by (session, stream), and the bytes they hold.
#[derive(Default)]
struct Logs {
    streams: HashMap<(String, String), Log>,
    bytes: usize,
}

impl Logs {
    fn remove(&mut self, key: &(String, String)) {
        if let Some(log) = self.streams.remove(key) {
            self.bytes -= log.bytes;
        }
    }

    /// The stream to evict first, other than `keep`: the oldest ended one, else the oldest,
    /// among those `matching`.
    fn oldest(
        &self,
        keep: &(String, String),
        matching: impl Fn(&(String, String)) -> bool,
    ) -> Option<(String, String)> {
        self.streams
            .iter()
            .filter(|(key, _)| *key != keep && matching(key))
            .min_by_key(|(_, log)| (log.finished_at.is_none(), log.created))
            .map(|(key, _)| key.clone())
    }
}

/// An [`EventStore`] in this process's memory, bounded in streams (in all and per session),
/// events and bytes per stream, bytes per event and in all, and the retention of ended
/// streams. When it is full, the oldest ended stream is evicted, else the oldest stream.
pub struct MemoryEventStore {
    logs: Mutex<Logs>,
    max_streams: usize,
    max_per_session: usize,
    max_events: usize,
    max_event_bytes: usize,
    max_stream_bytes: usize,
    max_bytes: usize,
    retention: Duration,
}

impl fmt::Debug for MemoryEventStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryEventStore")
            .field("max_streams", &self.max_streams)
            .field("max_events", &self.max_events)
            .field("max_event_bytes", &self.max_event_bytes)
            .field("max_stream_bytes", &self.max_stream_bytes)
            .field("max_bytes", &self.max_bytes)
            .field("retention", &self.retention)
            .finish_non_exhaustive()
    }
}

impl Default for MemoryEventStore {
    fn default() -> Self {
        MemoryEventStore {
            logs: Mutex::new(Logs::default()),
            max_streams: DEFAULT_MAX_STREAMS,
            max_per_session: DEFAULT_MAX_STREAMS_PER_SESSION,
            max_events: DEFAULT_MAX_EVENTS_PER_STREAM,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            max_stream_bytes: DEFAULT_MAX_STREAM_BYTES,
            max_bytes: DEFAULT_MAX_BYTES,
            retention: DEFAULT_FINISHED_RETENTION,
        }
    }
}

impl MemoryEventStore {
    /// A store with the default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// The most streams kept (default [`DEFAULT_MAX_STREAMS`]).
    pub fn max_streams(mut self, streams: usize) -> Self {
        self.max_streams = streams.max(1);
        self
    }

    /// The most streams one session holds (default [`DEFAULT_MAX_STREAMS_PER_SESSION`]).
    pub fn max_streams_per_session(mut self, streams: usize) -> Self {
        self.max_per_session = streams.max(1);
        self
    }

    /// The most events kept per stream (default [`DEFAULT_MAX_EVENTS_PER_STREAM`]).
    pub fn max_events_per_stream(mut self, events: usize) -> Self {
        self.max_events = events.max(1);
        self
    }

    /// The largest event recorded, as JSON text (default [`DEFAULT_MAX_EVENT_BYTES`]); a
    /// larger one is refused with [`EventStoreError::TooLarge`] (the HTTP transport then
    /// delivers it live only, and refuses to resume its stream).
    pub fn max_event_bytes(mut self, bytes: usize) -> Self {
        self.max_event_bytes = bytes.max(1);
        self
    }

    /// The most bytes of events kept per stream (default [`DEFAULT_MAX_STREAM_BYTES`]); past
    /// it the stream's oldest events are dropped.
    pub fn max_stream_bytes(mut self, bytes: usize) -> Self {
        self.max_stream_bytes = bytes.max(1);
        self
    }

    /// The most bytes of events kept in all (default [`DEFAULT_MAX_BYTES`]); past it the
    /// oldest streams are evicted, ended ones first.
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes.max(1);
        self
    }

    /// How long an ended stream is kept (default [`DEFAULT_FINISHED_RETENTION`]).
    pub fn finished_retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    fn locked(&self) -> Result<std::sync::MutexGuard<'_, Logs>, EventStoreError> {
        self.logs
            .lock()
            .map_err(|_| EventStoreError::Unavailable("the store's lock is poisoned".into()))
    }

    fn append_now(
        &self,
        session: &str,
        stream: &str,
        message: &JsonRpcMessage,
    ) -> Result<u64, EventStoreError> {
        let size = message.to_string().len();
        if size > self.max_event_bytes {
            return Err(EventStoreError::TooLarge {
                bytes: size,
                limit: self.max_event_bytes,
            });
        }
        let mut guard = self.locked()?;
        let logs = &mut *guard;
        let now = Instant::now();
        let key = (session.to_owned(), stream.to_owned());
        if !logs.streams.contains_key(&key) {
            let retention = self.retention;
            let expired: Vec<(String, String)> = logs
                .streams
                .iter()
                .filter(|(_, log)| log.finished_at.is_some_and(|at| now - at >= retention))
                .map(|(key, _)| key.clone())
                .collect();
            for key in &expired {
                logs.remove(key);
            }
            // The session's own oldest stream makes room first (ended ones before running).
            let own = logs.streams.keys().filter(|(s, _)| s == session).count();
            if own >= self.max_per_session
                && let Some(victim) = logs.oldest(&key, |(s, _)| s == session)
            {
                logs.remove(&victim);
            }
            if logs.streams.len() >= self.max_streams {
                match logs.oldest(&key, |_| true) {
                    Some(victim) => logs.remove(&victim),
                    None => {
                        return Err(EventStoreError::Full {
                            limit: self.max_streams,
                        });
                    }
                }
            }
            logs.streams.insert(
                key.clone(),
                Log {
                    events: VecDeque::new(),
                    bytes: 0,
                    last: 0,
                    finished_at: None,
                    created: now,
                    changed: watch::Sender::new(0),
                },
            );
        }
        // Room in the store's byte budget: other streams go first, oldest first.
        while logs.bytes + size > self.max_bytes {
            match logs.oldest(&key, |_| true) {
                Some(victim) => logs.remove(&victim),
                None => break,
            }
        }
        let max_stream_bytes = self.max_stream_bytes.min(self.max_bytes);
        let log = logs.streams.get_mut(&key).ok_or(EventStoreError::Gone)?;
        log.last += 1;
        log.events.push_back((log.last, message.clone(), size));
        log.bytes += size;
        let mut freed = 0;
        while log.events.len() > self.max_events
            || (log.bytes > max_stream_bytes && log.events.len() > 1)
        {
            if let Some((_, _, dropped)) = log.events.pop_front() {
                log.bytes -= dropped;
                freed += dropped;
            }
        }
        log.changed.send_replace(log.last);
        let last = log.last;
        logs.bytes = logs.bytes + size - freed;
        Ok(last)
    }

    /// The events after `after` now, or a receiver to wait on when there are none yet.
    fn read_now(
        &self,
        session: &str,
        stream: &str,
        after: u64,
    ) -> Result<Result<Replay, watch::Receiver<u64>>, EventStoreError> {
        let logs = self.locked()?;
        let log = logs
            .streams
            .get(&(session.to_owned(), stream.to_owned()))
            .ok_or(EventStoreError::Gone)?;
        let oldest = log.events.front().map_or(log.last + 1, |(n, _, _)| *n);
        if after > log.last || after + 1 < oldest {
            return Err(EventStoreError::Gone);
        }
        let finished = log.finished_at.is_some();
        if after == log.last && !finished {
            return Ok(Err(log.changed.subscribe()));
        }
        let events = log
            .events
            .iter()
            .filter(|(n, _, _)| *n > after)
            .map(|(n, message, _)| (*n, message.clone()))
            .collect();
        Ok(Ok(Replay { events, finished }))
    }
}

impl EventStore for MemoryEventStore {
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        message: &'a JsonRpcMessage,
    ) -> BoxFuture<'a, Result<u64, EventStoreError>> {
        Box::pin(async move { self.append_now(session, stream, message) })
    }

    fn finish<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
    ) -> BoxFuture<'a, Result<(), EventStoreError>> {
        Box::pin(async move {
            let mut logs = self.locked()?;
            if let Some(log) = logs
                .streams
                .get_mut(&(session.to_owned(), stream.to_owned()))
            {
                log.finished_at = Some(Instant::now());
                let last = log.last;
                log.changed.send_replace(last);
            }
            Ok(())
        })
    }

    fn read_after<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
        wait: Duration,
    ) -> BoxFuture<'a, Result<Replay, EventStoreError>> {
        Box::pin(async move {
            let mut changed = match self.read_now(session, stream, after)? {
                Ok(replay) => return Ok(replay),
                Err(changed) => changed,
            };
            // A change (or the deadline) and one more look; the receiver saw `after` already.
            let _ = tokio::time::timeout(wait, changed.changed()).await;
            match self.read_now(session, stream, after)? {
                Ok(replay) => Ok(replay),
                Err(_) => Ok(Replay {
                    events: Vec::new(),
                    finished: false,
                }),
            }
        })
    }

    fn expire<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), EventStoreError>> {
        Box::pin(async move {
            let mut logs = self.locked()?;
            let own: Vec<(String, String)> = logs
                .streams
                .keys()
                .filter(|(s, _)| s == session)
                .cloned()
                .collect();
            for key in &own {
                logs.remove(key);
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_types::JsonRpcNotification;

    fn note(n: u64) -> JsonRpcMessage {
        JsonRpcMessage::Notification(
            JsonRpcNotification::new(
                "notifications/progress",
                &serde_json::json!({"progress": n}),
            )
            .unwrap(),
        )
    }

    /// The events as `(number, wire text)`.
    fn wire(events: &[(u64, JsonRpcMessage)]) -> Vec<(u64, String)> {
        events.iter().map(|(n, m)| (*n, m.to_string())).collect()
    }

    fn notes(numbers: &[u64]) -> Vec<(u64, String)> {
        numbers.iter().map(|n| (*n, note(*n).to_string())).collect()
    }

    fn gone(result: Result<Replay, EventStoreError>) -> bool {
        matches!(result, Err(EventStoreError::Gone))
    }

    #[tokio::test]
    async fn events_replay_after_an_id_and_the_end_is_reported() {
        let store = MemoryEventStore::new();
        for n in 1..=3 {
            assert_eq!(store.append("s", "p1", &note(n)).await.unwrap(), n);
        }
        let replay = store
            .read_after("s", "p1", 1, Duration::ZERO)
            .await
            .unwrap();
        assert_eq!(wire(&replay.events), notes(&[2, 3]));
        assert!(!replay.finished);
        store.finish("s", "p1").await.unwrap();
        let replay = store
            .read_after("s", "p1", 3, Duration::from_secs(60))
            .await
            .unwrap();
        assert!(replay.events.is_empty() && replay.finished);
        // Another session's stream of the same id is not this one.
        assert!(gone(store.read_after("t", "p1", 0, Duration::ZERO).await));
    }

    #[tokio::test]
    async fn a_reader_waiting_at_the_end_wakes_on_the_next_event() {
        let store = std::sync::Arc::new(MemoryEventStore::new());
        store.append("s", "g", &note(1)).await.unwrap();
        let reader = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .read_after("s", "g", 1, Duration::from_secs(600))
                    .await
            })
        };
        tokio::task::yield_now().await;
        store.append("s", "g", &note(2)).await.unwrap();
        let replay = reader.await.unwrap().unwrap();
        assert_eq!(wire(&replay.events), notes(&[2]));
    }

    #[tokio::test]
    async fn the_limits_hold_and_resuming_before_the_kept_history_is_gone() {
        let store = MemoryEventStore::new()
            .max_events_per_stream(2)
            .max_streams(2);
        for n in 1..=4 {
            store.append("s", "p1", &note(n)).await.unwrap();
        }
        assert!(gone(store.read_after("s", "p1", 1, Duration::ZERO).await));
        let kept = store
            .read_after("s", "p1", 2, Duration::ZERO)
            .await
            .unwrap();
        assert_eq!(wire(&kept.events), notes(&[3, 4]));
        // A third stream evicts the oldest: p1, which has not ended, goes only if none has.
        store.append("s", "p2", &note(1)).await.unwrap();
        store.finish("s", "p2").await.unwrap();
        store.append("s", "p3", &note(1)).await.unwrap();
        assert!(gone(store.read_after("s", "p2", 0, Duration::ZERO).await));
        assert!(store.read_after("s", "p1", 2, Duration::ZERO).await.is_ok());
        store.expire("s").await.unwrap();
        assert!(gone(store.read_after("s", "p3", 0, Duration::ZERO).await));
    }

    /// Review W11: one session at its share of streams makes room from its own, so a session
    /// opening stream after stream cannot evict another session's unfinished history.
    #[tokio::test]
    async fn a_session_at_its_share_evicts_its_own_streams_only() {
        let store = MemoryEventStore::new()
            .max_streams(4)
            .max_streams_per_session(2);
        store.append("victim", "p1", &note(1)).await.unwrap();
        for n in 1..=10 {
            store
                .append("flooder", &format!("p{n}"), &note(n))
                .await
                .unwrap();
        }
        assert!(
            store
                .read_after("victim", "p1", 0, Duration::ZERO)
                .await
                .is_ok()
        );
        assert!(gone(
            store.read_after("flooder", "p8", 0, Duration::ZERO).await
        ));
        for n in [9, 10] {
            let kept = store
                .read_after("flooder", &format!("p{n}"), 0, Duration::ZERO)
                .await
                .unwrap();
            assert_eq!(wire(&kept.events), vec![(1, note(n).to_string())]);
        }
    }
    /// A progress note with `pad` bytes of padding, to measure the byte limits by.
    fn padded(n: u64, pad: usize) -> JsonRpcMessage {
        JsonRpcMessage::Notification(
            JsonRpcNotification::new(
                "notifications/progress",
                &serde_json::json!({"progress": n, "message": "x".repeat(pad)}),
            )
            .unwrap(),
        )
    }

    /// Review W11 (memory): the store is bounded in bytes, not only in counts. An event over
    /// the per-event limit is refused and not recorded; a stream past its byte budget drops
    /// its own oldest events; past the store's budget the oldest other streams go, ended
    /// ones first. Before, 10,000 streams of 1,000 events of any size were kept.
    #[tokio::test]
    async fn the_byte_limits_hold() {
        let size = padded(1, 1000).to_string().len();
        let store = MemoryEventStore::new()
            .max_event_bytes(2 * size)
            .max_stream_bytes(3 * size)
            .max_bytes(5 * size);
        let refused = store.append("s", "p1", &padded(1, 5000)).await;
        assert_eq!(
            refused,
            Err(EventStoreError::TooLarge {
                bytes: padded(1, 5000).to_string().len(),
                limit: 2 * size
            })
        );
        assert!(gone(store.read_after("s", "p1", 0, Duration::ZERO).await));

        for n in 1..=5 {
            assert_eq!(store.append("s", "p1", &padded(n, 1000)).await, Ok(n));
        }
        assert!(gone(store.read_after("s", "p1", 1, Duration::ZERO).await));
        let kept = store
            .read_after("s", "p1", 2, Duration::ZERO)
            .await
            .unwrap();
        assert_eq!(
            kept.events.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            [3, 4, 5]
        );

        // p1 holds 3 events' worth; p2 (ended) 1; p3 needs 2 more: p2 goes, then p1.
        store.append("s", "p2", &padded(1, 1000)).await.unwrap();
        store.finish("s", "p2").await.unwrap();
        store.append("t", "p3", &padded(1, 1000)).await.unwrap();
        assert!(store.read_after("s", "p1", 2, Duration::ZERO).await.is_ok());
        store.append("t", "p3", &padded(2, 1000)).await.unwrap();
        assert!(gone(store.read_after("s", "p2", 0, Duration::ZERO).await));
        assert!(store.read_after("s", "p1", 2, Duration::ZERO).await.is_ok());
        store.append("t", "p3", &padded(3, 1000)).await.unwrap();
        assert!(gone(store.read_after("s", "p1", 2, Duration::ZERO).await));
        let p3 = store
            .read_after("t", "p3", 0, Duration::ZERO)
            .await
            .unwrap();
        assert_eq!(p3.events.len(), 3);
        assert_eq!(store.locked().unwrap().bytes, 3 * size);
    }
}
