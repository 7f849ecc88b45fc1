//! Policy: layers around every request a server answers, in both eras and on every transport.
//!
//! A [`Layer`] sees a request as a [`Call`] (its method, the tool, prompt or resource it names,
//! the principal and the scopes its token granted, its `_meta`) and decides: answer it itself
//! (a refusal), or pass it on through [`Next::run`] and look at the reply (an audit record, a
//! deadline). Layers apply to the whole server, to one method, or to one tool, prompt or
//! resource ([`Server::layer`](crate::Server::layer) and its siblings); for a request they run
//! in that order, outermost first, each group in the order it was added.
//!
//! The layers this crate ships: [`Timeout`], [`ConcurrencyLimit`], [`RateLimit`] (per
//! principal, in memory by default, shared by a fleet through a [`RateStore`] such as
//! `mcp-store-redis`'s), [`Audit`] and [`RequireScopes`]. A server with no layer pays one
//! branch per request for all of this.
//!
//! `subscriptions/listen` is a stream, not a call: layers do not wrap it (its transport
//! authenticates it as any request).
//!
//! ```
//! use std::time::Duration;
//! use mcp_server_core::Server;
//! use mcp_server_core::policy::{Audit, ConcurrencyLimit, Rate, RateLimit, Timeout};
//!
//! let server = Server::new("shop")
//!     .layer(Audit::to_tracing())
//!     .method_layer("tools/call", Timeout::new(Duration::from_secs(30)))
//!     .tool_layer("checkout", ConcurrencyLimit::new(8))
//!     .tool_layer("checkout", RateLimit::per_principal("checkout", Rate::new(5, Duration::from_secs(60))));
//! # drop(server);
//! ```

mod audit;
mod layers;
mod rate;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use mcp_state_seal::Principal;
use mcp_types::meta::Meta;
use mcp_types::methods;
use mcp_types::version::Era;
use mcp_types::{ClientRequest, ErrorCode, ErrorObject, RequestId};
use serde_json::value::RawValue;

use crate::futures::BoxFuture;

pub use audit::{Audit, AuditOutcome, AuditRecord};
pub use layers::{ConcurrencyLimit, RequireScopes, Timeout};
pub use rate::{
    Admission, DEFAULT_MAX_BUCKETS, MemoryRates, Rate, RateLimit, RateStore, RateStoreError,
};

/// The JSON-RPC error codes the shipped layers refuse with (this SDK's, in the range JSON-RPC
/// leaves to implementations; the MCP specification names none for these).
pub mod codes {
    use mcp_types::ErrorCode;

    /// `-32001`: the request did not finish within its [`Timeout`](super::Timeout); its
    /// handler was stopped. `data.timeoutMs` says how long it had.
    pub const TIMED_OUT: ErrorCode = ErrorCode(-32001);
    /// `-32003`: the caller's token lacks a scope the method or tool needs
    /// ([`RequireScopes`](super::RequireScopes)); `data.requiredScopes` lists them. Over HTTP
    /// the endpoint refuses such a request earlier, with the 403 `insufficient_scope`
    /// challenge a client can step up from.
    pub const FORBIDDEN: ErrorCode = ErrorCode(-32003);
    /// `-32029`: too many requests: a [`RateLimit`](super::RateLimit) (`data.limit` is
    /// `"rate"`, `data.retryAfterMs` says when a call will be admitted) or a
    /// [`ConcurrencyLimit`](super::ConcurrencyLimit) (`data.limit` is `"concurrency"`).
    pub const TOO_MANY_REQUESTS: ErrorCode = ErrorCode(-32029);
}

/// What a request answers: its result's JSON, or a JSON-RPC error.
pub type Reply = Result<Box<RawValue>, ErrorObject>;

/// A request as layers see it. It carries no arguments and no `requestState`: a layer that
/// needs them is not a policy but a handler.
pub struct Call<'a> {
    id: &'a RequestId,
    method: &'a str,
    target: Option<String>,
    era: Era,
    principal: Option<&'a Principal>,
    scopes: Option<&'a [String]>,
    meta: Option<Meta>,
    peer: Option<std::net::IpAddr>,
}

