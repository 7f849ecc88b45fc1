//! Application state: values given to the server once (a database pool, a store, a client for
//! another service) that every tool, resolver, prompt and resource reaches through its
//! request's context, the way axum's `State` works.
//!
//! [`McpServer::with_state`](crate::registry::McpServer::with_state) (or
//! [`Server::with_state`](crate::Server::with_state)) keeps one value per type; each request's
//! context shares them (one reference count, none at all for a server without state). An
//! annotated function takes a parameter `notes: State<Notes>`; a hand-written handler or
//! resolver asks [`RequestContext::state`](crate::RequestContext::state). A definition that
//! takes a state the server was not given fails the server's build, before any request.

use std::any::{Any, TypeId};
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A value the server was given with `with_state`, shared by every request: as a parameter of
/// an annotated function (`notes: State<Notes>`), or from
/// [`RequestContext::state`](crate::RequestContext::state).
///
/// It dereferences to the value, and cloning it clones the `Arc`. For state that changes, give
/// the server a type that synchronizes inside (a `Mutex`, a pool, an atomic).
///
/// ```
/// use std::sync::Mutex;
/// use mcp_server_core::registry::{McpServer, ToolDef};
///
/// #[derive(Default)]
/// struct Counter(Mutex<u64>);
///
/// let count = ToolDef::new("count")
///     .requires_state::<Counter>()
///     .handler(|ctx, _: serde_json::Value| async move {
///         let Some(counter) = ctx.state::<Counter>() else {
///             return "no counter".to_owned();
///         };
///         let mut n = counter.0.lock().unwrap();
///         *n += 1;
///         n.to_string()
///     });
/// let server = McpServer::new("counter")
///     .with_state(Counter::default())
///     .tool(count)
///     .build();
/// assert!(server.is_ok());
/// ```
pub struct State<T: ?Sized>(Arc<T>);

impl<T> State<T> {
    /// A state value of its own, for calling an annotated function directly (in a test).
    pub fn new(value: T) -> Self {
        State(Arc::new(value))
    }
}

impl<T: ?Sized> State<T> {
    /// The shared value itself. An associated function (`State::arc(&notes)`), so that it
    /// never hides a method of `T`.
    pub fn arc(this: &Self) -> &Arc<T> {
        &this.0
    }
}

impl<T: ?Sized> From<Arc<T>> for State<T> {
    fn from(value: Arc<T>) -> Self {
        State(value)
    }
}

impl<T: ?Sized> Clone for State<T> {
    fn clone(&self) -> Self {
        State(self.0.clone())
    }
}

impl<T: ?Sized> Deref for State<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("State").field(&&*self.0).finish()
    }
}

/// A state type a definition takes, by id, with its name for the build's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StateNeed {
    pub(crate) id: TypeId,
    pub(crate) name: &'static str,
}

impl StateNeed {
    pub(crate) fn of<T: 'static>() -> Self {
        StateNeed {
            id: TypeId::of::<T>(),
            name: std::any::type_name::<T>(),
        }
    }

    /// Records this need once in `needs`.
    pub(crate) fn add_to(self, needs: &mut Vec<StateNeed>) {
        if !needs.contains(&self) {
            needs.push(self);
        }
    }
}

type Entry = (TypeId, &'static str, Arc<dyn Any + Send + Sync>);

/// The server's state values, one per type, shared by every request's context. Without
/// state it holds nothing, and a context's copy costs nothing.
#[derive(Clone, Default)]
pub(crate) struct StateMap(Option<Arc<Vec<Entry>>>);

impl StateMap {
    /// Keeps `value`, in place of any earlier value of its type.
    pub(crate) fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        let mut entries = match self.0.take() {
            Some(entries) => Arc::try_unwrap(entries).unwrap_or_else(|shared| (*shared).clone()),
            None => Vec::new(),
        };
        let id = TypeId::of::<T>();
        entries.retain(|(other, _, _)| *other != id);
        entries.push((id, std::any::type_name::<T>(), Arc::new(value)));
        self.0 = Some(Arc::new(entries));
    }

    /// The value of type `T`, if the server has one.
    pub(crate) fn get<T: Send + Sync + 'static>(&self) -> Option<State<T>> {
        let id = TypeId::of::<T>();
        let (_, _, value) = self
            .0
            .as_deref()?
            .iter()
            .find(|(other, _, _)| *other == id)?;
        value.clone().downcast::<T>().ok().map(State::from)
    }

    pub(crate) fn has(&self, need: &StateNeed) -> bool {
        self.names_and_ids().any(|(_, id)| id == need.id)
    }

    /// The types held, by name, in the order they were first given.
    pub(crate) fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.names_and_ids().map(|(name, _)| name)
    }

    fn names_and_ids(&self) -> impl Iterator<Item = (&'static str, TypeId)> + '_ {
        self.0
            .iter()
            .flat_map(|entries| entries.iter().map(|(id, name, _)| (*name, *id)))
    }
}

/// Shows the types held, never the values.
impl fmt::Debug for StateMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_per_type_the_last_one_given() {
        let mut map = StateMap::default();
        assert!(map.get::<u32>().is_none());
        map.insert(1u32);
        map.insert(String::from("notes"));
        map.insert(2u32);
        assert_eq!(*map.get::<u32>().unwrap(), 2);
        assert_eq!(&*map.get::<String>().unwrap(), "notes");
        assert!(map.get::<u64>().is_none());
        assert_eq!(
            map.names().collect::<Vec<_>>(),
            ["alloc::string::String", "u32"]
        );
        assert!(map.has(&StateNeed::of::<String>()));
        assert!(!map.has(&StateNeed::of::<u64>()));
        assert_eq!(format!("{map:?}"), r#"["alloc::string::String", "u32"]"#);
    }

    #[test]
    fn a_context_copy_shares_the_values() {
        let mut map = StateMap::default();
        map.insert(std::sync::Mutex::new(0u8));
        let copy = map.clone();
        *copy.get::<std::sync::Mutex<u8>>().unwrap().lock().unwrap() = 7;
        assert_eq!(
            *map.get::<std::sync::Mutex<u8>>().unwrap().lock().unwrap(),
            7
        );
        // Giving a value after a copy was taken leaves the copy as it was.
        map.insert(1i8);
        assert!(copy.get::<i8>().is_none());
        assert_eq!(*map.get::<i8>().unwrap(), 1);
    }
}
