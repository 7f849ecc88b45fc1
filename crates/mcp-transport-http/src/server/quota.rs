//! What a request holds while it runs: its place under one of the server's caps
//! ([`Permit`], [`Held`]), and per-client shares of a budget ([`Quota`]): how many of something
//! (listen streams, sessions) one principal, or one peer address ([`client_key`]), may hold at
//! once, so that one client cannot take every place (review W4, W6).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcp_server_core::seal::Principal;
use tokio::sync::OwnedSemaphorePermit;

/// What a legacy request holds until its handler ends, even after its client hung up: its
/// permits of the server's and the session's in-flight caps.
pub(crate) struct Held {
    pub(crate) _server: Arc<Permit>,
    pub(crate) _session: Option<OwnedSemaphorePermit>,
}

/// A request's place under the server's caps (in flight, or a listen stream with its client's
/// share), given back when the last holder (the response body, a detached legacy request)
/// drops it.
pub(crate) struct Permit {
    pub(crate) _place: OwnedSemaphorePermit,
    pub(crate) _share: Option<Share>,
}

/// Whose share a request counts against: its principal, else its client's address group (an
/// IPv6 client by its /64: [`client_group`](mcp_server_core::client_group)), else nobody's
/// (a server mounted in another router without authentication sees no peer).
pub(crate) fn client_key(
    principal: Option<&Principal>,
    peer: Option<std::net::IpAddr>,
) -> Option<String> {
    match principal {
        Some(principal) => {
            mcp_server_core::tasks::owner_key(Some(principal)).map(|k| format!("p{k}"))
        }
        None => peer.map(|peer| format!("a{}", mcp_server_core::client_group(peer))),
    }
}

/// Counts what each client holds, up to `limit` each. Clients holding nothing take no room.
#[derive(Debug)]
pub(crate) struct Quota {
    limit: usize,
    held: Mutex<HashMap<String, usize>>,
}

/// One place of one client's share, given back when dropped.
#[derive(Debug)]
pub(crate) struct Share {
    quota: Arc<Quota>,
    client: String,
}

impl Quota {
    pub(crate) fn new(limit: usize) -> Self {
        Quota {
            limit: limit.max(1),
            held: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// A place for `client`, or `None` when it already holds `limit`.
    pub(crate) fn take(self: &Arc<Self>, client: &str) -> Option<Share> {
        let mut held = self.held.lock().ok()?;
        let count = held.entry(client.to_owned()).or_insert(0);
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(Share {
            quota: self.clone(),
            client: client.to_owned(),
        })
    }

    #[cfg(test)]
    fn holding(&self, client: &str) -> usize {
        self.held
            .lock()
            .map(|h| h.get(client).copied().unwrap_or(0))
            .unwrap_or(0)
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        if let Ok(mut held) = self.quota.held.lock()
            && let Some(count) = held.get_mut(&self.client)
        {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_gets_its_share_and_gets_it_back() {
        let quota = Arc::new(Quota::new(2));
        let a1 = quota.take("a").unwrap();
        let _a2 = quota.take("a").unwrap();
        assert!(quota.take("a").is_none());
        let _b = quota.take("b").unwrap();
        drop(a1);
        assert_eq!(quota.holding("a"), 1);
        assert!(quota.take("a").is_some());
        assert_eq!(quota.holding("nobody"), 0);
        assert!(quota.held.lock().unwrap().get("nobody").is_none());
    }

    /// Security review X3: an IPv6 client is its /64 (it has all of it), an IPv4 one its
    /// address, an IPv4 address mapped into IPv6 the IPv4 one; a principal is itself.
    #[test]
    fn a_client_is_its_principal_else_its_address_group() {
        let key = |a: &str| client_key(None, Some(a.parse().unwrap())).unwrap();
        assert_eq!(
            key("2001:db8:1:2::1"),
            key("2001:db8:1:2:ffff:ffff:ffff:fffe")
        );
        assert_eq!(key("2001:db8:1:2::1"), "a2001:db8:1:2::/64");
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("203.0.113.5"), "a203.0.113.5");
        assert_ne!(key("203.0.113.5"), key("203.0.113.6"));
        assert_eq!(key("::ffff:203.0.113.5"), key("203.0.113.5"));
        let alice = Principal::new("app").subject("alice");
        assert_eq!(
            client_key(Some(&alice), Some("203.0.113.5".parse().unwrap())),
            client_key(Some(&alice), None)
        );
        assert_eq!(client_key(None, None), None);
    }
}
