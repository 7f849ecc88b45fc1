//! Per-principal rate limits: token buckets in a [`RateStore`].

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use super::layers::human;
use super::{Call, Layer, Next, Reply, codes, refusal};
use crate::futures::BoxFuture;

/// How many calls, per how long: a bucket of `count` tokens that refills at `count` per
/// `per`, so a caller may spend the whole bucket at once (a burst) and then one call every
/// `per / count`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    count: u32,
    per: Duration,
}

impl Rate {
    /// `count` calls per `per` (at least one call, per at least a millisecond).
    pub fn new(count: u32, per: Duration) -> Self {
        Rate {
            count: count.max(1),
            per: per.max(Duration::from_millis(1)),
        }
    }

    /// The bucket's size.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The time the whole bucket takes to refill.
    pub fn per(&self) -> Duration {
        self.per
    }

    fn tokens_per_second(&self) -> f64 {
        f64::from(self.count) / self.per.as_secs_f64()
    }
}

/// Whether a call may go ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// It may; a token was taken.
    Allowed,
    /// It may not; a token will be there after this long.
    Refused {
        /// When to try again.
        retry_after: Duration,
    },
}

/// Why a rate store could not answer (its backend is away). A rate limit whose store fails
/// refuses the call: a limit that cannot be checked is not waved through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateStoreError(pub String);

impl fmt::Display for RateStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RateStoreError {}

/// Where token buckets live: [`MemoryRates`] in one process, `mcp_store_redis`'s
/// `RedisRates` for a fleet that shares its limits.
pub trait RateStore: Send + Sync + 'static {
    /// Takes a token from the bucket `key` (created full), which refills at `rate`.
    fn take<'a>(
        &'a self,
        key: &'a str,
        rate: Rate,
    ) -> BoxFuture<'a, Result<Admission, RateStoreError>>;
}

/// The arithmetic of a token bucket, shared by every store: `tokens` left at `elapsed`
/// seconds after they were counted, then one taken if there is one. Returns the tokens left
/// and the admission.
pub(super) fn take_token(tokens: f64, elapsed: Duration, rate: Rate) -> (f64, Admission) {
    let per_second = rate.tokens_per_second();
    let now = (tokens + elapsed.as_secs_f64() * per_second).min(f64::from(rate.count));
    if now >= 1.0 {
        (now - 1.0, Admission::Allowed)
    } else {
        let wait = (1.0 - now) / per_second;
        (
            now,
            Admission::Refused {
                retry_after: Duration::from_secs_f64(wait).max(Duration::from_millis(1)),
            },
        )
    }
}

/// How many callers' buckets [`MemoryRates`] holds unless configured.
pub const DEFAULT_MAX_BUCKETS: usize = 100_000;

struct Bucket {
    tokens: f64,
    at: Instant,
    rate: Rate,
}

/// Token buckets in this process's memory, at most [`DEFAULT_MAX_BUCKETS`] (or as
/// configured). When full, buckets that refilled completely (their callers went quiet) are
/// dropped to make room; a new caller that still finds no room is refused, so a flood of
/// principals cannot grow the map.
pub struct MemoryRates {
    buckets: Mutex<HashMap<String, Bucket>>,
    max_buckets: usize,
}

impl fmt::Debug for MemoryRates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryRates")
            .field("max_buckets", &self.max_buckets)
            .finish_non_exhaustive()
    }
}

impl Default for MemoryRates {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryRates {
    /// An empty store holding at most [`DEFAULT_MAX_BUCKETS`] buckets.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_MAX_BUCKETS)
    }

    /// An empty store holding at most `max_buckets` buckets.
    pub fn with_capacity(max_buckets: usize) -> Self {
        MemoryRates {
            buckets: Mutex::new(HashMap::new()),
            max_buckets: max_buckets.max(1),
        }
    }

    pub(super) fn take_now(
        &self,
        key: &str,
        rate: Rate,
        now: Instant,
    ) -> Result<Admission, RateStoreError> {
        let mut buckets = self
            .buckets
            .lock()
            .map_err(|_| RateStoreError("the in-memory rate store is poisoned".into()))?;
        if let Some(bucket) = buckets.get_mut(key) {
            let (tokens, admission) = take_token(bucket.tokens, now - bucket.at, rate);
            *bucket = Bucket {
                tokens,
                at: now,
                rate,
            };
            return Ok(admission);
        }
        if buckets.len() >= self.max_buckets {
            buckets.retain(|_, b| {
                let refilled = b.tokens + (now - b.at).as_secs_f64() * b.rate.tokens_per_second();
                refilled < f64::from(b.rate.count)
            });
            if buckets.len() >= self.max_buckets {
                return Err(RateStoreError(format!(
                    "the in-memory rate store holds its {} buckets, all in use",
                    self.max_buckets
                )));
            }
        }
        let (tokens, admission) = take_token(f64::from(rate.count), Duration::ZERO, rate);
        buckets.insert(
            key.to_owned(),
            Bucket {
                tokens,
                at: now,
                rate,
            },
        );
        Ok(admission)
    }
}