impl<'a> Call<'a> {
    pub(crate) fn new(
        id: &'a RequestId,
        method: &'a str,
        era: Era,
        transport: &'a crate::TransportContext,
    ) -> Self {
        Call {
            id,
            method,
            target: None,
            era,
            principal: transport.principal.as_ref(),
            scopes: transport.scopes.as_deref(),
            meta: None,
            peer: transport.peer,
        }
    }

    /// Adds what a decoded request says of itself: the name it targets and its `_meta`.
    pub(crate) fn of_request(mut self, typed: Option<&ClientRequest>) -> Self {
        if let Some(typed) = typed {
            self.target = target_of(typed).map(str::to_owned);
            self.meta = typed.meta().cloned();
        }
        self
    }

    /// The JSON-RPC id.
    pub fn id(&self) -> &RequestId {
        self.id
    }

    /// The method, e.g. `tools/call`.
    pub fn method(&self) -> &str {
        self.method
    }

    /// The tool or prompt name, or the resource URI, the request names (`None` for a method
    /// that names none, or params that did not decode).
    pub fn target(&self) -> Option<&str> {
        self.target.as_deref()
    }

    /// The protocol era of the request.
    pub fn era(&self) -> Era {
        self.era
    }

    /// The authenticated principal, if the transport has one.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal
    }

    /// The scopes the caller's token grants; `None` when the transport authenticated no token
    /// (stdio, an HTTP endpoint without a verifier).
    pub fn scopes(&self) -> Option<&[String]> {
        self.scopes
    }

    /// The address of the client, as the transport determined it
    /// ([`TransportContext::peer`](crate::TransportContext::peer)); `None` over stdio or in
    /// memory.
    pub fn peer(&self) -> Option<std::net::IpAddr> {
        self.peer
    }

    /// The request's `_meta`.
    pub fn meta(&self) -> Option<&Meta> {
        self.meta.as_ref()
    }

    /// A short name for messages: `tool 'checkout'`, `prompt 'greet'`, `resource 'file:///a'`,
    /// or the method in quotes.
    pub fn describe(&self) -> String {
        match (self.method, self.target()) {
            (methods::TOOLS_CALL, Some(name)) => format!("tool '{name}'"),
            (methods::PROMPTS_GET, Some(name)) => format!("prompt '{name}'"),
            (methods::RESOURCES_READ, Some(uri)) => format!("resource '{uri}'"),
            (method, _) => format!("'{method}'"),
        }
    }
}

impl fmt::Debug for Call<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call")
            .field("id", &self.id)
            .field("method", &self.method)
            .field("target", &self.target)
            .field("era", &self.era)
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

/// The name a request targets: `params.name` of `tools/call` and `prompts/get`,
/// `params.uri` of `resources/read`, `resources/subscribe` and `resources/unsubscribe`, and
/// the prompt name or template URI a `completion/complete` completes an argument of (so that
/// a scoped prompt's completions are as scoped as the prompt: security review X11).
pub(crate) fn target_of(typed: &ClientRequest) -> Option<&str> {
    match typed {
        ClientRequest::CallTool(p) => Some(&p.name),
        ClientRequest::GetPrompt(p) => Some(&p.name),
        ClientRequest::ReadResource(p) => Some(&p.uri),
        ClientRequest::Subscribe(p) | ClientRequest::Unsubscribe(p) => Some(&p.uri),
        ClientRequest::Complete(p) => match &p.reference {
            mcp_types::completion::CompletionReference::Prompt { name, .. } => Some(name),
            mcp_types::completion::CompletionReference::Resource { uri, .. } => Some(uri),
        },
        _ => None,
    }
}

