//! The live legacy sessions of one endpoint by id, and each client's own by client, so that
//! keeping a client within its share of the pool looks at that client's sessions and no one
//! else's. Before this index, every `initialize` walked every live session under the lock to
//! count the client's: `cargo xtask bench --scale` saw opening the 10,000th session cost 30
//! times the 1,000th, and every request of every session wait behind the walk.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tokio::time::Instant;

/// What the index needs of a session.
pub(crate) trait Member {
    /// Whose share of the pool it counts against (`None`: nobody's).
    fn client(&self) -> Option<&str>;
    /// When it was last used.
    fn last_seen(&self) -> Instant;
}

impl<T: Member> Member for Arc<T> {
    fn client(&self) -> Option<&str> {
        T::client(self)
    }

    fn last_seen(&self) -> Instant {
        T::last_seen(self)
    }
}

/// Sessions by id, indexed by client.
pub(crate) struct Live<V> {
    sessions: HashMap<String, V>,
    by_client: HashMap<String, HashSet<String>>,
}

impl<V: Member> Live<V> {
    pub(crate) fn new() -> Self {
        Live {
            sessions: HashMap::new(),
            by_client: HashMap::new(),
        }
    }

    pub(crate) fn get(&self, id: &str) -> Option<&V> {
        self.sessions.get(id)
    }

    pub(crate) fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Adds session `id` (replacing one of the same id).
    pub(crate) fn insert(&mut self, id: String, session: V) {
        self.remove(&id);
        if let Some(client) = session.client() {
            self.by_client
                .entry(client.to_owned())
                .or_default()
                .insert(id.clone());
        }
        self.sessions.insert(id, session);
    }

    /// Session `id`, adding `session` under it first when there is none.
    pub(crate) fn get_or_insert(&mut self, id: &str, session: V) -> &V {
        if !self.sessions.contains_key(id) {
            self.insert(id.to_owned(), session);
        }
        &self.sessions[id]
    }

    pub(crate) fn remove(&mut self, id: &str) -> Option<V> {
        let session = self.sessions.remove(id)?;
        unindex(&mut self.by_client, id, &session);
        Some(session)
    }

    /// Keeps the sessions `keep` says to keep.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&V) -> bool) {
        let by_client = &mut self.by_client;
        self.sessions.retain(|id, session| {
            let kept = keep(session);
            if !kept {
                unindex(by_client, id, session);
            }
            kept
        });
    }

    /// Every session, removed.
    pub(crate) fn drain(&mut self) -> Vec<V> {
        self.by_client.clear();
        self.sessions.drain().map(|(_, s)| s).collect()
    }

    /// How many sessions `client` holds.
    pub(crate) fn held_by(&self, client: &str) -> usize {
        self.by_client.get(client).map_or(0, HashSet::len)
    }

    /// The id of `client`'s least recently used session.
    pub(crate) fn least_recent(&self, client: &str) -> Option<&str> {
        self.by_client
            .get(client)?
            .iter()
            .filter_map(|id| Some((id, self.sessions.get(id)?.last_seen())))
            .min_by_key(|(_, seen)| *seen)
            .map(|(id, _)| id.as_str())
    }
}

fn unindex<V: Member>(by_client: &mut HashMap<String, HashSet<String>>, id: &str, session: &V) {
    let Some(client) = session.client() else {
        return;
    };
    if let Some(ids) = by_client.get_mut(client) {
        ids.remove(id);
        if ids.is_empty() {
            by_client.remove(client);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    struct S {
        client: Option<&'static str>,
        seen: Instant,
    }

    impl Member for S {
        fn client(&self) -> Option<&str> {
            self.client
        }

        fn last_seen(&self) -> Instant {
            self.seen
        }
    }

    fn s(client: Option<&'static str>, age_ms: u64) -> S {
        S {
            client,
            seen: Instant::now() - Duration::from_millis(age_ms),
        }
    }

    #[test]
    fn each_client_counts_its_own_and_its_oldest_is_its_own() {
        let mut live = Live::new();
        live.insert("a1".into(), s(Some("a"), 10));
        live.insert("a2".into(), s(Some("a"), 30));
        live.insert("b1".into(), s(Some("b"), 90));
        live.insert("n1".into(), s(None, 99));
        assert_eq!(
            (live.held_by("a"), live.held_by("b"), live.len()),
            (2, 1, 4)
        );
        assert_eq!(live.least_recent("a"), Some("a2"));
        assert_eq!(live.least_recent("b"), Some("b1"));
        assert_eq!(live.least_recent("c"), None);

        assert!(live.remove("a2").is_some());
        assert_eq!(live.held_by("a"), 1);
        assert_eq!(live.least_recent("a"), Some("a1"));
        assert!(live.remove("a2").is_none());
    }

    #[test]
    fn the_index_follows_replacement_retain_and_drain() {
        let mut live = Live::new();
        live.insert("x".into(), s(Some("a"), 0));
        // The same id again, now another client's: it moves.
        live.insert("x".into(), s(Some("b"), 0));
        assert_eq!((live.held_by("a"), live.held_by("b")), (0, 1));
        // get_or_insert keeps the first.
        assert_eq!(live.get_or_insert("x", s(Some("a"), 0)).client, Some("b"));
        assert_eq!(live.get_or_insert("y", s(Some("a"), 0)).client, Some("a"));
        assert_eq!(live.held_by("a"), 1);

        live.retain(|s| s.client != Some("b"));
        assert_eq!(
            (live.held_by("a"), live.held_by("b"), live.len()),
            (1, 0, 1)
        );
        assert!(live.get("x").is_none());

        assert_eq!(live.drain().len(), 1);
        assert_eq!((live.held_by("a"), live.len()), (0, 0));
        assert!(live.by_client.is_empty());
    }
}
