//! The replay guard's seen-store on Redis, fail closed.
//!
//! A state's key `{prefix}:seen:{jti}` (expiring with the state) holds `c:{owner}` while the
//! instance `owner` processes the request, and `d` once it finished. Every instance keeps its
//! liveness key `{prefix}:alive:{owner}` with a TTL
//! ([`RedisConfig::liveness_ttl`](crate::RedisConfig::liveness_ttl), 30 s), refreshed by a
//! heartbeat task this store owns (every second). A second use of a claimed state waits
//! (bounded by [`RedisConfig::takeover_wait`](crate::RedisConfig::takeover_wait), 35 s) and
//! takes the claim over in one script only if the owner's liveness key is gone and the claim
//! is still not done: the owner died before answering, and a load balancer re-sent the
//! request. A done state, a state claimed by a live owner, and any state while Redis cannot
//! answer are refused.
//!
//! What this guarantees, and the window in which a state may run twice, is on
//! [`RedisSeenStore`].

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_state_seal::SeenStore;
use mcp_types::BoxFuture;

use crate::Shared;

/// How long a second use of a claimed state first waits before it asks again; the pause
/// doubles up to [`TAKEOVER_POLL_MAX`], so a wait of 35 s costs about 20 script calls.
const TAKEOVER_POLL: Duration = Duration::from_millis(100);
const TAKEOVER_POLL_MAX: Duration = Duration::from_secs(2);

/// How many heartbeat intervals may pass without a successful heartbeat before the instance
/// stops claiming states.
const HEARTBEAT_LATE: u32 = 3;

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
/// finished: that one may be processed once more, by one other instance. When Redis cannot
/// answer, the state is refused.
///
/// **At least once, not exactly once.** A state runs a second time only when the instance
/// that claimed it was silent for the whole liveness TTL
/// ([`RedisConfig::liveness_ttl`](crate::RedisConfig::liveness_ttl), 30 s by default: no
/// heartbeat and no claim of it reached Redis) before its request finished, and another
/// instance then received the same state. That is what a crash looks like, and it is also
/// what an instance cut off from Redis, or stalled, for that long looks like while its request
/// still runs: then the request runs twice. `liveness_ttl` is the setting that bounds it: the
/// longer, the longer a stall must last, and the longer a request re-sent after a crash waits
/// for the takeover ([`takeover_wait`](crate::RedisConfig::takeover_wait), 35 s, must exceed
/// it, or such a request is refused instead). An instance whose latest heartbeat failed, or
/// whose heartbeat has not succeeded for three intervals (every second by default), refuses
/// every state until one succeeds: it never starts work its liveness might not cover.
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
    health: Arc<Mutex<Health>>,
}

/// How this instance's heartbeat fares: claims stop while it fails or is late.
#[derive(Clone, Copy)]
struct Health {
    /// When a heartbeat last succeeded (the store's creation before the first one).
    last_ok: Instant,
    /// Whether the latest heartbeat failed.
    failing: bool,
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
                health: Arc::new(Mutex::new(Health {
                    last_ok: Instant::now(),
                    failing: false,
                })),
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
        let health = self.inner.health.clone();
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
                let outcome = shared.run_within::<()>("SET (liveness)", &cmd, every).await;
                if let Err(e) = &outcome {
                    tracing::warn!(error = %e, "replay guard heartbeat missed: no state is accepted until one succeeds");
                }
                if let Ok(mut health) = health.lock() {
                    health.failing = outcome.is_err();
                    if outcome.is_ok() {
                        health.last_ok = Instant::now();
                    }
                }
            }
        }));
    }

    /// Why this instance must not claim a state now, if it must not: its heartbeat failed, or
    /// has not succeeded for [`HEARTBEAT_LATE`] intervals (Redis or this runtime stalls), so
    /// its liveness key may lapse while it works and another instance may take the state
    /// over (review W12).
    fn unfit_to_claim(&self) -> Option<String> {
        let health = *self.inner.health.lock().ok()?;
        let late = self.inner.shared.config.heartbeat_interval * HEARTBEAT_LATE;
        if health.failing {
            Some("its latest heartbeat failed".into())
        } else if health.last_ok.elapsed() > late {
            Some(format!(
                "no heartbeat succeeded for {:?}",
                health.last_ok.elapsed()
            ))
        } else {
            None
        }
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
    fn first_use<'a>(&'a self, jti: &'a str, expires_at: f64) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            self.first_use_checked(jti, expires_at)
                .await
                .unwrap_or(false)
        })
    }

    fn first_use_checked<'a>(
        &'a self,
        jti: &'a str,
        expires_at: f64,
    ) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            self.ensure_heartbeat();
            if let Some(why) = self.unfit_to_claim() {
                tracing::warn!(
                    why,
                    "replay guard refuses a state: this instance's liveness is in doubt"
                );
                return Err(format!(
                    "this instance's liveness in Redis is in doubt ({why})"
                ));
            }
            let at_ms = expiry_ms(expires_at);
            let deadline = Instant::now() + self.inner.shared.config.takeover_wait;
            let mut pause = TAKEOVER_POLL;
            loop {
                match self.try_claim(jti, at_ms).await {
                    Ok(1) => return Ok(true),
                    Ok(2) if Instant::now() < deadline => {
                        let left = deadline.saturating_duration_since(Instant::now());
                        tokio::time::sleep(pause.min(left)).await;
                        pause = (pause * 2).min(TAKEOVER_POLL_MAX);
                    }
                    Ok(_) => return Ok(false),
                    Err(e) => {
                        tracing::warn!(error = %e, "replay guard refuses a state: Redis did not answer");
                        return Err(e);
                    }
                }
            }
        })
    }

    fn spend<'a>(&'a self, jti: &'a str, expires_at: f64) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            // Done in one write, never a claim: no instance can take it over later, whatever
            // becomes of this one (security review X12).
            let mut cmd = redis::cmd("SET");
            cmd.arg(self.inner.shared.key(&["seen", jti]))
                .arg("d")
                .arg("NX")
                .arg("PXAT")
                .arg(expiry_ms(expires_at));
            match self
                .inner
                .shared
                .run::<Option<String>>("SET NX (single-use handle)", &cmd)
                .await
            {
                Ok(set) => set.is_some(),
                Err(e) => {
                    tracing::warn!(error = %e, "a single-use handle is refused: Redis did not answer");
                    false
                }
            }
        })
    }

    fn finished<'a>(&'a self, jti: &'a str, expires_at: f64) -> BoxFuture<'a, ()> {
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