/// One layer of policy around requests.
///
/// A layer answers with [`Next::run`]'s reply, its own refusal, or something in between; it
/// must answer (dropping `next` unrun answers nothing to the next layers, which is what a
/// refusal is). It may run concurrently for many requests.
///
/// ```
/// use mcp_server_core::BoxFuture;
/// use mcp_server_core::policy::{Call, Layer, Next, Reply};
/// use mcp_server_core::types::ErrorObject;
///
/// /// Refuses every call on Sundays (for the example, always).
/// struct Closed;
///
/// impl Layer for Closed {
///     fn call<'a>(&'a self, call: &'a Call<'a>, next: Next<'a>) -> BoxFuture<'a, Reply> {
///         let closed = call.method() == "tools/call";
///         Box::pin(async move {
///             if closed {
///                 return Err(ErrorObject::invalid_params("the shop is closed"));
///             }
///             next.run().await
///         })
///     }
/// }
/// ```
pub trait Layer: Send + Sync + 'static {
    /// Handles `call`: refuse it, or pass it on with `next.run()`.
    fn call<'a>(&'a self, call: &'a Call<'a>, next: Next<'a>) -> BoxFuture<'a, Reply>;

    /// The scopes this layer requires of the caller's token: the HTTP endpoint refuses a
    /// request lacking one with the 403 `insufficient_scope` challenge before it runs, and
    /// `tools/list` may hide what the caller cannot call. Empty for most layers.
    fn required_scopes(&self) -> &[String] {
        &[]
    }
}

/// The rest of the chain: the layers after this one, then the method itself.
pub struct Next<'a> {
    groups: [&'a [Arc<dyn Layer>]; 3],
    call: &'a Call<'a>,
    endpoint: BoxFuture<'a, Reply>,
}

impl<'a> Next<'a> {
    /// Runs the next layer, or the method once every layer passed.
    pub fn run(self) -> BoxFuture<'a, Reply> {
        let Next {
            mut groups,
            call,
            endpoint,
        } = self;
        for group in &mut groups {
            if let Some((layer, rest)) = group.split_first() {
                *group = rest;
                return layer.call(
                    call,
                    Next {
                        groups,
                        call,
                        endpoint,
                    },
                );
            }
        }
        endpoint
    }
}

impl fmt::Debug for Next<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let left: usize = self.groups.iter().map(|g| g.len()).sum();
        f.debug_struct("Next")
            .field("layers_left", &left)
            .finish_non_exhaustive()
    }
}

/// Where a layer applies.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Place {
    Everywhere,
    Method(String),
    Target(String, String),
}

/// The layers of a server, by where they apply.
#[derive(Default, Clone)]
pub(crate) struct Policy {
    everywhere: Vec<Arc<dyn Layer>>,
    methods: HashMap<String, Vec<Arc<dyn Layer>>>,
    targets: HashMap<(String, String), Vec<Arc<dyn Layer>>>,
    hide_unauthorized_tools: bool,
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("everywhere", &self.everywhere.len())
            .field("methods", &self.methods.keys().collect::<Vec<_>>())
            .field("targets", &self.targets.keys().collect::<Vec<_>>())
            .finish()
    }
}

const EMPTY: &[Arc<dyn Layer>] = &[];

impl Policy {
    pub(crate) fn is_empty(&self) -> bool {
        self.everywhere.is_empty() && self.methods.is_empty() && self.targets.is_empty()
    }

    fn add(&mut self, place: Place, layer: Arc<dyn Layer>) {
        match place {
            Place::Everywhere => self.everywhere.push(layer),
            Place::Method(m) => self.methods.entry(m).or_default().push(layer),
            Place::Target(m, t) => self.targets.entry((m, t)).or_default().push(layer),
        }
    }

    pub(crate) fn add_everywhere(&mut self, layer: Arc<dyn Layer>) {
        self.add(Place::Everywhere, layer);
    }

    pub(crate) fn add_method(&mut self, method: String, layer: Arc<dyn Layer>) {
        self.add(Place::Method(method), layer);
    }

    /// Adds `layer` before the layers `target` already has (a definition's scopes, checked
    /// before its rate limit spends a token).
    pub(crate) fn add_target_first(&mut self, method: &str, target: String, layer: Arc<dyn Layer>) {
        self.targets
            .entry((method.to_owned(), target))
            .or_default()
            .insert(0, layer);
    }

