//! The response cache: a 2026-07-28 result that carries `ttlMs` (the lists and
//! `resources/read`) is kept that long and answers the same request again without sending it.
//! A `private` result is filed under the authorization it was fetched with and never serves
//! another; a `public` one serves every client sharing the store. A list-changed or
//! resource-updated notification drops what it makes stale. [`CacheStore`] is where results
//! are kept; [`MemoryCache`] the default, bounded by entries and bytes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How one call treats the cache ([`Client::with_cache_mode`](crate::Client::with_cache_mode)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheMode {
    /// Answer from the cache while the result is fresh; keep what the server answers.
    #[default]
    Use,
    /// Always ask the server, and keep its answer.
    Refresh,
    /// Always ask the server, and keep nothing.
    Bypass,
}

/// What a cached result is filed under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    /// The server the result came from: its endpoint (an HTTP URL, a stdio command and its
    /// arguments, as [`Transport::server_identity`](crate::Transport::server_identity) names
    /// it), or, over a transport that names none, a key of the one client that fetched it. A
    /// result never answers a request to another server, even `public` and in a store shared
    /// by several clients.
    pub server: String,
    /// The method (`tools/list`, `resources/read`...).
    pub method: String,
    /// The parameters that shape the result: a list's cursor, a read's URI (as JSON).
    pub params: String,
    /// The authorization a `private` result was fetched with (an opaque digest, never the
    /// credential; without one, a key of the one client that fetched it, so that private
    /// results of clients without credentials never meet); `None` for a `public` result.
    pub principal: Option<String>,
}

/// Where cached results are kept: in memory ([`MemoryCache`]) or anywhere a caller likes,
/// shared between clients or not. A store never serves a result past its `fresh_until`.
pub trait CacheStore: Send + Sync + 'static {
    /// The result under `key`, if it is still fresh at `now`.
    fn get(&self, key: &CacheKey, now: Instant) -> Option<Arc<str>>;

    /// Keeps `result` under `key` until `fresh_until`, replacing what was there.
    fn put(&self, key: CacheKey, result: Arc<str>, fresh_until: Instant);

    /// Drops every result of `method`, for every server and principal; only those whose
    /// [`CacheKey::params`] are `params` when given.
    fn forget(&self, method: &str, params: Option<&str>);

    /// Drops the results of `method` that came from `server` ([`CacheKey::server`]), for
    /// every principal; only those whose [`CacheKey::params`] are `params` when given. A
    /// server's `list_changed` drops its own lists, never another server's. The default drops
    /// them for every server ([`forget`](Self::forget)): more than needed, never less.
    fn forget_from(&self, server: &str, method: &str, params: Option<&str>) {
        let _ = server;
        self.forget(method, params);
    }
}

/// The most results [`MemoryCache::default`] keeps.
pub const DEFAULT_CACHE_ENTRIES: usize = 1024;
/// The most bytes of results [`MemoryCache::default`] keeps (16 MiB).
pub const DEFAULT_CACHE_BYTES: usize = 16 * 1024 * 1024;
/// The longest a result is kept, whatever `ttlMs` it names (a day).
pub const MAX_CACHE_TTL: Duration = Duration::from_secs(24 * 3600);

/// The default store: in memory, at most `max_entries` results and `max_bytes` bytes. When
/// full, expired results go first, then the least recently used; a result larger than the
/// whole budget is not kept.
#[derive(Debug)]
pub struct MemoryCache {
    max_entries: usize,
    max_bytes: usize,
    state: Mutex<MemoryState>,
}

#[derive(Debug, Default)]
struct MemoryState {
    entries: HashMap<CacheKey, Entry>,
    bytes: usize,
    /// A clock of uses, for least-recently-used eviction.
    tick: u64,
}

#[derive(Debug)]
struct Entry {
    result: Arc<str>,
    fresh_until: Instant,
    used: u64,
}

impl Default for MemoryCache {
    fn default() -> Self {
        MemoryCache::new(DEFAULT_CACHE_ENTRIES, DEFAULT_CACHE_BYTES)
    }
}

