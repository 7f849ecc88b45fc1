//! The opt-in replay guard: with it on, every sealed state carries a unique `jti` claim, and a
//! state is accepted once. The seen-store is a trait (async, so it can live in Redis or a
//! database shared by a fleet); [`MemorySeenStore`] is the single-process default.
//!
//! A use is a *claim* by the instance that accepted the state, and becomes *done* when that
//! request's processing finished ([`SeenStore::finished`]). The distinction matters only in a
//! fleet: a store shared by several processes may hand the claim of an instance that died
//! before it finished to another instance (a load balancer re-sending the request), while a
//! done state, or one claimed by a live instance, stays refused.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

/// Remembers which sealed states were already used.
pub trait SeenStore: Send + Sync {
    /// Claims `jti` (valid until `expires_at`, seconds since the Unix epoch) for this process
    /// and answers `true` if the state may be used: it was never seen, or (in a store shared by
    /// a fleet) its claim belongs to an instance that died before it finished. `false` refuses
    /// the state: it is done, or claimed by a live instance (this one included); a store that
    /// cannot answer (full, unreachable) must answer `false` too.
    fn first_use<'a>(
        &'a self,
        jti: &'a str,
        expires_at: f64,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>>;

    /// [`first_use`](Self::first_use), telling a refusal (`Ok(false)`) from a store that could
    /// not answer (`Err`, with what failed, naming the store): the state is refused either
    /// way, but only the second is worth a retry. The default knows no such failure.
    fn first_use_checked<'a>(
        &'a self,
        jti: &'a str,
        expires_at: f64,
    ) -> Pin<Box<dyn Future<Output = Result<bool, String>> + Send + 'a>> {
        Box::pin(async move { Ok(self.first_use(jti, expires_at).await) })
    }

    /// Marks the claim of `jti` done: the request that used it produced its answer (a result
    /// or an error). A done state is never accepted again, whoever asks. The default does
    /// nothing, for a store whose claims never outlive their owner (one process's memory),
    /// where a claim is as final as a done mark. A store that cannot record it logs why; the
    /// claim then stays refused while its owner lives.
    fn finished<'a>(
        &'a self,
        jti: &'a str,
        expires_at: f64,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        let _ = (jti, expires_at);
        Box::pin(async {})
    }

    /// Uses `jti` once and for all, with no claim phase: `true` when it was never seen (it is
    /// now done), `false` otherwise or when the store cannot answer. For a single-use handle
    /// ([`SealingBoundary::open_handle`](crate::SealingBoundary::open_handle)) a claim is
    /// wrong: a handle is a value handed over, not a request another instance may have to
    /// take over, and a claim whose done mark failed to
    /// be written could be taken over after its owner died and the handle opened twice
    /// (security review X12). A store shared by a fleet should make this one atomic write
    /// (Redis: `SET key d NX PXAT`); the default is [`first_use`](Self::first_use) then
    /// [`finished`](Self::finished), right for a store whose claims never outlive their owner.
    fn spend<'a>(
        &'a self,
        jti: &'a str,
        expires_at: f64,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        Box::pin(async move {
            if !self.first_use(jti, expires_at).await {
                return false;
            }
            self.finished(jti, expires_at).await;
            true
        })
    }
}

/// This process's claim on one state, from
/// [`SealingBoundary::unseal_claim`](crate::SealingBoundary::unseal_claim): call
/// [`finish`](Self::finish) once the request that used the state produced its answer. A claim
/// dropped unfinished (the request was cancelled) stays claimed while this process lives.
#[must_use = "a claim is marked done by `finish` once the request produced its answer"]
pub struct UseClaim {
    store: Arc<dyn SeenStore>,
    jti: String,
    expires_at: f64,
}

impl fmt::Debug for UseClaim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UseClaim").finish_non_exhaustive()
    }
}

impl UseClaim {
    pub(crate) fn new(store: Arc<dyn SeenStore>, jti: String, expires_at: f64) -> Self {
        UseClaim {
            store,
            jti,
            expires_at,
        }
    }

