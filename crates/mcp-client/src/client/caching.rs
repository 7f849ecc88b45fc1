//! The client's use of its response cache: which requests may be answered from it (a
//! 2026-07-28 list or `resources/read` with no `inputResponses` or `requestState`), the key a
//! result is filed under (its method, cursor or URI, and for a `private` result the
//! transport's principal), what a result's `ttlMs` and `cacheScope` say, and the entries a
//! notification makes stale.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_types::version::Era;
use mcp_types::{ServerNotification, methods};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::cache::{CacheKey, CacheMode, MAX_CACHE_TTL};

use crate::Client;
use crate::client::Inner;
use crate::client::cache_key::read_params;

/// The caching hints of a result.
#[derive(Deserialize)]
struct Hints {
    #[serde(rename = "resultType")]
    result_type: Option<String>,
    #[serde(rename = "ttlMs")]
    ttl_ms: Option<f64>,
    #[serde(rename = "cacheScope")]
    cache_scope: Option<String>,
}

impl Client {
    /// The cache, when this call may use it: a 2026-07-28 connection, a store, and a mode
    /// other than bypass for storing (`Use` for reading).
    fn cache_for(&self, reading: bool) -> Option<&Arc<dyn crate::cache::CacheStore>> {
        let allowed = match self.cache_mode {
            CacheMode::Use => true,
            CacheMode::Refresh => !reading,
            CacheMode::Bypass => false,
        };
        (allowed && self.era() == Some(Era::Modern))
            .then_some(self.inner.cache.as_ref())
            .flatten()
    }

    /// The fresh cached answer to `method` with key params `params`: a public one, or a
    /// private one fetched with this transport's authorization.
    pub(crate) fn cached(&self, method: &str, params: &str) -> Option<Box<RawValue>> {
        let cache = self.cache_for(true)?;
        let now = Instant::now();
        let principal = self.inner.cache_scope.principal(&*self.inner.transport);
        let hit = [None, Some(principal)].into_iter().find_map(|principal| {
            let key = CacheKey {
                server: self.inner.cache_scope.server.clone(),
                method: method.to_owned(),
                params: params.to_owned(),
                principal,
            };
            cache.get(&key, now)
        })?;
        let answer = RawValue::from_string(hit.to_string()).ok()?;
        tracing::debug!(method, "answered from the response cache");
        if let Some(report) = &self.inner.callbacks.cache_hit {
            report(method);
        }
        Some(answer)
    }

    /// Keeps `answer` when it is a complete result with a positive `ttlMs`.
    pub(crate) fn keep(&self, method: &str, params: &str, answer: &RawValue) {
        let Some(cache) = self.cache_for(false) else {
            return;
        };
        let Ok(hints) = serde_json::from_str::<Hints>(answer.get()) else {
            return;
        };
        let ttl = hints.ttl_ms.unwrap_or(0.0);
        if hints
            .result_type
            .as_deref()
            .is_some_and(|t| t != "complete")
            || ttl.is_nan()
            || ttl < 1.0
        {
            return;
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let ttl = Duration::from_millis(ttl.min(MAX_CACHE_TTL.as_millis() as f64) as u64);
        // Anything but "public" is private: the safe reading of a missing or unknown scope.
        let principal = match hints.cache_scope.as_deref() {
            Some("public") => None,
            _ => Some(self.inner.cache_scope.principal(&*self.inner.transport)),
        };
        let key = CacheKey {
            server: self.inner.cache_scope.server.clone(),
            method: method.to_owned(),
            params: params.to_owned(),
            principal,
        };
        cache.put(key, Arc::from(answer.get()), Instant::now() + ttl);
    }

    /// Drops every page of `method`'s list (an invalid cursor makes them all suspect).
    pub(crate) fn forget_list(&self, method: &str) {
        if let Some(cache) = &self.inner.cache {
            cache.forget_from(&self.inner.cache_scope.server, method, None);
        }
    }
}

impl Inner {
    /// Drops what `notification` makes stale.
    pub(crate) fn invalidate(&self, notification: &ServerNotification) {
        let Some(cache) = &self.cache else { return };
        // Only this server's results: another server's stay (security review X7).
        let server = self.cache_scope.server.as_str();
        match notification {
            ServerNotification::ToolListChanged(_) => {
                cache.forget_from(server, methods::TOOLS_LIST, None);
            }
            ServerNotification::PromptListChanged(_) => {
                cache.forget_from(server, methods::PROMPTS_LIST, None);
            }
            ServerNotification::ResourceListChanged(_) => {
                cache.forget_from(server, methods::RESOURCES_LIST, None);
                cache.forget_from(server, methods::RESOURCES_TEMPLATES_LIST, None);
            }
            ServerNotification::ResourceUpdated(updated) => {
                let read = read_params(&updated.uri);
                cache.forget_from(server, methods::RESOURCES_READ, Some(&read));
            }
            _ => {}
        }
    }
}
