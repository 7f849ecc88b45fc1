//! Extensions (SEP-2133): a capability under `capabilities.extensions["<prefix>/<name>"]`, off
//! unless both sides declare it, and what it adds to the protocol: its own methods, fields on the
//! tools `tools/list` returns, tools and resources only a declaring client is shown.
//!
//! An [`Extension`] is a value a crate builds and hands to [`Server::with_extension`] or
//! [`McpServer::extension`]; the Skills extension is installed the same way. Negotiation is per
//! request on 2026-07-28 (the request's `clientCapabilities`) and per session on 2025-11-25 (the
//! `initialize` capabilities); a handler asks with [`RequestContext::extension`].
//!
//! [`Server::with_extension`]: crate::Server::with_extension
//! [`McpServer::extension`]: crate::registry::McpServer::extension
//! [`RequestContext::extension`]: crate::RequestContext::extension

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use mcp_types::capabilities::ClientCapabilities;
use mcp_types::lifecycle::Implementation;
use mcp_types::resources::Resource;
use mcp_types::tools::Tool;
use mcp_types::version::Era;
use mcp_types::{ClientRequest, ErrorObject, JsonObject};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::context::RequestContext;
use crate::futures::{BoxFuture, HandlerResult};
use crate::stamp::{CacheHints, Stamp, Stamped};

/// How an extension's method is served.
#[derive(Clone)]
pub(crate) enum Method {
    /// On the params as a JSON object, answering a JSON object the dispatcher stamps
    /// (`request`, `cacheable_request`, `typed_request`).
    Object(
        Arc<
            dyn Fn(RequestContext, JsonObject) -> BoxFuture<'static, HandlerResult<JsonObject>>
                + Send
                + Sync,
        >,
    ),
    /// On the raw params, answering the result already stamped and encoded: the SDK's own
    /// typed methods (Tasks'), which skip the round trip through a JSON object.
    Raw(RawMethod),
}

/// Params the core's own decode of a request already produced: a method the wire types know
/// (the Tasks extension's) is not decoded a second time, `_meta` included.
pub(crate) trait FromRequest: Sized {
    /// These params, when `request` carries them.
    fn from_request(request: ClientRequest) -> Option<Self>;
}

impl FromRequest for mcp_types::tasks::TaskIdParams {
    fn from_request(request: ClientRequest) -> Option<Self> {
        match request {
            ClientRequest::GetTask(p) | ClientRequest::CancelTask(p) => Some(p),
            _ => None,
        }
    }
}

impl FromRequest for mcp_types::ext::tasks::UpdateTaskParams {
    fn from_request(request: ClientRequest) -> Option<Self> {
        match request {
            ClientRequest::UpdateTask(p) => Some(p),
            _ => None,
        }
    }
}

/// A [`Method::Raw`] handler: the params as they came (and as the core decoded them, when it
/// knows the method), the server's identity to stamp with.
pub(crate) type RawMethod = Arc<
    dyn Fn(
            RequestContext,
            Option<&RawValue>,
            Option<ClientRequest>,
            Identity,
        ) -> BoxFuture<'static, HandlerResult<Box<RawValue>>>
        + Send
        + Sync,
>;
type Accepts = Arc<dyn Fn(&JsonObject) -> bool + Send + Sync>;

/// The server's identity, for a [`RawMethod`] to stamp its result with: as a value, and as
/// the `_meta` that holds only it, already serialized ([`crate::stamp::server_info_bytes`]),
/// for a result that copies it in.
#[derive(Clone)]
pub(crate) struct Identity {
    pub(crate) info: Arc<Implementation>,
    pub(crate) meta: Arc<RawValue>,
}