impl MemoryCache {
    /// A store of at most `max_entries` results and `max_bytes` bytes of them.
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        MemoryCache {
            max_entries,
            max_bytes,
            state: Mutex::new(MemoryState::default()),
        }
    }

    /// How many results are kept now (expired ones included until they are evicted).
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn size(key: &CacheKey, result: &str) -> usize {
    key.server.len()
        + key.method.len()
        + key.params.len()
        + key.principal.as_ref().map_or(0, String::len)
        + result.len()
}

impl CacheStore for MemoryCache {
    fn get(&self, key: &CacheKey, now: Instant) -> Option<Arc<str>> {
        let mut state = self.lock();
        state.tick += 1;
        let tick = state.tick;
        let entry = state.entries.get_mut(key)?;
        if entry.fresh_until <= now {
            return None;
        }
        entry.used = tick;
        Some(entry.result.clone())
    }

    fn put(&self, key: CacheKey, result: Arc<str>, fresh_until: Instant) {
        let needed = size(&key, &result);
        if needed > self.max_bytes || self.max_entries == 0 {
            return;
        }
        let mut state = self.lock();
        if let Some(old) = state.entries.remove(&key) {
            state.bytes -= size(&key, &old.result);
        }
        let now = Instant::now();
        let expired: Vec<CacheKey> = state
            .entries
            .iter()
            .filter(|(_, e)| e.fresh_until <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for gone in expired {
            if let Some(e) = state.entries.remove(&gone) {
                state.bytes -= size(&gone, &e.result);
            }
        }
        while state.entries.len() >= self.max_entries || state.bytes + needed > self.max_bytes {
            let Some(oldest) = state
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(e) = state.entries.remove(&oldest) {
                state.bytes -= size(&oldest, &e.result);
            }
        }
        state.tick += 1;
        let used = state.tick;
        state.bytes += needed;
        state.entries.insert(
            key,
            Entry {
                result,
                fresh_until,
                used,
            },
        );
    }

    fn forget(&self, method: &str, params: Option<&str>) {
        self.drop_where(|k| k.method == method && params.is_none_or(|p| k.params == p));
    }

    fn forget_from(&self, server: &str, method: &str, params: Option<&str>) {
        self.drop_where(|k| {
            k.server == server && k.method == method && params.is_none_or(|p| k.params == p)
        });
    }
}

impl MemoryCache {
    fn drop_where(&self, gone: impl Fn(&CacheKey) -> bool) {
        let mut state = self.lock();
        let gone: Vec<CacheKey> = state.entries.keys().filter(|k| gone(k)).cloned().collect();
        for key in gone {
            if let Some(e) = state.entries.remove(&key) {
                state.bytes -= size(&key, &e.result);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(method: &str, params: &str) -> CacheKey {
        CacheKey {
            server: "http://a.example/mcp".into(),
            method: method.into(),
            params: params.into(),
            principal: None,
        }
    }

    #[test]
    fn the_memory_cache_keeps_fresh_results_within_its_bounds() {
        let cache = MemoryCache::new(2, 1000);
        let now = Instant::now();
        let later = now + Duration::from_secs(60);
        cache.put(key("tools/list", "a"), "one".into(), later);
        cache.put(key("tools/list", "b"), "two".into(), later);
        assert_eq!(
            cache.get(&key("tools/list", "a"), now).as_deref(),
            Some("one")
        );
        // Full: the least recently used ("b") goes.
        cache.put(key("prompts/list", ""), "three".into(), later);
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get(&key("tools/list", "b"), now), None);
        assert_eq!(
            cache.get(&key("tools/list", "a"), now).as_deref(),
            Some("one")
        );
        // Stale results are never served.
        assert_eq!(cache.get(&key("tools/list", "a"), later), None);
        // Bytes bound too: a result over the whole budget is not kept, others make room.
        let cache = MemoryCache::new(10, 1000);
        cache.put(key("resources/read", "big"), "x".repeat(2000).into(), later);
        assert!(cache.is_empty());
        for name in ["a", "b", "c"] {
            cache.put(key("resources/read", name), "y".repeat(400).into(), later);
        }
        assert_eq!(cache.len(), 2, "the oldest made room");
        assert_eq!(cache.get(&key("resources/read", "a"), now), None);
        cache.forget("resources/read", Some("b"));
        assert_eq!(cache.len(), 1);
        cache.forget("resources/read", None);
        assert!(cache.is_empty());
    }
}
