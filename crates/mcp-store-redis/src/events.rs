//! SSE event history on Redis: a capped list per stream, its event counter, an "ended" flag,
//! and an index of the session's streams by creation time, every key with the retention as
//! TTL. A session keeps at most [`RedisConfig::max_streams_per_session`] streams, a stream at
//! most [`RedisConfig::max_events_per_stream`] events, and an event at most
//! [`RedisConfig::max_event_bytes`] (review W11: before, a session's streams were unbounded).
//!
//! A reader waiting at the end of a stream is woken by an append or an end in this process
//! (legacy sessions are sticky, so the request that writes a stream runs where its client
//! resumes it), and otherwise looks again every second, for a writer in another process.
//!
//! [`RedisConfig::max_streams_per_session`]: crate::RedisConfig::max_streams_per_session
//! [`RedisConfig::max_events_per_stream`]: crate::RedisConfig::max_events_per_stream
//! [`RedisConfig::max_event_bytes`]: crate::RedisConfig::max_event_bytes

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_server_core::events::{BoxFuture, EventStore, EventStoreError, Replay};
use mcp_types::JsonRpcMessage;
use tokio::sync::watch;

use crate::{Feeds, Shared};

/// How often a reader waiting at the end of a stream looks again when nothing in this process
/// woke it (a writer in another process). It was every 100 ms, for every waiting reader.
const LOOK_AGAIN: Duration = Duration::from_secs(1);

/// Past this many wake-up feeds, the ones nobody waits on are dropped.
const FEEDS_TIDY_AT: usize = 1024;

/// KEYS[1] the stream's list, KEYS[2] its counter, KEYS[3] the session's index of streams;
/// ARGV[1] the event, ARGV[2] the most events per stream, ARGV[3] the retention (ms), ARGV[4]
/// the stream, ARGV[5] the most streams per session, ARGV[6] now (ms), ARGV[7..9] the
/// prefixes of the session's list, counter and "ended" keys (a stream's name follows).
/// A new stream at the session's cap first forgets streams that expired, then evicts the
/// oldest ended stream, else the oldest stream. Answers the event's number.
///
/// The evicted stream's keys are named in the script, not in KEYS: fine on a single Redis
/// (or a replicated one), not on Redis Cluster (as for the seen-store).
const APPEND: &str = r"
if redis.call('EXISTS', KEYS[2]) == 0 then
  local streams = redis.call('ZRANGE', KEYS[3], 0, -1)
  if #streams >= tonumber(ARGV[5]) then
    for _, s in ipairs(streams) do
      if redis.call('EXISTS', ARGV[8] .. s) == 0 then
        redis.call('ZREM', KEYS[3], s)
      end
    end
    local live = redis.call('ZRANGE', KEYS[3], 0, -1)
    if #live >= tonumber(ARGV[5]) then
      local victim = live[1]
      for _, s in ipairs(live) do
        if redis.call('EXISTS', ARGV[9] .. s) == 1 then
          victim = s
          break
        end
      end
      redis.call('DEL', ARGV[7] .. victim, ARGV[8] .. victim, ARGV[9] .. victim)
      redis.call('ZREM', KEYS[3], victim)
    end
  end
  redis.call('ZADD', KEYS[3], ARGV[6], ARGV[4])
end
local n = redis.call('INCR', KEYS[2])
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
return n
";

const READ: &str = r"
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
if last == 0 then return {-1, 0, {}} end
local finished = redis.call('EXISTS', KEYS[3])
local len = redis.call('LLEN', KEYS[1])
local after = tonumber(ARGV[1])
local oldest = last - len + 1
if after > last or after + 1 < oldest then return {-1, 0, {}} end
return {last, finished, redis.call('LRANGE', KEYS[1], after - oldest + 1, -1)}
";

const FINISH: &str = r"
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
redis.call('SET', KEYS[3], 1, 'PX', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
";

/// [`EventStore`] on Redis: a stream's history outlives the connection (and the process)
/// that wrote it, for the retention configured, within the caps described in the module docs.
#[derive(Clone)]
pub struct RedisEventStore {
    shared: Arc<Shared>,
    append: Arc<redis::Script>,
    read: Arc<redis::Script>,
    finish: Arc<redis::Script>,
    feeds: Arc<Feeds>,
}

impl fmt::Debug for RedisEventStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisEventStore")
            .field("prefix", &self.shared.config.prefix)
            .finish()
    }
}

fn unavailable(e: String) -> EventStoreError {
    EventStoreError::Unavailable(e)
}