/// A method an extension adds: its handler, whether its result is cacheable (gets `ttlMs` and
/// `cacheScope` on 2026-07-28 when the handler set none), the extension it belongs to (none
/// for `Server::on_extension_request`), and that extension again when a client must declare it
/// to call the method.
#[derive(Clone)]
pub(crate) struct ExtensionMethod {
    pub(crate) handler: Method,
    pub(crate) cacheable: bool,
    pub(crate) owner: Option<Arc<Extension>>,
    pub(crate) requires: Option<Arc<Extension>>,
}

/// Why an extension identifier was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionIdError {
    id: String,
    why: &'static str,
}

impl fmt::Display for ExtensionIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not an extension identifier: {} (the form is `<prefix>/<name>`, e.g. `com.example/stamps`)",
            self.id, self.why
        )
    }
}

impl std::error::Error for ExtensionIdError {}

/// Whether `id` follows the `_meta` key grammar with its prefix mandatory: dot-separated labels
/// (a letter first, a letter or digit last, letters, digits and `-` between), `/`, then a name
/// (alphanumeric at both ends; `-`, `_`, `.` and alphanumerics between).
fn check_id(id: &str) -> Result<(), &'static str> {
    let Some((prefix, name)) = id.split_once('/') else {
        return Err("it has no `<prefix>/`");
    };
    for label in prefix.split('.') {
        let bytes = label.as_bytes();
        let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
            return Err("a label of its prefix is empty");
        };
        if !first.is_ascii_alphabetic() || !last.is_ascii_alphanumeric() {
            return Err(
                "a label of its prefix must start with a letter and end with a letter or digit",
            );
        }
        if !bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        {
            return Err(
                "a label of its prefix holds a character other than letters, digits and `-`",
            );
        }
    }
    let bytes = name.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return Err("its name is empty");
    };
    if !first.is_ascii_alphanumeric() || !last.is_ascii_alphanumeric() {
        return Err("its name must start and end with a letter or digit");
    }
    if !bytes
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err("its name holds a character other than letters, digits, `-`, `_` and `.`");
    }
    Ok(())
}

/// An extension a server serves: its identifier and settings, and what it binds.
///
/// ```
/// use mcp_server_core::{Extension, Server};
/// use serde_json::json;
///
/// let stamps = Extension::new("com.example/stamps")?
///     .request("stamps/count", |_ctx, _params| async {
///         Ok(json!({"count": 3}).as_object().cloned().unwrap_or_default())
///     })
///     .tool_meta("book_table", "com.example/stamp", json!({"ink": "red"}));
/// let server = Server::new("bistro").with_extension(stamps);
/// assert!(server.capabilities().extensions.unwrap().contains_key("com.example/stamps"));
/// # Ok::<(), mcp_server_core::ExtensionIdError>(())
/// ```
pub struct Extension {
    id: String,
    settings: JsonObject,
    declaring_only: bool,
    modern_only: bool,
    accepts: Option<Accepts>,
    methods_require_declaration: bool,
    pub(crate) methods: Vec<(String, Method, bool)>,
    tool_meta: BTreeMap<String, JsonObject>,
    hidden_tools: BTreeSet<String>,
    hidden_resources: BTreeSet<String>,
}

