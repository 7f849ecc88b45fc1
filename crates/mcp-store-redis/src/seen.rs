//! The replay guard's seen-store on Redis, fail closed.
//!
//! A state's key `{prefix}:seen:{jti}` (expiring with the state) holds `c:{owner}` while the
//! instance `owner` processes the request, and `d` once it finished. Every instance keeps its
//! liveness key `{prefix}:alive:{owner}` with a short TTL, refreshed by a heartbeat task this
//! store owns. A second use of a claimed state waits (polling, bounded by
//! [`RedisConfig::takeover_wait`](crate::RedisConfig::takeover_wait)) and takes the claim over
//! in one script only if the owner's liveness key is gone and the claim is still not done: the
//! owner died before answering, and a load balancer re-sent the request. A done state, a
//! state claimed by a live owner, and any state while Redis cannot answer are refused.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_state_seal::{FinishedFuture, SeenFuture, SeenStore};

use crate::Shared;

/// How often a second use of a claimed state asks again while it waits.
const TAKEOVER_POLL: Duration = Duration::from_millis(100);

/// KEYS[1] the state's key, KEYS[2] this instance's liveness key; ARGV[1] this instance's id,
/// ARGV[2] the state's expiry (ms since the epoch), ARGV[3] the liveness TTL (ms), ARGV[4] the
/// prefix of liveness keys. Answers 1 (claimed: use it), 0 (refused: done, or our own claim),
/// 2 (claimed by another instance that is alive: ask again later).
///
/// The owner's liveness key is named from the stored owner, so it is not in KEYS: fine on a
/// single Redis (or a replicated one), not on Redis Cluster.
const CLAIM: &str = r"
redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
local v = redis.call('GET', KEYS[1])
if v == 'd' then return 0 end
if v then
  local owner = string.sub(v, 3)
  if owner == ARGV[1] then return 0 end
  if redis.call('EXISTS', ARGV[4] .. owner) == 1 then return 2 end
end
redis.call('SET', KEYS[1], 'c:' .. ARGV[1], 'PXAT', ARGV[2])
return 1
";

/// Remembers used request-state ids in Redis until each state's own expiry, so a state is
/// accepted once across the whole fleet, except a state whose instance died before it
/// finished (see the module docs): that one may be processed once more, by one other
/// instance. When Redis cannot answer, the state is refused.
///
/// Each value from [`RedisStores::seen_store`](crate::RedisStores::seen_store) is one owner
/// with its own heartbeat (clones share it); dropping the last clone stops the heartbeat, and
/// its liveness key lapses after [`RedisConfig::liveness_ttl`](crate::RedisConfig::liveness_ttl).
#[derive(Clone)]
pub struct RedisSeenStore {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    owner: String,
    claim: redis::Script,
    heartbeat: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Ok(mut heartbeat) = self.heartbeat.lock()
            && let Some(task) = heartbeat.take()
        {
            task.abort();
        }
    }
}

impl fmt::Debug for RedisSeenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisSeenStore")
            .field("prefix", &self.inner.shared.config.prefix)
            .field("owner", &self.inner.owner)
            .finish()
    }
}

/// An instance id unique across the fleet and across restarts (hex): the process id, the
/// clock in nanoseconds, and a hash keyed by the standard library's per-process random keys.
/// It need not be secret: it is only ever stored in Redis.
fn instance_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    format!(
        "{:08x}{nanos:x}{:016x}",
        std::process::id(),
        hasher.finish()
    )
}

impl RedisSeenStore {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        let owner = instance_id();
        let store = RedisSeenStore {
            inner: Arc::new(Inner {
                shared,
                owner,
                claim: redis::Script::new(CLAIM),
                heartbeat: Mutex::new(None),
            }),
        };
        store.ensure_heartbeat();
        store
    }

    /// This instance's id, as its claims record it.
    pub fn owner(&self) -> &str {
        &self.inner.owner
    }

    fn alive_key(&self, owner: &str) -> String {
        self.inner.shared.key(&["alive", owner])
    }

    /// Starts the heartbeat once (on a Tokio runtime): it refreshes this instance's liveness
    /// key every heartbeat interval, each `SET` under a deadline of that interval.
    fn ensure_heartbeat(&self) {
        let Ok(mut heartbeat) = self.inner.heartbeat.lock() else {
            return;
        };
        if heartbeat.as_ref().is_some_and(|task| !task.is_finished()) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let shared = self.inner.shared.clone();
        let key = self.alive_key(&self.inner.owner);
        let ttl_ms = shared.config.liveness_ttl.as_millis().max(1) as u64;
        let every = shared.config.heartbeat_interval;
        *heartbeat = Some(runtime.spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let mut cmd = redis::cmd("SET");
                cmd.arg(&key).arg(1).arg("PX").arg(ttl_ms);
                if let Err(e) = shared.run_within::<()>("SET (liveness)", &cmd, every).await {
                    tracing::warn!(error = %e, "replay guard heartbeat missed");
                }
            }
        }));
    }

    /// One claim attempt: 1 claimed, 0 refused, 2 claimed by a live other instance.
    async fn try_claim(&self, jti: &str, at_ms: u64) -> Result<i64, String> {
        let shared = &self.inner.shared;
        let mut invocation = self.inner.claim.prepare_invoke();
        invocation
            .key(shared.key(&["seen", jti]))
            .key(self.alive_key(&self.inner.owner))
            .arg(&self.inner.owner)
            .arg(at_ms)
            .arg(shared.config.liveness_ttl.as_millis().max(1) as u64)
            .arg(shared.key(&["alive", ""]));
        shared.script("claim (replay guard)", &invocation).await
    }
}

/// A millisecond past the expiry, and never in the past (PXAT then deletes at once).
fn expiry_ms(expires_at: f64) -> u64 {
    let now_ms = mcp_server_core::tasks::system_now_ms();
    ((expires_at * 1000.0).ceil().max(0.0) as u64).max(now_ms + 1000)
}

impl SeenStore for RedisSeenStore {
    fn first_use<'a>(&'a self, jti: &'a str, expires_at: f64) -> SeenFuture<'a> {
        Box::pin(async move {
            self.ensure_heartbeat();
            let at_ms = expiry_ms(expires_at);
            let deadline = Instant::now() + self.inner.shared.config.takeover_wait;
            loop {
                match self.try_claim(jti, at_ms).await {
                    Ok(1) => return true,
                    Ok(2) if Instant::now() < deadline => {
                        tokio::time::sleep(TAKEOVER_POLL).await;
                    }
                    Ok(_) => return false,
                    Err(e) => {
                        tracing::warn!(error = %e, "replay guard refuses a state: Redis did not answer");
                        return false;
                    }
                }
            }
        })
    }

    fn finished<'a>(&'a self, jti: &'a str, expires_at: f64) -> FinishedFuture<'a> {
        Box::pin(async move {
            // Only an existing claim is marked; it keeps its expiry.
            let mut cmd = redis::cmd("SET");
            cmd.arg(self.inner.shared.key(&["seen", jti]))
                .arg("d")
                .arg("XX")
                .arg("PXAT")
                .arg(expiry_ms(expires_at));
            if let Err(e) = self
                .inner
                .shared
                .run::<Option<String>>("SET XX (replay guard done)", &cmd)
                .await
            {
                tracing::warn!(error = %e, "replay guard could not mark a state done: it stays claimed");
            }
        })
    }
}
