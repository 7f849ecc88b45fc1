//! The low-level `Server`: a name, one async handler per method, and the switches that shape
//! what it advertises. `on_call_tool`, `on_get_prompt` and `on_read_resource` answer an
//! [`Outcome`] (complete or `input_required`); every other handler answers its plain result, so
//! returning `input_required` anywhere else does not compile.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcp_state_seal::{ConfigError, RequestStateSecurity, SealingBoundary};
use mcp_types::capabilities::{ListChangedCapability, ResourcesCapability, ServerCapabilities};
use mcp_types::common::PaginatedRequestParams;
use mcp_types::completion::{CompleteRequestParams, CompleteResult};
use mcp_types::lifecycle::Implementation;
use mcp_types::mrtr::Outcome;
use mcp_types::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult};
use mcp_types::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, ResourceUriParams,
};
use mcp_types::tools::{CallToolRequestParams, CallToolResult, ListToolsResult};
use mcp_types::{JsonObject, methods};

use crate::context::RequestContext;
use crate::extension::{Extension, ExtensionMethod, Extensions};
use crate::futures::{BoxFuture, HandlerResult};
use crate::limits::SessionLimits;
use crate::stamp::CacheHints;
use mcp_types::param_header::ParamHeader;

pub(crate) type Handler<P, R> =
    Arc<dyn Fn(RequestContext, P) -> BoxFuture<'static, HandlerResult<R>> + Send + Sync>;

fn boxed<P, R, F, Fut>(f: F) -> Handler<P, R>
where
    F: Fn(RequestContext, P) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HandlerResult<R>> + Send + 'static,
{
    Arc::new(move |ctx, params| Box::pin(f(ctx, params)))
}

#[derive(Default, Clone)]
pub(crate) struct Handlers {
    pub(crate) list_tools: Option<Handler<PaginatedRequestParams, ListToolsResult>>,
    pub(crate) call_tool: Option<Handler<CallToolRequestParams, Outcome<CallToolResult>>>,
    pub(crate) list_prompts: Option<Handler<PaginatedRequestParams, ListPromptsResult>>,
    pub(crate) get_prompt: Option<Handler<GetPromptRequestParams, Outcome<GetPromptResult>>>,
    pub(crate) list_resources: Option<Handler<PaginatedRequestParams, ListResourcesResult>>,
    pub(crate) list_resource_templates:
        Option<Handler<PaginatedRequestParams, ListResourceTemplatesResult>>,
    pub(crate) read_resource:
        Option<Handler<ReadResourceRequestParams, Outcome<ReadResourceResult>>>,
    pub(crate) complete: Option<Handler<CompleteRequestParams, CompleteResult>>,
    pub(crate) subscribe: Option<Handler<ResourceUriParams, ()>>,
    pub(crate) unsubscribe: Option<Handler<ResourceUriParams, ()>>,
}

/// How long a legacy server-to-client request waits for its answer unless configured.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// A low-level MCP server: one handler per method, both protocol eras.
///
/// ```
/// use mcp_server_core::Server;
/// use mcp_types::tools::{CallToolResult, ListToolsResult};
/// use mcp_types::mrtr::Outcome;
///
/// let server = Server::new("echo")
///     .version("1.0.0")
///     .on_list_tools(|_ctx, _params| async { Ok(ListToolsResult::default()) })
///     .on_call_tool(|_ctx, params| async move {
///         let text = params.arguments.and_then(|a| a.get("text").cloned()).unwrap_or_default();
///         Ok(Outcome::Complete(CallToolResult::text(text.to_string())))
///     });
/// assert!(server.capabilities().tools.is_some());
/// assert!(server.capabilities().prompts.is_none());
/// ```
pub struct Server {
    pub(crate) info: std::sync::Arc<Implementation>,
    pub(crate) instructions: Option<String>,
    pub(crate) handlers: Handlers,
    pub(crate) change_notifications: bool,
    pub(crate) logging: bool,
    pub(crate) boundary: Option<Arc<SealingBoundary>>,
    pub(crate) request_timeout: Duration,
    pub(crate) cache: CacheHints,
    pub(crate) discover_cache: CacheHints,
    pub(crate) limits: SessionLimits,
    /// Every tool's facts: its `x-mcp-header` annotations, task support, layers, handler.
    pub(crate) tools: crate::tools::ToolTable,
    pub(crate) update_filter: Option<UpdateFilter>,
    pub(crate) tasks: Option<crate::tasks::TaskEngine>,
    pub(crate) extensions: Extensions,
    pub(crate) extension_methods: HashMap<String, ExtensionMethod>,
    /// The prompts a registry registered: the names a metric may carry (see `otel::Known`);
    /// a request naming any other is counted as `_OTHER` (tools: [`Server::tools`]).
    pub(crate) known_prompts: std::collections::HashSet<String>,
    pub(crate) policy: crate::policy::Policy,
    pub(crate) fleet: Option<crate::fleet::Fleet>,
    /// The application state every request's context shares ([`Server::with_state`]).
    pub(crate) state: crate::state::StateMap,
}