impl RedisEventStore {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        RedisEventStore {
            feeds: shared.sse_feeds.clone(),
            shared,
            append: Arc::new(redis::Script::new(APPEND)),
            read: Arc::new(redis::Script::new(READ)),
            finish: Arc::new(redis::Script::new(FINISH)),
        }
    }

    /// The list, counter and "ended" keys of one stream.
    fn keys(&self, session: &str, stream: &str) -> [String; 3] {
        [
            self.shared.key(&["ev", session, stream]),
            self.shared.key(&["evn", session, stream]),
            self.shared.key(&["evf", session, stream]),
        ]
    }

    fn retention_ms(&self) -> u64 {
        self.shared.config.event_retention.as_millis().max(1) as u64
    }

    /// A feed that changes when this process appends to or ends the stream.
    fn subscribe(&self, session: &str, stream: &str) -> Option<watch::Receiver<u64>> {
        let mut feeds = self.feeds.lock().ok()?;
        if feeds.len() >= FEEDS_TIDY_AT {
            feeds.retain(|_, feed| feed.receiver_count() > 0);
        }
        Some(
            feeds
                .entry((session.to_owned(), stream.to_owned()))
                .or_insert_with(|| watch::Sender::new(0))
                .subscribe(),
        )
    }

    /// Wakes this process's readers of the stream, and forgets the feed once nobody waits.
    fn wake(&self, session: &str, stream: &str) {
        let Ok(mut feeds) = self.feeds.lock() else {
            return;
        };
        let key = (session.to_owned(), stream.to_owned());
        if let Some(feed) = feeds.get(&key) {
            feed.send_modify(|n| *n += 1);
            if feed.receiver_count() == 0 {
                feeds.remove(&key);
            }
        }
    }

    async fn read_once(
        &self,
        session: &str,
        stream: &str,
        after: u64,
    ) -> Result<Replay, EventStoreError> {
        let [list, count, ended] = self.keys(session, stream);
        let mut invocation = self.read.key(list);
        invocation.key(count).key(ended).arg(after);
        let (last, finished, texts): (i64, i64, Vec<String>) = self
            .shared
            .script("read of SSE history", &invocation)
            .await
            .map_err(unavailable)?;
        if last < 0 {
            return Err(EventStoreError::Gone);
        }
        let mut events = Vec::with_capacity(texts.len());
        for (i, text) in texts.iter().enumerate() {
            let message = JsonRpcMessage::from_str(text).map_err(|e| {
                EventStoreError::Unavailable(format!("a stored SSE event does not parse: {e:?}"))
            })?;
            events.push((after + 1 + i as u64, message));
        }
        Ok(Replay {
            events,
            finished: finished == 1,
        })
    }
}

impl EventStore for RedisEventStore {
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        message: &'a JsonRpcMessage,
    ) -> BoxFuture<'a, Result<u64, EventStoreError>> {
        Box::pin(async move {
            let text = message.to_string();
            let limit = self.shared.config.max_event_bytes;
            if text.len() > limit {
                return Err(EventStoreError::TooLarge {
                    bytes: text.len(),
                    limit,
                });
            }
            let [list, count, _] = self.keys(session, stream);
            let mut invocation = self.append.key(list);
            invocation
                .key(count)
                .key(self.shared.key(&["evs", session]))
                .arg(text)
                .arg(self.shared.config.max_events_per_stream)
                .arg(self.retention_ms())
                .arg(stream)
                .arg(self.shared.config.max_streams_per_session)
                .arg(mcp_server_core::tasks::system_now_ms())
                .arg(self.shared.key(&["ev", session, ""]))
                .arg(self.shared.key(&["evn", session, ""]))
                .arg(self.shared.key(&["evf", session, ""]));
            let n: u64 = self
                .shared
                .script("append to SSE history", &invocation)
                .await
                .map_err(unavailable)?;
            self.wake(session, stream);
            Ok(n)
        })
    }

    fn finish<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
    ) -> BoxFuture<'a, Result<(), EventStoreError>> {
        Box::pin(async move {
            let [list, count, ended] = self.keys(session, stream);
            let mut invocation = self.finish.key(list);
            invocation.key(count).key(ended).arg(self.retention_ms());
            let _: i64 = self
                .shared
                .script("end of an SSE stream", &invocation)
                .await
                .map_err(unavailable)?;
            self.wake(session, stream);
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
            let deadline = tokio::time::Instant::now() + wait;
            // Subscribed before the first read, so an append in between is not missed.
            let mut feed = self.subscribe(session, stream);
            loop {
                let replay = self.read_once(session, stream, after).await?;
                let now = tokio::time::Instant::now();
                if !replay.events.is_empty() || replay.finished || now >= deadline {
                    return Ok(replay);
                }
                let pause = LOOK_AGAIN.min(deadline - now);
                match feed.as_mut() {
                    Some(rx) => {
                        if let Ok(Err(_)) = tokio::time::timeout(pause, rx.changed()).await {
                            feed = None;
                        }
                    }
                    None => tokio::time::sleep(pause).await,
                }
            }
        })
    }

    fn expire<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), EventStoreError>> {
        Box::pin(async move {
            let index = self.shared.key(&["evs", session]);
            let streams: Vec<String> = self
                .shared
                .run(
                    "ZRANGE (SSE history)",
                    redis::cmd("ZRANGE").arg(&index).arg(0).arg(-1),
                )
                .await
                .map_err(unavailable)?;
            let mut del = redis::cmd("DEL");
            del.arg(&index);
            for stream in &streams {
                for key in self.keys(session, stream) {
                    del.arg(key);
                }
            }
            let _: i64 = self
                .shared
                .run("DEL (SSE history)", &del)
                .await
                .map_err(unavailable)?;
            Ok(())
        })
    }
}