    pub(crate) fn add_target(&mut self, method: &str, target: String, layer: Arc<dyn Layer>) {
        self.add(Place::Target(method.to_owned(), target), layer);
    }

    /// The (method, target) pairs that have layers of their own.
    pub(crate) fn targets(&self) -> impl Iterator<Item = (&str, &str)> {
        self.targets.keys().map(|(m, t)| (m.as_str(), t.as_str()))
    }

    /// Whether some layer requires a scope.
    pub(crate) fn requires_scopes(&self) -> bool {
        let any =
            |layers: &[Arc<dyn Layer>]| layers.iter().any(|l| !l.required_scopes().is_empty());
        any(&self.everywhere)
            || self.methods.values().any(|l| any(l))
            || self.targets.values().any(|l| any(l))
    }

    pub(crate) fn hide_unauthorized_tools(&mut self, hide: bool) {
        self.hide_unauthorized_tools = hide;
    }

    pub(crate) fn hides_unauthorized_tools(&self) -> bool {
        self.hide_unauthorized_tools
    }

    /// The layers of `target` itself under `method` (a prompt's, a resource's; a tool's live
    /// in the server's tool table).
    pub(crate) fn target_layers(&self, method: &str, target: Option<&str>) -> &[Arc<dyn Layer>] {
        match target {
            Some(t) if !self.targets.is_empty() => self
                .targets
                .get(&(method.to_owned(), t.to_owned()))
                .map_or(EMPTY, Vec::as_slice),
            _ => EMPTY,
        }
    }

    /// Takes out the layers of every target of `method`, by target, in the order added.
    pub(crate) fn take_targets(&mut self, method: &str) -> Vec<(String, Vec<Arc<dyn Layer>>)> {
        let keys: Vec<(String, String)> = self
            .targets
            .keys()
            .filter(|(m, _)| m == method)
            .cloned()
            .collect();
        keys.into_iter()
            .filter_map(|key| self.targets.remove_entry(&key))
            .map(|((_, target), layers)| (target, layers))
            .collect()
    }

    fn groups<'a>(&'a self, method: &str, own: &'a [Arc<dyn Layer>]) -> [&'a [Arc<dyn Layer>]; 3] {
        let by_method = self.methods.get(method).map_or(EMPTY, Vec::as_slice);
        [&self.everywhere, by_method, own]
    }

    /// The scopes every layer on `method` requires, with `own` the layers of the request's
    /// target, each once, in order.
    pub(crate) fn required_scopes<'a>(
        &'a self,
        method: &str,
        own: &'a [Arc<dyn Layer>],
    ) -> Vec<&'a str> {
        let mut scopes: Vec<&str> = Vec::new();
        for group in self.groups(method, own) {
            for layer in group {
                for scope in layer.required_scopes() {
                    if !scopes.contains(&scope.as_str()) {
                        scopes.push(scope);
                    }
                }
            }
        }
        scopes
    }

    /// Whether a caller granted `granted` may call `method` on a target whose own layers are
    /// `own`.
    pub(crate) fn permits(
        &self,
        method: &str,
        own: &[Arc<dyn Layer>],
        granted: Option<&[String]>,
    ) -> bool {
        let required = self.required_scopes(method, own);
        required.is_empty()
            || granted.is_some_and(|g| required.iter().all(|r| g.iter().any(|s| s == r)))
    }

    /// Runs `endpoint` inside the layers that apply to `call`, `own` being its target's.
    pub(crate) fn run<'a>(
        &'a self,
        call: &'a Call<'a>,
        own: &'a [Arc<dyn Layer>],
        endpoint: BoxFuture<'a, Reply>,
    ) -> BoxFuture<'a, Reply> {
        Next {
            groups: self.groups(call.method, own),
            call,
            endpoint,
        }
        .run()
    }
}

/// An error a layer answers with: `code`, `message`, and `data`.
pub(crate) fn refusal(code: ErrorCode, message: String, data: serde_json::Value) -> ErrorObject {
    ErrorObject::new(code, message).with_data(data)
}

#[cfg(test)]
mod tests;