/// Decides whether a subscriber (by its principal) may learn that a resource changed.
pub(crate) type UpdateFilter =
    Arc<dyn Fn(Option<&mcp_state_seal::Principal>, &str) -> bool + Send + Sync>;

impl crate::known::KnownNames for Server {
    fn serves_extension_method(&self, method: &str) -> bool {
        self.extension_methods.contains_key(method)
    }

    fn serves_tool(&self, name: &str) -> bool {
        self.tools.named(name).is_some_and(|t| t.registered)
    }

    fn serves_prompt(&self, name: &str) -> bool {
        self.known_prompts.contains(name)
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.info)
            .field("capabilities", &self.capabilities())
            .field("sealing", &self.boundary.is_some())
            .finish_non_exhaustive()
    }
}

macro_rules! setter {
    ($(#[$doc:meta])* $name:ident, $field:ident, $params:ty, $result:ty) => {
        $(#[$doc])*
        pub fn $name<F, Fut>(mut self, handler: F) -> Self
        where
            F: Fn(RequestContext, $params) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = HandlerResult<$result>> + Send + 'static,
        {
            self.handlers.$field = Some(boxed(handler));
            self
        }
    };
}

impl Server {
    /// A server named `name` (version `0.0.0` until set), with no handlers.
    pub fn new(name: impl Into<String>) -> Self {
        Server {
            info: std::sync::Arc::new(Implementation::new(name, "0.0.0")),
            instructions: None,
            handlers: Handlers::default(),
            change_notifications: false,
            logging: false,
            boundary: None,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            cache: CacheHints::default(),
            discover_cache: CacheHints::default(),
            limits: SessionLimits::default(),
            tools: Default::default(),
            update_filter: None,
            tasks: None,
            extensions: Extensions::default(),
            extension_methods: HashMap::new(),
            known_prompts: Default::default(),
            policy: crate::policy::Policy::default(),
            fleet: None,
            state: crate::state::StateMap::default(),
        }
    }

    /// Gives the server a value of application state (a database pool, a store): every
    /// handler reaches it with [`RequestContext::state`](crate::RequestContext::state), and
    /// annotated functions with a [`State<T>`](crate::State) parameter. One value per type; the
    /// same type again replaces the value.
    pub fn with_state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.state.insert(value);
        self
    }

    /// Makes this server instance one of a fleet (see [`crate::fleet`]): 2025-11-25 sessions
    /// live in the fleet's session store, so any instance serves any request of any session;
    /// change notifications raised here reach the subscribers of every instance; a client's
    /// answer to a question this instance asked finds its way back from whichever instance
    /// received it. Without it everything stays in this process.
    ///
    /// A task this instance runs is leased under its member name, so a task whose instance
    /// died fails naming it: "The worker running this task (i2~9d72d840) was lost".
    pub fn fleet(mut self, fleet: crate::fleet::Fleet) -> Self {
        if let Some(tasks) = &self.tasks {
            tasks.name_worker(fleet.member());
        }
        self.fleet = Some(fleet);
        self
    }

    /// Advertises extension `id` with these settings under `capabilities.extensions`, in
    /// `server/discover` and in the 2025-11-25 `initialize` result alike (`{}` declares
    /// support with no optional features). Serve its methods with
    /// [`on_extension_request`](Self::on_extension_request), or build an [`Extension`] and
    /// give it to [`with_extension`](Self::with_extension) to bind methods and fields to it.
    pub fn extension(self, id: impl Into<String>, settings: JsonObject) -> Self {
        self.with_extension(Extension::unchecked(id.into()).settings(settings))
    }

    /// Serves `extension`: advertises it (see
    /// [`Extension::advertise_to_declaring_clients_only`]), routes its methods, and applies
    /// its fields and hidings to `tools/list` and `resources/list` per client. An extension
    /// with the same identifier is replaced; a method another extension serves is taken over.
    pub fn with_extension(mut self, extension: Extension) -> Self {
        let (extension, methods) = self.extensions.add(extension);
        // The methods of an extension this one replaces go with it.
        self.extension_methods
            .retain(|_, m| m.owner.as_ref().is_none_or(|o| o.id() != extension.id()));
        for (method, handler, cacheable) in methods {
            self.extension_methods.insert(
                method,
                ExtensionMethod {
                    handler,
                    cacheable,
                    owner: Some(extension.clone()),
                    requires: extension.requires_declaration().then(|| extension.clone()),
                },
            );
        }
        self
    }

    /// Handles `method`, a request an extension adds (`skills/list`...), on both eras. The
    /// handler gets the params as an object (`{}` when the request has none, `_meta` removed:
    /// the context carries it) and answers the result object; on 2026-07-28 the engine adds
    /// `resultType` and the server's identity, as on every result. Params that are not an
    /// object answer `-32602`. A method the core protocol defines is never routed here.
    pub fn on_extension_request<F, Fut>(self, method: impl Into<String>, handler: F) -> Self
    where
        F: Fn(RequestContext, JsonObject) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<JsonObject>> + Send + 'static,
    {
        self.extension_method(method.into(), false, boxed(handler))
    }

    /// [`on_extension_request`](Self::on_extension_request) for a method whose result is
    /// cacheable: on 2026-07-28 it also gets the [`cache_hints`](Self::cache_hints) as `ttlMs`
    /// and `cacheScope` where the handler set none (on 2025-11-25 both are removed).
    pub fn on_cacheable_extension_request<F, Fut>(
        self,
        method: impl Into<String>,
        handler: F,
    ) -> Self
    where
        F: Fn(RequestContext, JsonObject) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<JsonObject>> + Send + 'static,
    {
        self.extension_method(method.into(), true, boxed(handler))
    }

    fn extension_method(
        mut self,
        method: String,
        cacheable: bool,
        handler: Handler<JsonObject, JsonObject>,
    ) -> Self {
        self.extension_methods.insert(
            method,
            ExtensionMethod {
                handler: crate::extension::Method::Object(handler),
                cacheable,
                owner: None,
                requires: None,
            },
        );
        self
    }

    /// Asks `filter(principal, uri)` before each `notifications/resources/updated` goes to a
    /// subscriber (a legacy `resources/subscribe` session or a `subscriptions/listen` stream):
    /// a subscription to a prefix such as `file:` covers every URI below it, so a server with
    /// several tenants says here who may hear about what. Without a filter every covered
    /// update is delivered.
    pub fn resource_update_filter<F>(mut self, filter: F) -> Self
    where
        F: Fn(Option<&mcp_state_seal::Principal>, &str) -> bool + Send + Sync + 'static,
    {
        self.update_filter = Some(Arc::new(filter));
        self
    }

    /// What one session may make the server hold (subscriptions, `initialize` size, queued
    /// notifications, requests at once); see [`SessionLimits`] for each default and refusal.
    pub fn session_limits(mut self, limits: SessionLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Records the `x-mcp-header` annotations of tool `tool`'s input schema, so an HTTP
    /// transport checks each `Mcp-Param-*` header against its argument (400, -32020). The
    /// high-level `McpServer` does this for every tool it registers, and refuses to build with
    /// an invalid annotation. Here an invalid one is logged and no header is checked for the
    /// tool: conforming clients leave such a tool out of their lists, so none sends them.
    pub fn tool_input_schema(mut self, tool: impl Into<String>, schema: &JsonObject) -> Self {
        let tool = tool.into();
        let headers = match ParamHeader::read_all(schema) {
            Ok(headers) if !headers.is_empty() => Some(headers.into()),
            Ok(_) => None,
            Err(why) => {
                tracing::warn!(%tool, %why, "conforming clients will not list this tool: its x-mcp-header annotations are invalid");
                None
            }
        };
        self.tools.update(tool, |t| t.param_headers = headers);
        self
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// Sets the version reported in `serverInfo`.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        std::sync::Arc::make_mut(&mut self.info).version = version.into();
        self
    }

    /// Sets the display title reported in `serverInfo`.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        std::sync::Arc::make_mut(&mut self.info).title = Some(title.into());
        self
    }

    /// Sets the instructions returned by `server/discover` and `initialize`.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Serves change notifications: `listChanged` on every list capability,
    /// `resources.subscribe`, `subscriptions/listen` (2026-07-28) and the legacy
    /// `resources/subscribe`. Announce changes through [`Service::notifier`](crate::Service::notifier).
    pub fn change_notifications(mut self, enabled: bool) -> Self {
        self.change_notifications = enabled;
        self
    }

    /// Advertises the (deprecated) `logging` capability; handlers log with
    /// [`RequestContext::log`].
    pub fn logging(mut self, enabled: bool) -> Self {
        self.logging = enabled;
        self
    }

    /// Wraps every request (but `subscriptions/listen`, a stream) in `layer`, outside the
    /// layers of a method or a tool. See [`policy`](crate::policy).
    pub fn layer(mut self, layer: impl crate::policy::Layer) -> Self {
        self.policy.add_everywhere(Arc::new(layer));
        self
    }

    /// Wraps every `method` request in `layer`, inside the server's layers and outside a
    /// tool's.
    pub fn method_layer(
        mut self,
        method: impl Into<String>,
        layer: impl crate::policy::Layer,
    ) -> Self {
        self.policy.add_method(method.into(), Arc::new(layer));
        self
    }

    /// Wraps every `tools/call` of the tool `name` in `layer`, innermost.
    pub fn tool_layer(mut self, name: impl Into<String>, layer: impl crate::policy::Layer) -> Self {
        self.tools.update(name, |t| t.layers.push(Arc::new(layer)));
        self
    }

    /// Wraps every `prompts/get` of the prompt `name` in `layer`, innermost.
    pub fn prompt_layer(
        mut self,
        name: impl Into<String>,
        layer: impl crate::policy::Layer,
    ) -> Self {
        self.policy.add_target(
            mcp_types::methods::PROMPTS_GET,
            name.into(),
            Arc::new(layer),
        );
        self
    }

    /// Wraps every `resources/read` of the resource `uri` (exactly; a template's reads are
    /// reached with [`method_layer`](Self::method_layer)) in `layer`, innermost.
    pub fn resource_layer(
        mut self,
        uri: impl Into<String>,
        layer: impl crate::policy::Layer,
    ) -> Self {
        self.policy.add_target(
            mcp_types::methods::RESOURCES_READ,
            uri.into(),
            Arc::new(layer),
        );
        self
    }

    /// Leaves out of a caller's `tools/list` the tools whose layers require a scope its token
    /// does not grant (default: every tool is listed, and a call without the scope is refused).
    /// The list then differs by caller, so it is never marked `public` for shared caches.
    pub fn hide_unauthorized_tools(mut self, hide: bool) -> Self {
        self.policy.hide_unauthorized_tools(hide);
        self
    }

    /// How long a legacy server-to-client request waits for its answer (default 300 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The caching hints put on cacheable results whose handler set none (default
    /// `ttlMs: 0, cacheScope: "private"`).
    pub fn cache_hints(mut self, hints: CacheHints) -> Self {
        self.cache = hints;
        self
    }

    /// The caching hints of `server/discover` (default `ttlMs: 0, cacheScope: "private"`).
    pub fn discover_cache_hints(mut self, hints: CacheHints) -> Self {
        self.discover_cache = hints;
        self
    }

    /// Opts in to sealing: from now on every outgoing `requestState` is sealed, bound to the
    /// request, the principal and a time window, and every incoming one on `tools/call`,
    /// `prompts/get` and `resources/read` is verified before the handler runs (even for
    /// handlers that never emit state). A failure answers exactly
    /// `-32602 "Invalid or expired requestState"`. The server's name is the default audience.
    ///
    /// Without this, a low-level server passes `requestState` through verbatim.
    pub fn request_state_security(
        mut self,
        security: RequestStateSecurity,
    ) -> Result<Self, ConfigError> {
        self.boundary = Some(Arc::new(security.bind(Some(&self.info.name))?));
        Ok(self)
    }

    /// Serves the Tasks extension (`io.modelcontextprotocol/tasks`) with these settings:
    /// advertises it in `server/discover`, serves `tasks/get`, `tasks/update` and
    /// `tasks/cancel`, and lets the tools registered with
    /// [`tool_task_support`](Self::tool_task_support) become tasks (their handler calls
    /// [`RequestContext::run_as_task`]). See [`crate::tasks`].
    pub fn tasks(mut self, config: crate::tasks::TaskConfig) -> Self {
        let engine = crate::tasks::TaskEngine::new(config);
        if let Some(fleet) = &self.fleet {
            engine.name_worker(fleet.member());
        }
        self.tasks = Some(engine.clone());
        // 2025-11-25 has its own core tasks: the extension is advertised on 2026-07-28 only.
        // Its three methods are the extension's, as a third party's would be: typed, scoped to
        // the caller the context names (decoded from the raw params and stamped in one pass,
        // where `typed_request` goes through a JSON object).
        let (get, update, cancel) = (engine.clone(), engine.clone(), engine);
        let tasks = Extension::unchecked(mcp_types::ext::tasks::EXTENSION_ID.to_owned())
            .settings(mcp_types::ext::tasks::capability())
            .modern_only()
            .stamped_request(
                methods::TASKS_GET,
                move |ctx, params: mcp_types::tasks::TaskIdParams| {
                    get.get(ctx.task_caller(), params)
                },
            )
            .stamped_request(
                methods::TASKS_UPDATE,
                move |ctx, params: mcp_types::ext::tasks::UpdateTaskParams| {
                    let engine = update.clone();
                    async move { engine.update(ctx.task_caller(), params).await }
                },
            )
            .stamped_request(
                methods::TASKS_CANCEL,
                move |ctx, params: mcp_types::tasks::TaskIdParams| {
                    let engine = cancel.clone();
                    async move { engine.cancel(ctx.task_caller(), params).await }
                },
            );
        self.with_extension(tasks)
    }

    /// Declares whether tool `name` runs as a task (default [`TaskSupport::Forbidden`]).
    /// With `Required`, a 2026-07-28 call that does not declare the extension answers
    /// `-32021` before the handler runs.
    ///
    /// [`TaskSupport::Forbidden`]: crate::tasks::TaskSupport::Forbidden
    pub fn tool_task_support(
        mut self,
        name: impl Into<String>,
        support: crate::tasks::TaskSupport,
    ) -> Self {
        self.tools.update(name, |t| t.task = support);
        self
    }

    /// Whether sealing is on.
    pub fn seals_request_state(&self) -> bool {
        self.boundary.is_some()
    }

    setter!(
        /// Handles `tools/list`.
        on_list_tools, list_tools, PaginatedRequestParams, ListToolsResult
    );
    /// Handles `tools/call`: a complete result or `input_required`. On a server an
    /// [`McpServer`](crate::registry::McpServer) built, it replaces the handlers of the tools
    /// it registered: this handler then answers every call.
    pub fn on_call_tool<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(RequestContext, CallToolRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<Outcome<CallToolResult>>> + Send + 'static,
    {
        self.handlers.call_tool = Some(boxed(handler));
        self.tools.drop_handlers();
        self
    }
    setter!(
        /// Handles `prompts/list`.
        on_list_prompts, list_prompts, PaginatedRequestParams, ListPromptsResult
    );
    setter!(
        /// Handles `prompts/get`: a complete result or `input_required`.
        on_get_prompt, get_prompt, GetPromptRequestParams, Outcome<GetPromptResult>
    );
    setter!(
        /// Handles `resources/list`.
        on_list_resources, list_resources, PaginatedRequestParams, ListResourcesResult
    );
    setter!(
        /// Handles `resources/templates/list`.
        on_list_resource_templates, list_resource_templates, PaginatedRequestParams, ListResourceTemplatesResult
    );
    setter!(
        /// Handles `resources/read`: a complete result or `input_required`.
        on_read_resource, read_resource, ReadResourceRequestParams, Outcome<ReadResourceResult>
    );
    setter!(
        /// Handles `completion/complete`.
        on_complete, complete, CompleteRequestParams, CompleteResult
    );
    setter!(
        /// Called on a legacy `resources/subscribe` (after the session records it).
        on_subscribe, subscribe, ResourceUriParams, ()
    );
    setter!(
        /// Called on a legacy `resources/unsubscribe` (after the session forgets it).
        on_unsubscribe, unsubscribe, ResourceUriParams, ()
    );

    /// The layers of `target` itself under `method`: a tool's from the tool table, a
    /// prompt's or a resource's from the policy.
    pub(crate) fn layers_of(
        &self,
        method: &str,
        target: Option<&str>,
    ) -> &[Arc<dyn crate::policy::Layer>] {
        match (method, target) {
            (methods::TOOLS_CALL, Some(tool)) => {
                self.tools.named(tool).map_or(&[], |t| t.layers.as_slice())
            }
            _ => self.policy.target_layers(method, target),
        }
    }

    /// Whether any layer wraps any request.
    pub(crate) fn has_layers(&self) -> bool {
        !self.policy.is_empty() || self.tools.any_layers()
    }

    /// Whether any layer requires a scope.
    pub(crate) fn requires_scopes(&self) -> bool {
        self.policy.requires_scopes() || self.tools.any_scoped_layers()
    }

    pub(crate) fn serves_tools(&self) -> bool {
        self.handlers.list_tools.is_some() || self.handlers.call_tool.is_some()
    }

    pub(crate) fn serves_prompts(&self) -> bool {
        self.handlers.list_prompts.is_some() || self.handlers.get_prompt.is_some()
    }

    pub(crate) fn serves_resources(&self) -> bool {
        self.handlers.list_resources.is_some()
            || self.handlers.list_resource_templates.is_some()
            || self.handlers.read_resource.is_some()
    }

    /// The capabilities `server/discover` advertises, derived from the handlers registered.
    pub fn capabilities(&self) -> ServerCapabilities {
        let list_changed = || ListChangedCapability {
            list_changed: Some(self.change_notifications),
            extra: JsonObject::new(),
        };
        ServerCapabilities {
            tools: self.serves_tools().then(list_changed),
            prompts: self.serves_prompts().then(list_changed),
            resources: self.serves_resources().then(|| ResourcesCapability {
                subscribe: Some(self.change_notifications),
                list_changed: Some(self.change_notifications),
                extra: JsonObject::new(),
            }),
            completions: self.handlers.complete.is_some().then(JsonObject::new),
            logging: self.logging.then(JsonObject::new),
            extensions: {
                let extensions = self.extensions.advertised(false);
                (!extensions.is_empty()).then_some(extensions)
            },
            ..ServerCapabilities::default()
        }
    }
}
