//! The fleet's shared 2025-11-25 sessions and its bus on Redis.
//!
//! A session record is one string key, `{prefix}:session:{id}`, whose TTL is the session's
//! idle timeout, pushed back by every read (`GETEX … PX`). The bus is Redis pub/sub on
//! `{prefix}:bus:{channel}`: a publish reports how many instances listened, and each listener
//! holds its own connection, reconnected after a pause when Redis goes away (what was
//! published meanwhile is lost to it, as pub/sub promises no more).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_server_core::BoxFuture;
use mcp_server_core::fleet::{Bus, FleetError, ListenerQueue, Offered, SessionStore};
use tokio::sync::mpsc;

use crate::Shared;

/// How long a bus listener waits before it reconnects to Redis.
const RECONNECT_PAUSE: Duration = Duration::from_millis(250);

/// The sessions of a fleet on Redis ([`SessionStore`]).
#[derive(Clone)]
pub struct RedisSessionStore {
    shared: Arc<Shared>,
}

impl fmt::Debug for RedisSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisSessionStore")
            .field("prefix", &self.shared.config.prefix)
            .finish()
    }
}

impl RedisSessionStore {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        RedisSessionStore { shared }
    }

    fn key(&self, id: &str) -> String {
        self.shared.key(&["session", id])
    }

    /// The marker [`SessionStore::end`] leaves beside an ended session's tombstone.
    fn ended_key(&self, id: &str) -> String {
        self.shared.key(&["session-ended", id])
    }
}

/// Stores a record (KEYS[1], ARGV[1], PX ARGV[2]) unless the session ended (KEYS[2] exists):
/// a write in flight when another instance deleted the session does not revive it.
const PUT_LIVE: &str = r"
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
";

/// Ends a session: its tombstone (KEYS[1], ARGV[1]) and the marker (KEYS[2]) that keeps
/// [`PUT_LIVE`] from overwriting it, both for ARGV[2] ms.
const END: &str = r"
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
return 1
";

/// A TTL in whole milliseconds, at least one (Redis refuses `PX 0`).
fn millis(idle: Duration) -> u64 {
    u64::try_from(idle.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl SessionStore for RedisSessionStore {
    fn put<'a>(
        &'a self,
        id: &'a str,
        record: &'a [u8],
        idle: Duration,
    ) -> BoxFuture<'a, Result<(), FleetError>> {
        Box::pin(async move {
            let script = redis::Script::new(PUT_LIVE);
            let mut invocation = script.key(self.key(id));
            invocation
                .key(self.ended_key(id))
                .arg(record)
                .arg(millis(idle));
            self.shared
                .script::<i64>("SET of a session", &invocation)
                .await
                .map(drop)
                .map_err(FleetError)
        })
    }

    fn end<'a>(
        &'a self,
        id: &'a str,
        tombstone: &'a [u8],
        keep: Duration,
    ) -> BoxFuture<'a, Result<(), FleetError>> {
        Box::pin(async move {
            let script = redis::Script::new(END);
            let mut invocation = script.key(self.key(id));
            invocation
                .key(self.ended_key(id))
                .arg(tombstone)
                .arg(millis(keep));
            self.shared
                .script::<i64>("SET of a session's tombstone", &invocation)
                .await
                .map(drop)
                .map_err(FleetError)
        })
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        idle: Duration,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, FleetError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("GETEX");
            cmd.arg(self.key(id)).arg("PX").arg(millis(idle));
            self.shared
                .run::<Option<Vec<u8>>>("GETEX of a session", &cmd)
                .await
                .map_err(FleetError)
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, FleetError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("DEL");
            cmd.arg(self.key(id));
            self.shared
                .run::<u64>("DEL of a session", &cmd)
                .await
                .map(|n| n > 0)
                .map_err(FleetError)
        })
    }
}

/// The fleet's bus on Redis pub/sub ([`Bus`]).
#[derive(Clone)]
pub struct RedisBus {
    shared: Arc<Shared>,
}

impl fmt::Debug for RedisBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBus")
            .field("prefix", &self.shared.config.prefix)
            .finish()
    }
}

impl RedisBus {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        RedisBus { shared }
    }

    fn channel(&self, channel: &str) -> String {
        self.shared.key(&["bus", channel])
    }
}

/// Publishes ARGV[1] on channel KEYS[1] and answers how many listen on that channel itself
/// (`PUBSUB NUMSUB`). `PUBLISH`'s own count includes pattern subscribers: with a monitoring
/// `PSUBSCRIBE prefix:bus:*` a dead member's channel would look alive, its answers would get
/// 202 and vanish, and resumptions would follow it instead of getting 410 (security review
/// X2).
const PUBLISH_HEARD: &str = r"
redis.call('PUBLISH', KEYS[1], ARGV[1])
return redis.call('PUBSUB', 'NUMSUB', KEYS[1])[2]
";

impl Bus for RedisBus {
    fn publish<'a>(
        &'a self,
        channel: &'a str,
        payload: &'a [u8],
    ) -> BoxFuture<'a, Result<usize, FleetError>> {
        Box::pin(async move {
            let script = redis::Script::new(PUBLISH_HEARD);
            let mut invocation = script.key(self.channel(channel));
            invocation.arg(payload);
            self.shared
                .script::<usize>("PUBLISH", &invocation)
                .await
                .map_err(FleetError)
        })
    }

    fn listen(&self, channel: &str) -> mpsc::Receiver<Vec<u8>> {
        let (mut queue, rx) = ListenerQueue::new();
        let client = self.shared.client.clone();
        let channel = self.channel(channel);
        let timeout = self.shared.config.command_timeout;
        tokio::spawn(async move {
            loop {
                match crate::tasks::subscribe(&client, &channel, timeout).await {
                    Ok(pubsub) => {
                        use futures_util::StreamExt;
                        let mut pubsub = pubsub;
                        let mut messages = pubsub.on_message();
                        loop {
                            let message = tokio::select! {
                                () = queue.closed() => return,
                                message = messages.next() => message,
                            };
                            let Some(message) = message else {
                                break;
                            };
                            let Ok(payload) = message.get_payload::<Vec<u8>>() else {
                                continue;
                            };
                            if queue.offer(&channel, payload) == Offered::Closed {
                                return;
                            }
                        }
                        tracing::warn!(%channel, "the bus lost its Redis connection; reconnecting");
                    }
                    Err(e) => tracing::warn!(%channel, error = %e, "the bus cannot listen"),
                }
                tokio::select! {
                    () = queue.closed() => return,
                    () = tokio::time::sleep(RECONNECT_PAUSE) => {}
                }
            }
        });
        rx
    }
}
