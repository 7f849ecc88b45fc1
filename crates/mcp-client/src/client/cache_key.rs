//! What the client's response cache files a result under: the key params of a request that
//! may be cached (its cursor or URI) and whose results they are ([`CacheScope`]). Below both
//! the connection, which holds a scope, and the client's calls, which compute the key.

use mcp_types::methods;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

/// The parts of a request's params that decide whether and where its result is cached.
#[derive(Deserialize)]
struct KeyParams {
    cursor: Option<String>,
    uri: Option<String>,
    #[serde(rename = "inputResponses")]
    input_responses: Option<IgnoredAny>,
    #[serde(rename = "requestState")]
    request_state: Option<IgnoredAny>,
}

/// The key params of a read of `uri` (what `notifications/resources/updated` drops).
pub(crate) fn read_params(uri: &str) -> String {
    serde_json::json!({"uri": uri}).to_string()
}

/// The key params of a request, when its result may be cached at all.
pub(crate) fn cache_params(method: &str, params: Option<&RawValue>) -> Option<String> {
    if !methods::is_cacheable(method) || method == methods::SERVER_DISCOVER {
        return None;
    }
    let params: KeyParams = match params {
        Some(raw) => serde_json::from_str(raw.get()).ok()?,
        None => KeyParams {
            cursor: None,
            uri: None,
            input_responses: None,
            request_state: None,
        },
    };
    // A retry that carries answers or state is one flow's, never anyone else's.
    if params.input_responses.is_some() || params.request_state.is_some() {
        return None;
    }
    Some(match (params.uri, params.cursor) {
        (Some(uri), _) => read_params(&uri),
        (None, cursor) => serde_json::json!({"cursor": cursor}).to_string(),
    })
}

/// Whose results a client's cache entries are (security review X7): the server's identity,
/// and, for a connection without credentials, a key of this client alone.
pub(crate) struct CacheScope {
    pub(crate) server: String,
    own: String,
}

impl CacheScope {
    pub(crate) fn of(transport: &dyn crate::Transport) -> Self {
        let own = unique_key();
        CacheScope {
            server: transport
                .server_identity()
                .unwrap_or_else(|| format!("this client only: {own}")),
            own,
        }
    }

    /// What a `private` result is filed under: the connection's authorization, else this
    /// client alone (connections without credentials never share private results).
    pub(crate) fn principal(&self, transport: &dyn crate::Transport) -> String {
        transport
            .principal()
            .unwrap_or_else(|| format!("no credential: {}", self.own))
    }
}

/// A key no other client has, in this process or another sharing a store: the process, the
/// time, a counter, and the process's random hash seed.
fn unique_key() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(nanos);
    hasher.write_u64(n);
    format!(
        "{}-{n}-{nanos:x}-{:016x}",
        std::process::id(),
        hasher.finish()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).unwrap()
    }

    #[test]
    fn only_first_legs_of_cacheable_methods_have_a_key() {
        assert_eq!(
            cache_params("tools/list", None).as_deref(),
            Some(r#"{"cursor":null}"#)
        );
        assert_eq!(
            cache_params("tools/list", Some(&raw(r#"{"cursor":"2","_meta":{}}"#))).as_deref(),
            Some(r#"{"cursor":"2"}"#)
        );
        assert_eq!(
            cache_params("resources/read", Some(&raw(r#"{"uri":"file:///a"}"#))).as_deref(),
            Some(r#"{"uri":"file:///a"}"#)
        );
        assert_eq!(
            cache_params(
                "resources/read",
                Some(&raw(r#"{"uri":"u","requestState":"s"}"#))
            ),
            None
        );
        assert_eq!(
            cache_params("tools/call", Some(&raw(r#"{"name":"t"}"#))),
            None
        );
        assert_eq!(cache_params("server/discover", None), None);
    }
}