impl fmt::Debug for Extension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extension")
            .field("id", &self.id)
            .field("settings", &self.settings)
            .field(
                "methods",
                &self.methods.iter().map(|m| &m.0).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Extension {
    /// An extension named `id` (`<prefix>/<name>`, the prefix mandatory, e.g.
    /// `io.modelcontextprotocol/ui`), with empty settings and nothing bound.
    pub fn new(id: impl Into<String>) -> Result<Self, ExtensionIdError> {
        let id = id.into();
        match check_id(&id) {
            Ok(()) => Ok(Self::unchecked(id)),
            Err(why) => Err(ExtensionIdError { id, why }),
        }
    }

    pub(crate) fn unchecked(id: String) -> Self {
        Extension {
            id,
            settings: JsonObject::new(),
            declaring_only: false,
            modern_only: false,
            accepts: None,
            methods_require_declaration: false,
            methods: Vec::new(),
            tool_meta: BTreeMap::new(),
            hidden_tools: BTreeSet::new(),
            hidden_resources: BTreeSet::new(),
        }
    }

    /// The identifier.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The settings advertised under `capabilities.extensions[id]` (default `{}`: supported,
    /// with no optional features).
    pub fn settings(mut self, settings: JsonObject) -> Self {
        self.settings = settings;
        self
    }

    /// Advertises the extension in `server/discover` and `initialize` only to a client that
    /// declared it, so a client that did not sees exactly what a server without it answers. By
    /// default every client is told (SEP-2133's advertisement).
    pub fn advertise_to_declaring_clients_only(mut self) -> Self {
        self.declaring_only = true;
        self
    }

    /// Leaves the extension out of the 2025-11-25 `initialize` result (its capabilities have no
    /// `extensions` field) and of the negotiation there: a legacy session never has it.
    pub fn modern_only(mut self) -> Self {
        self.modern_only = true;
        self
    }

    /// What the client's declared settings must satisfy for the extension to count as
    /// negotiated (default: declared at all). MCP Apps, for one, needs its MIME type among
    /// the client's `mimeTypes`.
    pub fn accepts(
        mut self,
        accepts: impl Fn(&JsonObject) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.accepts = Some(Arc::new(accepts));
        self
    }

    /// Makes the extension's methods answer a client that did not declare it: `-32021` with
    /// `data.requiredCapabilities.extensions[id] = {}` on 2026-07-28, `-32601` on 2025-11-25
    /// (what a server without the extension answers). By default they answer every client.
    pub fn methods_require_declaration(mut self) -> Self {
        self.methods_require_declaration = true;
        self
    }

    /// Serves `method`, a request the extension adds, on both eras: the handler gets the params
    /// as an object (`{}` when there are none, `_meta` removed: the context carries it) and
    /// answers the result object, which the engine stamps as it stamps every result. Params
    /// that are not an object answer `-32602`. A method the core protocol defines is never
    /// routed here.
    pub fn request<F, Fut>(self, method: impl Into<String>, handler: F) -> Self
    where
        F: Fn(RequestContext, JsonObject) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<JsonObject>> + Send + 'static,
    {
        self.method(method.into(), false, boxed(handler))
    }

    /// [`request`](Self::request) for a method whose result is cacheable: on 2026-07-28 it
    /// also gets the server's cache hints as `ttlMs` and `cacheScope` where the handler set
    /// none (on 2025-11-25 both are removed).
    pub fn cacheable_request<F, Fut>(self, method: impl Into<String>, handler: F) -> Self
    where
        F: Fn(RequestContext, JsonObject) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<JsonObject>> + Send + 'static,
    {
        self.method(method.into(), true, boxed(handler))
    }

    /// [`request`](Self::request) with typed params and result: the params are decoded into
    /// `P` (`-32602` naming what does not fit), and `R` is encoded as the result object (a
    /// result that is not a JSON object is `-32603`). Like every handler it gets the
    /// [`RequestContext`], whose [`principal`](RequestContext::principal) is the caller as
    /// the server identifies it on every extension request (the transport's authentication,
    /// or the sealing boundary's binding), so a method that keeps per-caller state (the Tasks
    /// extension's `tasks/get` and `tasks/cancel` do) scopes it there.
    ///
    /// ```
    /// use mcp_server_core::{Extension, Server};
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Deserialize)]
    /// struct CountParams { stamp: String }
    /// #[derive(Serialize)]
    /// struct CountResult { count: u32 }
    ///
    /// let stamps = Extension::new("com.example/stamps")?.typed_request(
    ///     "stamps/count",
    ///     |ctx, params: CountParams| async move {
    ///         let mine = ctx.principal().is_some();
    ///         Ok(CountResult { count: if mine { params.stamp.len() as u32 } else { 0 } })
    ///     },
    /// );
    /// let server = Server::new("bistro").with_extension(stamps);
    /// # drop(server);
    /// # Ok::<(), mcp_server_core::ExtensionIdError>(())
    /// ```
    pub fn typed_request<P, R, F, Fut>(self, method: impl Into<String>, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        R: Serialize + Send + 'static,
        F: Fn(RequestContext, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<R>> + Send + 'static,
    {
        let method = method.into();
        let name: Arc<str> = method.clone().into();
        let handler = Arc::new(handler);
        self.request(method, move |ctx, params| {
            let (name, handler) = (name.clone(), handler.clone());
            async move {
                let params: P = serde_json::from_value(Value::Object(params)).map_err(|e| {
                    ErrorObject::invalid_params(format!("invalid params for '{name}': {e}"))
                })?;
                match serde_json::to_value(handler(ctx, params).await?) {
                    Ok(Value::Object(result)) => Ok(result),
                    Ok(_) => Err(ErrorObject::internal(format!(
                        "the result of '{name}' is not a JSON object"
                    ))),
                    Err(e) => Err(ErrorObject::internal(format!(
                        "the result of '{name}' could not be encoded: {e}"
                    ))),
                }
            }
        })
    }

    /// A typed method whose result the SDK stamps itself ([`Stamped`]): the params are the
    /// ones the core already decoded when it knows the method ([`FromRequest`]), or else
    /// decoded straight from the request (`-32602` naming what does not fit), and the result
    /// encoded once, stamped for the request's era. The Tasks extension's methods use it.
    pub(crate) fn stamped_request<P, R, F, Fut>(self, method: &'static str, handler: F) -> Self
    where
        P: DeserializeOwned + FromRequest + Send + 'static,
        R: Stamped + Serialize + Send + 'static,
        F: Fn(RequestContext, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<R>> + Send + 'static,
    {
        let raw: RawMethod = Arc::new(move |ctx, params, typed, server_info| {
            let decoded = match (typed.and_then(P::from_request), params) {
                (Some(typed), _) => Ok(typed),
                (None, Some(raw)) => serde_json::from_str::<P>(raw.get()),
                (None, None) => serde_json::from_str::<P>("{}"),
            };
            let params = match decoded {
                Ok(params) => params,
                Err(e) => {
                    let error =
                        ErrorObject::invalid_params(format!("invalid params for '{method}': {e}"));
                    return Box::pin(std::future::ready(Err(error)));
                }
            };
            let era = ctx.era();
            let answer = handler(ctx, params);
            Box::pin(async move {
                let mut result = answer.await?;
                let written = match era {
                    Era::Modern => {
                        let stamp = Stamp {
                            server_info: &server_info.info,
                            cache: CacheHints::default(),
                        };
                        result.write_modern(&stamp, &server_info.meta)
                    }
                    Era::Legacy => {
                        result.strip_legacy();
                        serde_json::value::to_raw_value(&result)
                    }
                };
                written.map_err(|e| {
                    tracing::warn!(method, error = %e, "an extension's result could not be encoded");
                    ErrorObject::internal("Internal error")
                })
            })
        });
        self.method(method.to_owned(), false, Method::Raw(raw))
    }

    fn method(mut self, method: String, cacheable: bool, handler: Method) -> Self {
        self.methods.retain(|m| m.0 != method);
        self.methods.push((method, handler, cacheable));
        self
    }

    /// Sets `_meta[key] = value` on tool `tool` in `tools/list`, for a client that negotiated
    /// the extension only (e.g. MCP Apps' `ui` with its `resourceUri`).
    pub fn tool_meta(
        mut self,
        tool: impl Into<String>,
        key: impl Into<String>,
        value: Value,
    ) -> Self {
        self.tool_meta
            .entry(tool.into())
            .or_default()
            .insert(key.into(), value);
        self
    }

    /// Lists tool `tool` in `tools/list` only to a client that negotiated the extension (e.g.
    /// an MCP Apps tool only its app calls).
    pub fn tool_for_declaring_clients_only(mut self, tool: impl Into<String>) -> Self {
        self.hidden_tools.insert(tool.into());
        self
    }

    /// Lists resource `uri` in `resources/list` only to a client that negotiated the
    /// extension. It stays readable by URI.
    pub fn resource_for_declaring_clients_only(mut self, uri: impl Into<String>) -> Self {
        self.hidden_resources.insert(uri.into());
        self
    }

    /// The tools the extension binds a field to or hides, by name.
    pub fn bound_tools(&self) -> impl Iterator<Item = &str> {
        self.tool_meta
            .keys()
            .chain(self.hidden_tools.iter())
            .map(String::as_str)
    }

    /// The resources the extension hides from clients that did not negotiate it.
    pub fn bound_resources(&self) -> impl Iterator<Item = &str> {
        self.hidden_resources.iter().map(String::as_str)
    }

    /// Whether a client that declared `caps` negotiated the extension: declared it, with
    /// settings it [`accepts`](Self::accepts).
    pub fn negotiated(&self, caps: &ClientCapabilities) -> bool {
        let Some(settings) = caps.extensions.as_ref().and_then(|e| e.get(&self.id)) else {
            return false;
        };
        self.accepts
            .as_ref()
            .is_none_or(|accepts| accepts(settings))
    }

    pub(crate) fn requires_declaration(&self) -> bool {
        self.methods_require_declaration
    }

    fn binds_lists(&self) -> bool {
        !self.tool_meta.is_empty()
            || !self.hidden_tools.is_empty()
            || !self.hidden_resources.is_empty()
    }

    /// The refusal of one of its methods to a client that did not declare the extension.
    pub(crate) fn not_declared(&self, method: &str, era: mcp_types::version::Era) -> ErrorObject {
        match era {
            mcp_types::version::Era::Modern => ErrorObject::missing_required_client_capability(
                format!(
                    "{method} needs the {} extension: declare it in this request's clientCapabilities.extensions",
                    self.id
                ),
                ClientCapabilities::default().with_extension(self.id.clone()),
            ),
            mcp_types::version::Era::Legacy => ErrorObject::method_not_found(method),
        }
    }
}

fn boxed<F, Fut>(f: F) -> Method
where
    F: Fn(RequestContext, JsonObject) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HandlerResult<JsonObject>> + Send + 'static,
{
    Method::Object(Arc::new(move |ctx, params| Box::pin(f(ctx, params))))
}

/// The extensions a server serves, once its methods are taken out: what each era advertises,
/// and the list fields and hidings applied per client.
#[derive(Default, Clone)]
pub(crate) struct Extensions {
    all: Vec<Arc<Extension>>,
}

impl Extensions {
    /// Adds `extension` (replacing one with the same identifier) and returns it shared, for its
    /// methods to name.
    pub(crate) fn add(
        &mut self,
        mut extension: Extension,
    ) -> (Arc<Extension>, Vec<(String, Method, bool)>) {
        let methods = std::mem::take(&mut extension.methods);
        let extension = Arc::new(extension);
        self.all.retain(|e| e.id != extension.id);
        self.all.push(extension.clone());
        (extension, methods)
    }

    /// What a server advertises to every client of an era, before per-client filtering.
    pub(crate) fn advertised(&self, legacy: bool) -> BTreeMap<String, JsonObject> {
        self.all
            .iter()
            .filter(|e| !(legacy && e.modern_only))
            .map(|e| (e.id.clone(), e.settings.clone()))
            .collect()
    }

    /// Whether any extension is advertised to declaring clients only, so the advertisement
    /// depends on the client.
    pub(crate) fn advertisement_varies(&self) -> bool {
        self.all.iter().any(|e| e.declaring_only)
    }

    /// Removes from `advertised` the extensions advertised to declaring clients only that this
    /// client did not negotiate.
    pub(crate) fn filter_advertised(
        &self,
        advertised: &mut Option<BTreeMap<String, JsonObject>>,
        caps: &ClientCapabilities,
    ) {
        if let Some(map) = advertised {
            for e in self.all.iter().filter(|e| e.declaring_only) {
                if !e.negotiated(caps) {
                    map.remove(&e.id);
                }
            }
            if map.is_empty() {
                *advertised = None;
            }
        }
    }

    /// The extensions' fields and hidings applied to one page of `tools/list`.
    pub(crate) fn apply_to_tools(&self, caps: &ClientCapabilities, tools: &mut Vec<Tool>) {
        for e in self.all.iter().filter(|e| e.binds_lists()) {
            if e.negotiated(caps) {
                for tool in tools.iter_mut() {
                    if let Some(fields) = e.tool_meta.get(&tool.name) {
                        let meta = tool.meta.get_or_insert_with(Default::default);
                        for (key, value) in fields {
                            meta.extra.insert(key.clone(), value.clone());
                        }
                    }
                }
            } else if !e.hidden_tools.is_empty() {
                tools.retain(|t| !e.hidden_tools.contains(&t.name));
            }
        }
    }

    /// The extensions' hidings applied to one page of `resources/list`.
    pub(crate) fn apply_to_resources(
        &self,
        caps: &ClientCapabilities,
        resources: &mut Vec<Resource>,
    ) {
        for e in self.all.iter().filter(|e| !e.hidden_resources.is_empty()) {
            if !e.negotiated(caps) {
                resources.retain(|r| !e.hidden_resources.contains(&r.uri));
            }
        }
    }

    /// Whether the lists need the per-client pass at all.
    pub(crate) fn bind_lists(&self) -> bool {
        self.all.iter().any(|e| e.binds_lists())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_follow_the_meta_key_grammar_with_a_prefix() {
        for ok in [
            "io.modelcontextprotocol/ui",
            "com.example/stamps",
            "a/b",
            "x-1.y2/n_a.m-e",
        ] {
            assert!(Extension::new(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("stamps", "it has no `<prefix>/`"),
            ("/stamps", "a label of its prefix is empty"),
            ("com..example/x", "a label of its prefix is empty"),
            (
                "1com/x",
                "a label of its prefix must start with a letter and end with a letter or digit",
            ),
            (
                "com-/x",
                "a label of its prefix must start with a letter and end with a letter or digit",
            ),
            (
                "c_m/x",
                "a label of its prefix holds a character other than letters, digits and `-`",
            ),
            ("com/", "its name is empty"),
            (
                "com/-x",
                "its name must start and end with a letter or digit",
            ),
            (
                "com/a b",
                "its name holds a character other than letters, digits, `-`, `_` and `.`",
            ),
            (
                "com/a/b",
                "its name holds a character other than letters, digits, `-`, `_` and `.`",
            ),
        ] {
            let err = Extension::new(bad).unwrap_err();
            assert_eq!(err.why, why, "{bad}");
        }
        assert_eq!(
            Extension::new("stamps").unwrap_err().to_string(),
            "`stamps` is not an extension identifier: it has no `<prefix>/` (the form is `<prefix>/<name>`, e.g. `com.example/stamps`)"
        );
    }

    #[test]
    fn negotiation_needs_the_declaration_and_accepted_settings() {
        let e = Extension::new("com.example/x")
            .unwrap()
            .accepts(|s| s.contains_key("ok"));
        assert!(!e.negotiated(&ClientCapabilities::default()));
        assert!(!e.negotiated(&ClientCapabilities::default().with_extension("com.example/x")));
        let caps = ClientCapabilities {
            extensions: Some(BTreeMap::from([(
                "com.example/x".to_owned(),
                serde_json::json!({"ok": true})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            )])),
            ..Default::default()
        };
        assert!(e.negotiated(&caps));
    }
}