    /// Marks the state done in the seen-store ([`SeenStore::finished`]).
    pub async fn finish(self) {
        self.store.finished(&self.jti, self.expires_at).await;
    }
}

/// The most token ids a [`MemorySeenStore`] keeps unless configured.
pub const DEFAULT_SEEN_CAPACITY: usize = 100_000;

/// A seen-store in this process's memory, bounded: expired ids are forgotten, and when the
/// store is full of unexpired ids new states are refused (fail closed) until some expire.
/// In one process a claim cannot outlive its owner, so a claimed id is refused like a done
/// one, and [`finished`](SeenStore::finished) has nothing to record.
///
/// Single-use handles ([`spend`](SeenStore::spend)) have a pool of their own, as large: a
/// handle lives an hour where a `requestState` lives minutes, and a client opening handles
/// must not fill the pool that rounds need, nor rounds the handles' (security review X12).
#[derive(Debug)]
pub struct MemorySeenStore {
    seen: Pool,
    spent: Pool,
}

/// One bounded set of used ids and their expiries.
#[derive(Debug)]
struct Pool {
    ids: Mutex<HashMap<String, f64>>,
    capacity: usize,
}

impl Pool {
    fn new(capacity: usize) -> Self {
        Pool {
            ids: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    fn record(&self, jti: &str, expires_at: f64, now: f64) -> bool {
        let Ok(mut ids) = self.ids.lock() else {
            return false;
        };
        if ids.contains_key(jti) {
            return false;
        }
        if ids.len() >= self.capacity {
            ids.retain(|_, exp| *exp > now);
            if ids.len() >= self.capacity {
                return false;
            }
        }
        ids.insert(jti.to_owned(), expires_at);
        true
    }
}

fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl Default for MemorySeenStore {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_SEEN_CAPACITY)
    }
}

impl MemorySeenStore {
    /// A store of at most [`DEFAULT_SEEN_CAPACITY`] ids.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store of at most `capacity` unexpired state ids, and as many spent handles.
    pub fn with_capacity(capacity: usize) -> Self {
        MemorySeenStore {
            seen: Pool::new(capacity),
            spent: Pool::new(capacity),
        }
    }

    fn record(&self, jti: &str, expires_at: f64, now: f64) -> bool {
        self.seen.record(jti, expires_at, now)
    }
}

impl SeenStore for MemorySeenStore {
    fn first_use<'a>(
        &'a self,
        jti: &'a str,
        expires_at: f64,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        let first = self.record(jti, expires_at, now_secs());
        Box::pin(async move { first })
    }

    fn spend<'a>(
        &'a self,
        jti: &'a str,
        expires_at: f64,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        let spent = self.spent.record(jti, expires_at, now_secs());
        Box::pin(async move { spent })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_accepted_once_and_a_full_store_fails_closed() {
        let store = MemorySeenStore::with_capacity(2);
        assert!(store.record("a", 100.0, 50.0));
        assert!(!store.record("a", 100.0, 50.0));
        assert!(store.record("b", 60.0, 50.0));
        assert!(!store.record("c", 100.0, 50.0), "full of unexpired ids");
        // Once b expired, it makes room.
        assert!(store.record("c", 100.0, 70.0));
        assert!(!store.record("a", 100.0, 70.0));
    }

    /// Security review X12: handles spent fill a pool of their own, not the one rounds need.
    #[tokio::test]
    async fn spent_handles_and_used_states_fill_pools_of_their_own() {
        let store = MemorySeenStore::with_capacity(2);
        let later = now_secs() + 3600.0;
        assert!(store.spend("h1", later).await);
        assert!(!store.spend("h1", later).await, "spent once");
        assert!(store.spend("h2", later).await);
        assert!(!store.spend("h3", later).await, "the handles' pool is full");
        assert!(store.first_use("s1", later).await, "rounds still pass");
        assert!(store.first_use("s2", later).await);
        assert!(
            !store.first_use("s3", later).await,
            "the states' pool is full"
        );
        assert!(!store.spend("h4", later).await);
    }
}
