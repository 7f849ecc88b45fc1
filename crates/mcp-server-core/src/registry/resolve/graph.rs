//! The resolver graph, checked when the server is built: each resolver, what it reads, and
//! no cycle among them.

use std::any::Any;

use crate::elicit::SchemaError;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use mcp_types::JsonObject;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::RequestContext;
use crate::futures::BoxFuture;

use crate::registry::{FromResolved, Question, Resolution, ResolveError, Resolved};

pub(crate) enum Erased {
    Ready(Arc<dyn Any + Send + Sync>),
    Ask(Question),
    Reject(String),
}

pub(super) type RunFn = Arc<dyn Fn(ResolverInput) -> BoxFuture<'static, Erased> + Send + Sync>;

/// A resolver: a key (its `inputRequests` key on the wire), the resolvers it depends on, the
/// tool arguments it reads, and the async function that produces its [`Resolution`].
#[derive(Clone)]
pub struct Resolver {
    pub(crate) key: String,
    pub(crate) depends_on: Vec<String>,
    pub(crate) reads: Vec<String>,
    pub(crate) run: RunFn,
    /// The application state it takes.
    pub(crate) needs: Vec<crate::state::StateNeed>,
}

impl fmt::Debug for Resolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resolver")
            .field("key", &self.key)
            .field("depends_on", &self.depends_on)
            .finish()
    }
}

impl Resolver {
    /// A resolver named `key` (unique within its tool; it is the `inputRequests` key).
    pub fn new<T, F, Fut>(key: impl Into<String>, run: F) -> Self
    where
        T: Send + Sync + 'static,
        F: Fn(ResolverInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Resolution<T>> + Send + 'static,
    {
        let run = Arc::new(run);
        Resolver {
            key: key.into(),
            depends_on: Vec::new(),
            reads: Vec::new(),
            needs: Vec::new(),
            run: Arc::new(move |input| {
                let run = run.clone();
                Box::pin(async move {
                    match run(input).await {
                        Resolution::Ready(v) => Erased::Ready(Arc::new(v)),
                        Resolution::Ask(q) => Erased::Ask(q),
                        Resolution::Reject(m) => Erased::Reject(m),
                    }
                })
            }),
        }
    }

    /// Declares that this resolver takes the server's application state of type `T` (from
    /// `ctx.state::<T>()`): the server's build fails unless it was given a `T` with
    /// `with_state`. An annotated function's `State<T>` parameter declares it by itself.
    pub fn requires_state<T: Send + Sync + 'static>(mut self) -> Self {
        crate::state::StateNeed::of::<T>().add_to(&mut self.needs);
        self
    }

    /// Declares the resolvers (by key) whose values this one reads; they run first.
    pub fn depends_on<I: IntoIterator<Item = S>, S: Into<String>>(mut self, keys: I) -> Self {
        self.depends_on.extend(keys.into_iter().map(Into::into));
        self
    }

    /// Declares the tool arguments (by name) this resolver reads; checked when the server is
    /// built.
    pub fn reads<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.reads.extend(names.into_iter().map(Into::into));
        self
    }

    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }
}

/// What a resolver can read: the call's arguments (validated), the context, and the values of
/// the resolvers it depends on.
#[derive(Clone)]
pub struct ResolverInput {
    pub(crate) ctx: RequestContext,
    pub(crate) arguments: Arc<JsonObject>,
    pub(crate) resolved: Arc<HashMap<String, Resolved>>,
}

impl ResolverInput {
    /// The request context.
    pub fn context(&self) -> &RequestContext {
        &self.ctx
    }

    /// All arguments of the call.
    pub fn arguments(&self) -> &JsonObject {
        &self.arguments
    }

    /// One argument, by name (absent reads as `null`, so `Option<T>` works).
    pub fn argument<T: DeserializeOwned>(&self, name: &str) -> Result<T, String> {
        let value = self.arguments.get(name).cloned().unwrap_or(Value::Null);
        serde_json::from_value(value).map_err(|e| format!("argument '{name}': {e}"))
    }

    /// The value of a resolver this one depends on.
    pub fn resolved<C: FromResolved>(&self, key: &str) -> Result<C, String> {
        let value = self
            .resolved
            .get(key)
            .ok_or_else(|| format!("resolver '{key}' has no value yet"))?;
        C::from_resolved(value).map_err(|e| format!("resolver '{key}' {e}"))
    }
}

