//! SSE event history on Redis: a capped list per stream, its event counter, an "ended" flag,
//! and a set of the session's streams, every key with the retention as TTL.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_server_core::events::{EventFuture, EventStore, EventStoreError, Replay};
use mcp_types::JsonRpcMessage;

use crate::Shared;

/// How often a reader waiting at the end of a stream looks again.
const POLL: Duration = Duration::from_millis(100);

const APPEND: &str = r"
local n = redis.call('INCR', KEYS[2])
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('SADD', KEYS[3], ARGV[4])
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
/// that wrote it, for the retention configured.
#[derive(Clone)]
pub struct RedisEventStore {
    shared: Arc<Shared>,
    append: Arc<redis::Script>,
    read: Arc<redis::Script>,
    finish: Arc<redis::Script>,
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
    ) -> EventFuture<'a, u64> {
        Box::pin(async move {
            let [list, count, _] = self.keys(session, stream);
            let mut invocation = self.append.key(list);
            invocation
                .key(count)
                .key(self.shared.key(&["evs", session]))
                .arg(message.to_string())
                .arg(self.shared.config.max_events_per_stream)
                .arg(self.retention_ms())
                .arg(stream);
            let n: u64 = self
                .shared
                .script("append to SSE history", &invocation)
                .await
                .map_err(unavailable)?;
            Ok(n)
        })
    }

    fn finish<'a>(&'a self, session: &'a str, stream: &'a str) -> EventFuture<'a, ()> {
        Box::pin(async move {
            let [list, count, ended] = self.keys(session, stream);
            let mut invocation = self.finish.key(list);
            invocation.key(count).key(ended).arg(self.retention_ms());
            let _: i64 = self
                .shared
                .script("end of an SSE stream", &invocation)
                .await
                .map_err(unavailable)?;
            Ok(())
        })
    }

    fn read_after<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
        wait: Duration,
    ) -> EventFuture<'a, Replay> {
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + wait;
            loop {
                let replay = self.read_once(session, stream, after).await?;
                let now = tokio::time::Instant::now();
                if !replay.events.is_empty() || replay.finished || now >= deadline {
                    return Ok(replay);
                }
                tokio::time::sleep(POLL.min(deadline - now)).await;
            }
        })
    }

    fn expire<'a>(&'a self, session: &'a str) -> EventFuture<'a, ()> {
        Box::pin(async move {
            let index = self.shared.key(&["evs", session]);
            let streams: Vec<String> = self
                .shared
                .run("SMEMBERS (SSE history)", redis::cmd("SMEMBERS").arg(&index))
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
