//! The opt-in replay guard: with it on, every sealed state carries a unique `jti` claim, and a
//! state is accepted once. The seen-store is a trait (async, so it can live in Redis or a
//! database shared by a fleet); [`MemorySeenStore`] is the single-process default.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

/// A boxed, sendable future borrowing the store.
pub type SeenFuture<'a> = Pin<Box<dyn Future<Output = bool> + Send + 'a>>;

/// Remembers which sealed states were already used.
pub trait SeenStore: Send + Sync {
    /// Records `jti` (valid until `expires_at`, seconds since the Unix epoch) and answers
    /// `true` if it was not seen before: the state may be used. `false` refuses the state;
    /// a store that cannot answer (full, unreachable) must answer `false` too.
    fn first_use<'a>(&'a self, jti: &'a str, expires_at: f64) -> SeenFuture<'a>;
}

/// The most token ids a [`MemorySeenStore`] keeps unless configured.
pub const DEFAULT_SEEN_CAPACITY: usize = 100_000;

/// A seen-store in this process's memory, bounded: expired ids are forgotten, and when the
/// store is full of unexpired ids new states are refused (fail closed) until some expire.
#[derive(Debug)]
pub struct MemorySeenStore {
    seen: Mutex<HashMap<String, f64>>,
    capacity: usize,
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

    /// A store of at most `capacity` unexpired ids.
    pub fn with_capacity(capacity: usize) -> Self {
        MemorySeenStore {
            seen: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    fn record(&self, jti: &str, expires_at: f64, now: f64) -> bool {
        let Ok(mut seen) = self.seen.lock() else {
            return false;
        };
        if seen.contains_key(jti) {
            return false;
        }
        if seen.len() >= self.capacity {
            seen.retain(|_, exp| *exp > now);
            if seen.len() >= self.capacity {
                return false;
            }
        }
        seen.insert(jti.to_owned(), expires_at);
        true
    }
}

impl SeenStore for MemorySeenStore {
    fn first_use<'a>(&'a self, jti: &'a str, expires_at: f64) -> SeenFuture<'a> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let first = self.record(jti, expires_at, now);
        Box::pin(async move { first })
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
}