impl RateStore for MemoryRates {
    fn take<'a>(
        &'a self,
        key: &'a str,
        rate: Rate,
    ) -> BoxFuture<'a, Result<Admission, RateStoreError>> {
        let result = self.take_now(key, rate, Instant::now());
        Box::pin(std::future::ready(result))
    }
}

type KeyFn = dyn Fn(&Call<'_>) -> String + Send + Sync;

/// A rate limit per caller: each caller has a bucket of its own under this limit's name, so
/// one user's burst does not spend another's. A call beyond it is refused with `-32029`,
/// `data.limit = "rate"` and `data.retryAfterMs`.
///
/// Who a caller is (security review X4):
/// - with a token naming a subject: that user, by issuer and subject, whichever OAuth client
///   it came through (a user who registers more clients does not get more calls;
///   [`per_client`](Self::per_client) counts each client of a user apart instead);
/// - with a token and no subject: its client, by issuer and client id;
/// - without a token: its address ([`Call::peer`], grouped by [`client_group`]: an IPv6
///   client by its /64), so that one anonymous client cannot spend everybody's calls. Behind
///   a proxy, name the proxy as trusted in the transport (the HTTP transport's
///   `trusted_proxies`), or every user is the proxy's one address;
/// - without a token or an address (stdio: one client per process): one bucket,
///   `anonymous`.
///
/// [`keyed_by`](Self::keyed_by) chooses another key. Buckets live in a [`MemoryRates`] of
/// this limit unless [`store`](Self::store) names a shared one: with
/// `mcp_store_redis::RedisRates`, every instance of a fleet spends from the same buckets.
///
/// [`client_group`]: crate::client_group
#[derive(Clone)]
pub struct RateLimit {
    name: String,
    rate: Rate,
    store: Arc<dyn RateStore>,
    key: Option<Arc<KeyFn>>,
    per_client: bool,
}

impl fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimit")
            .field("name", &self.name)
            .field("rate", &self.rate)
            .finish_non_exhaustive()
    }
}

impl RateLimit {
    /// A limit named `name` (the buckets' key prefix: limits with one name in one store share
    /// their buckets) of `rate` per principal.
    pub fn per_principal(name: impl Into<String>, rate: Rate) -> Self {
        RateLimit {
            name: name.into(),
            rate,
            store: Arc::new(MemoryRates::new()),
            key: None,
            per_client: false,
        }
    }

    /// Keeps the buckets in `store`.
    #[must_use]
    pub fn store(mut self, store: impl RateStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// Keeps the buckets in a store shared with other limits.
    #[must_use]
    pub fn shared_store(mut self, store: Arc<dyn RateStore>) -> Self {
        self.store = store;
        self
    }

    /// Tells callers apart by `key` instead of their principal.
    #[must_use]
    pub fn keyed_by<F>(mut self, key: F) -> Self
    where
        F: Fn(&Call<'_>) -> String + Send + Sync + 'static,
    {
        self.key = Some(Arc::new(key));
        self
    }

    /// Counts each OAuth client of a user apart: a user's calls through two clients spend two
    /// buckets. The default counts the user (issuer and subject) once.
    #[must_use]
    pub fn per_client(mut self) -> Self {
        self.per_client = true;
        self
    }

    fn bucket(&self, call: &Call<'_>) -> String {
        // JSON arrays: no caller's parts can be arranged to read as another's.
        let caller = match (&self.key, call.principal()) {
            (Some(key), _) => key(call),
            (None, Some(p)) if self.per_client => {
                json!(["client", p.issuer, p.subject, p.client_id]).to_string()
            }
            (None, Some(p)) => match &p.subject {
                Some(subject) => json!(["user", p.issuer, subject]).to_string(),
                None => json!(["client", p.issuer, p.client_id]).to_string(),
            },
            (None, None) => match call.peer() {
                Some(peer) => json!(["address", crate::client_group(peer)]).to_string(),
                None => "anonymous".to_owned(),
            },
        };
        format!("{}:{caller}", self.name)
    }
}

impl Layer for RateLimit {
    fn call<'a>(&'a self, call: &'a Call<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let bucket = self.bucket(call);
            match self.store.take(&bucket, self.rate).await {
                Ok(Admission::Allowed) => next.run().await,
                Ok(Admission::Refused { retry_after }) => {
                    #[cfg(feature = "otel")]
                    crate::otel::count_refusal("rate");
                    let ms = u64::try_from(retry_after.as_millis())
                        .unwrap_or(u64::MAX)
                        .max(1);
                    Err(refusal(
                        codes::TOO_MANY_REQUESTS,
                        format!(
                            "rate limit '{}' allows {} calls per {}; try again in {}",
                            self.name,
                            self.rate.count,
                            human(self.rate.per),
                            human(Duration::from_millis(ms))
                        ),
                        json!({ "limit": "rate", "retryAfterMs": ms }),
                    ))
                }
                Err(e) => {
                    tracing::warn!(limit = %self.name, error = %e, "a rate limit could not be checked; the call is refused");
                    Err(refusal(
                        codes::TOO_MANY_REQUESTS,
                        format!(
                            "rate limit '{}' could not be checked (its store did not answer); try again shortly",
                            self.name
                        ),
                        json!({ "limit": "rate" }),
                    ))
                }
            }
        })
    }
}