/// A resolver in a resolver graph, with its position known.
pub(crate) struct Graph {
    /// Resolvers in an order where every dependency comes first.
    pub(crate) order: Vec<Resolver>,
}

impl Graph {
    /// Orders `resolvers` so that dependencies run first; a cycle or an unknown dependency is
    /// an error naming the resolver.
    pub(crate) fn build(owner: &str, resolvers: Vec<Resolver>) -> Result<Self, String> {
        let keys: HashSet<&str> = resolvers.iter().map(|r| r.key.as_str()).collect();
        for r in &resolvers {
            if let Some(missing) = r.depends_on.iter().find(|d| !keys.contains(d.as_str())) {
                return Err(format!(
                    "{owner}: resolver '{}' depends on '{missing}', which is not a resolver of it",
                    r.key
                ));
            }
        }
        let mut order: Vec<Resolver> = Vec::with_capacity(resolvers.len());
        let mut placed: HashSet<String> = HashSet::new();
        let mut rest = resolvers;
        while !rest.is_empty() {
            let before = rest.len();
            let (ready, waiting): (Vec<Resolver>, Vec<Resolver>) = rest
                .into_iter()
                .partition(|r| r.depends_on.iter().all(|d| placed.contains(d)));
            for r in ready {
                placed.insert(r.key.clone());
                order.push(r);
            }
            rest = waiting;
            if rest.len() == before {
                return Err(format!(
                    "{owner}: resolvers depend on each other in a cycle: {}; remove one of \
                     these `#[resolve(...)]` parameters",
                    cycle(&rest).join(" -> ")
                ));
            }
        }
        Ok(Graph { order })
    }
}

/// A cycle among `stuck`, resolvers none of which can run because each waits for another of
/// them: its keys in dependency order, the first repeated at the end (`'a' -> 'b' -> 'a'`).
/// It starts from the smallest key so the message is the same on every build.
pub(super) fn cycle(stuck: &[Resolver]) -> Vec<String> {
    let by_key: HashMap<&str, &Resolver> = stuck.iter().map(|r| (r.key.as_str(), r)).collect();
    let Some(mut at) = by_key.keys().min().copied() else {
        return Vec::new();
    };
    let mut path: Vec<&str> = Vec::new();
    // Every stuck resolver waits for at least one other stuck resolver, so following those
    // edges must come back to a resolver already on the path within `stuck.len()` steps.
    while !path.contains(&at) {
        path.push(at);
        let Some(next) = by_key[at]
            .depends_on
            .iter()
            .map(String::as_str)
            .filter(|d| by_key.contains_key(d))
            .min()
        else {
            break;
        };
        at = next;
    }
    let start = path.iter().position(|k| *k == at).unwrap_or(0);
    let mut names: Vec<String> = path[start..].iter().map(|k| format!("'{k}'")).collect();
    names.push(format!("'{at}'"));
    names
}

/// Checks a resolver graph and its parameters when the server is built.
pub(crate) fn check_resolvers(
    owner: &str,
    resolvers: Vec<Resolver>,
    params: &[ResolvedParam],
    arguments: Option<&[String]>,
) -> Result<Graph, String> {
    let mut seen = HashSet::new();
    for r in &resolvers {
        if !seen.insert(r.key.as_str()) {
            return Err(format!("{owner}: two resolvers share the key '{}'", r.key));
        }
        if let Some(arguments) = arguments
            && let Some(missing) = r.reads.iter().find(|name| !arguments.contains(name))
        {
            return Err(format!(
                "{owner}: resolver '{}' reads argument '{missing}', which is not an argument of it",
                r.key
            ));
        }
    }
    for p in params {
        if !seen.contains(p.key.as_str()) {
            return Err(format!(
                "{owner}: parameter '{}' names resolver '{}', which is not registered",
                p.param, p.key
            ));
        }
        (p.check)().map_err(|e| format!("{owner}: parameter '{}': {e}", p.param))?;
    }
    Graph::build(owner, resolvers)
}

/// Checks the JSON Schema of a consumer type when the server is built.
pub(crate) type CheckFn = fn() -> Result<(), SchemaError>;
/// Converts a resolved value for one parameter.
pub(crate) type ConvertFn = fn(&Resolved) -> Result<Box<dyn Any + Send>, ResolveError>;

/// A parameter filled by a resolver.
#[derive(Clone)]
pub(crate) struct ResolvedParam {
    pub(crate) param: String,
    pub(crate) key: String,
    pub(crate) check: CheckFn,
    pub(crate) convert: ConvertFn,
}
