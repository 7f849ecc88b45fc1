//! The client: one connection, era negotiation, request/response correlation, the legacy
//! back-channel, and the automatic multi-round-trip loop.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_types::capabilities::{ClientCapabilities, ServerCapabilities};
use mcp_types::common::PaginatedRequestParams;
use mcp_types::discover::DiscoverResult;
use mcp_types::error::ErrorCode;
use mcp_types::lifecycle::{Implementation, InitializeRequestParams, InitializeResult};
use mcp_types::logging::LoggingLevel;
use mcp_types::meta::Meta;
use mcp_types::methods;
use mcp_types::mrtr::{
    InputRequest, InputResponse, InputResponses, Outcome, OutcomeError, RetryParams,
};
use mcp_types::notifications::CancelledParams;
use mcp_types::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt};
use mcp_types::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceTemplate,
};
use mcp_types::tools::{CallToolRequestParams, CallToolResult, ListToolsResult, Tool};
use mcp_types::version::{Era, ProtocolVersion};
use mcp_types::{
    ClientNotification, ClientResult, ErrorObject, JsonObject, JsonRpcError, JsonRpcMessage,
    JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, RequestId, ServerNotification,
    ServerRequest,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use crate::callbacks::{Callbacks, RequestInfo};
use crate::error::ClientError;
use crate::transport::Transport;

mod dispatch;
pub(crate) mod skills;
pub(crate) mod tasks;

use dispatch::Refusal;
pub use tasks::{TaskCall, TaskHandle, ToolLeg};

/// The stateless versions this client speaks, and the handshake versions a legacy server may
/// answer `initialize` with (oldest first; the client prefers the newest both sides know).
/// They come from the one version table, in `mcp_types::version`.
pub use mcp_types::version::{LEGACY_VERSIONS, MODERN_VERSIONS};

/// How the client picks the protocol era.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Mode {
    /// Probe with `server/discover`; fall back to `initialize` on any non-modern answer.
    #[default]
    Auto,
    /// Always `initialize` (2025-11-25).
    Legacy,
    /// Speak this stateless version without probing.
    Pinned(String),
}

/// The first legacy round's wait for a state-only `input_required`, doubling to the cap.
pub const BACKOFF_START: Duration = Duration::from_millis(50);
/// The longest wait between state-only rounds.
pub const BACKOFF_CAP: Duration = Duration::from_millis(250);
/// How many retries of one call the automatic loop sends unless configured.
pub const DEFAULT_MAX_ROUNDS: u32 = 10;
/// How long a request waits for its answer unless configured.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the `server/discover` probe waits before assuming a legacy server.
pub const DISCOVER_TIMEOUT: Duration = Duration::from_secs(10);
/// How many server-to-client requests (2025-11-25) are served at once unless configured.
pub const DEFAULT_MAX_SERVER_REQUESTS: usize = 16;
/// How many `inputRequests` one round may carry unless configured.
pub const DEFAULT_MAX_INPUT_REQUESTS: usize = 32;

/// What the client negotiated with the server.
#[derive(Debug, Clone)]
pub struct Negotiated {
    /// Modern or legacy.
    pub era: Era,
    /// The protocol version in use.
    pub protocol_version: String,
    /// The server's identity, when it told.
    pub server_info: Option<Implementation>,
    /// The server's capabilities, when it told.
    pub capabilities: Option<ServerCapabilities>,
    /// The server's instructions, when it gave some.
    pub instructions: Option<String>,
}

/// Builds a [`Client`].
///
/// ```no_run
/// # async fn demo(transport: impl mcp_client::Transport) -> Result<(), mcp_client::ClientError> {
/// use mcp_client::Client;
/// use mcp_types::elicitation::ElicitResult;
///
/// let client = Client::builder()
///     .elicitation(|_info, params| async move {
///         println!("{}", params.message());
///         Ok(ElicitResult::decline())
///     })
///     .connect(transport)
///     .await?;
/// let result = client.call_tool("provision", serde_json::json!({"name": "orders"})).await?;
/// # Ok(()) }
/// ```
pub struct ClientBuilder {
    callbacks: Callbacks,
    info: Implementation,
    mode: Mode,
    request_timeout: Duration,
    discover_timeout: Duration,
    max_rounds: u32,
    log_level: Option<LoggingLevel>,
    declared: ClientCapabilities,
    max_server_requests: usize,
    max_input_requests: usize,
    tasks: bool,
    max_task_wait: Duration,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder {
            callbacks: Callbacks {
                elicit_form: true,
                elicit_url: true,
                ..Callbacks::default()
            },
            info: Implementation::new("mcp-rs-client", env!("CARGO_PKG_VERSION")),
            mode: Mode::Auto,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            discover_timeout: DISCOVER_TIMEOUT,
            max_rounds: DEFAULT_MAX_ROUNDS,
            log_level: None,
            declared: ClientCapabilities::default(),
            max_server_requests: DEFAULT_MAX_SERVER_REQUESTS,
            max_input_requests: DEFAULT_MAX_INPUT_REQUESTS,
            tasks: false,
            max_task_wait: tasks::DEFAULT_MAX_TASK_WAIT,
        }
    }
}

impl ClientBuilder {
    /// Answers elicitation requests (form and URL; see [`elicitation_modes`](Self::elicitation_modes)).
    pub fn elicitation<F, Fut>(mut self, callback: F) -> Self
    where
        F: Fn(RequestInfo, mcp_types::elicitation::ElicitRequestParams) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: Future<Output = Result<mcp_types::elicitation::ElicitResult, ErrorObject>>
            + Send
            + 'static,
    {
        self.callbacks.set_elicit(callback);
        self
    }

    /// Which elicitation modes the callback declares (default both).
    pub fn elicitation_modes(mut self, form: bool, url: bool) -> Self {
        self.callbacks.elicit_form = form;
        self.callbacks.elicit_url = url;
        self
    }

    /// Answers sampling requests.
    pub fn sampling<F, Fut>(mut self, callback: F) -> Self
    where
        F: Fn(RequestInfo, mcp_types::sampling::CreateMessageRequestParams) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: Future<Output = Result<mcp_types::sampling::CreateMessageResult, ErrorObject>>
            + Send
            + 'static,
    {
        self.callbacks.set_sample(callback);
        self
    }

    /// Declares `sampling.tools` (the callback handles `tools` and `toolChoice`).
    pub fn sampling_tools(mut self, enabled: bool) -> Self {
        self.callbacks.sample_tools = enabled;
        self
    }

    /// Answers `roots/list`.
    pub fn roots<F, Fut>(mut self, callback: F) -> Self
    where
        F: Fn(RequestInfo) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<mcp_types::roots::ListRootsResult, ErrorObject>>
            + Send
            + 'static,
    {
        self.callbacks.set_roots(callback);
        self
    }

    /// Receives `notifications/progress` (for calls made with progress on).
    pub fn on_progress(
        mut self,
        handler: impl Fn(mcp_types::notifications::ProgressParams) + Send + Sync + 'static,
    ) -> Self {
        self.callbacks.progress = Some(Arc::new(handler));
        self
    }

    /// Receives `notifications/message`.
    pub fn on_log(
        mut self,
        handler: impl Fn(mcp_types::logging::LoggingMessageParams) + Send + Sync + 'static,
    ) -> Self {
        self.callbacks.log = Some(Arc::new(handler));
        self
    }

    /// Sees every notification from the server, after the progress and log handlers: list
    /// changes, `notifications/resources/updated`, `notifications/elicitation/complete` (a URL
    /// flow finished), subscription acknowledgements...
    ///
    /// ```
    /// use mcp_client::Client;
    /// use mcp_types::ServerNotification;
    ///
    /// let builder = Client::builder().on_notification(|notification| {
    ///     if let ServerNotification::ElicitationComplete(done) = notification {
    ///         println!("the user finished {}", done.elicitation_id);
    ///     }
    /// });
    /// # drop(builder);
    /// ```
    pub fn on_notification(
        mut self,
        handler: impl Fn(&ServerNotification) + Send + Sync + 'static,
    ) -> Self {
        self.callbacks.notification = Some(Arc::new(handler));
        self
    }

    /// Asks for log messages at or above `level` on every 2026-07-28 request.
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// Sets the client's identity.
    pub fn client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.info = Implementation::new(name, version);
        self
    }

    /// How the era is chosen (default [`Mode::Auto`]).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// How long each request waits for its answer (default 60 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long the `server/discover` probe waits before assuming a legacy server (default 10 s).
    pub fn discover_timeout(mut self, timeout: Duration) -> Self {
        self.discover_timeout = timeout;
        self
    }

    /// How many server-to-client requests of a 2025-11-25 session are served at once (default
    /// [`DEFAULT_MAX_SERVER_REQUESTS`]). One more is answered at once with error -32000 "the
    /// client is already serving N server requests". (2026-07-28 servers never send requests;
    /// the client answers any with -32601.)
    pub fn max_server_requests(mut self, max: usize) -> Self {
        self.max_server_requests = max;
        self
    }

    /// How many `inputRequests` one `input_required` round may carry (default
    /// [`DEFAULT_MAX_INPUT_REQUESTS`]). A round with more fails the call with
    /// [`ClientError::TooManyInputRequests`] before any callback runs.
    pub fn max_input_requests(mut self, max: usize) -> Self {
        self.max_input_requests = max;
        self
    }

    /// How many retries one call may take in the automatic loop (default 10).
    pub fn max_rounds(mut self, max_rounds: u32) -> Self {
        self.max_rounds = max_rounds;
        self
    }

    /// Declares capabilities beyond what the registered callbacks imply: for an application
    /// that answers input requests itself, one leg at a time ([`Client::session`]). Each
    /// capability a callback declares wins over the same one given here.
    ///
    /// A server only asks what the client declared on the request, so a manual loop that
    /// answers elicitation must declare it:
    ///
    /// ```
    /// use mcp_client::Client;
    /// use mcp_types::capabilities::{ClientCapabilities, ElicitationCapability};
    ///
    /// let builder = Client::builder().capabilities(ClientCapabilities {
    ///     elicitation: Some(ElicitationCapability::default()),
    ///     ..Default::default()
    /// });
    /// # drop(builder);
    /// ```
    pub fn capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.declared = capabilities;
        self
    }

    /// Connects over `transport` and negotiates the era.
    pub async fn connect(self, transport: impl Transport) -> Result<Client, ClientError> {
        let mut capabilities = self.callbacks.capabilities();
        let declared = self.declared;
        capabilities.experimental = capabilities.experimental.or(declared.experimental);
        capabilities.roots = capabilities.roots.or(declared.roots);
        capabilities.sampling = capabilities.sampling.or(declared.sampling);
        capabilities.elicitation = capabilities.elicitation.or(declared.elicitation);
        capabilities.tasks = capabilities.tasks.or(declared.tasks);
        capabilities.extensions = capabilities.extensions.or(declared.extensions);
        for (key, value) in declared.extra {
            capabilities.extra.entry(key).or_insert(value);
        }
        if self.tasks {
            capabilities = capabilities.with_extension(mcp_types::ext::tasks::EXTENSION_ID);
        }
        let inner = Arc::new(Inner {
            transport: Arc::new(transport),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(0),
            callbacks: self.callbacks,
            capabilities,
            info: Arc::new(self.info),
            request_timeout: self.request_timeout,
            max_rounds: self.max_rounds,
            log_level: self.log_level,
            max_server_requests: self.max_server_requests,
            max_input_requests: self.max_input_requests,
            max_task_wait: self.max_task_wait,
            serving: Arc::new(AtomicUsize::new(0)),
            negotiated: Mutex::new(None),
            closed: Mutex::new(None),
        });
        tokio::spawn(read_loop(inner.clone()));
        let client = Client { inner };
        client.negotiate(self.mode, self.discover_timeout).await?;
        Ok(client)
    }
}

type Answer = Result<Box<RawValue>, ErrorObject>;

struct Inner {
    transport: Arc<dyn Transport>,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>,
    next_id: AtomicI64,
    callbacks: Callbacks,
    capabilities: ClientCapabilities,
    info: Arc<Implementation>,
    request_timeout: Duration,
    max_rounds: u32,
    log_level: Option<LoggingLevel>,
    max_server_requests: usize,
    max_input_requests: usize,
    /// The longest a task is followed, whatever TTL its server names.
    max_task_wait: Duration,
    /// Server-to-client requests being served now.
    serving: Arc<AtomicUsize>,
    negotiated: Mutex<Option<Negotiated>>,
    closed: Mutex<Option<String>>,
}

/// A connected MCP client. Cheap to clone; every clone shares the connection.
///
/// It negotiates the era itself (2026-07-28 when the server speaks it, else a 2025-11-25
/// session) and answers the server's questions through its callbacks, so `call_tool` returns
/// the final result whichever way the server asked:
///
/// ```
/// use mcp_client::{Client, MemoryTransport};
/// use mcp_server_core::registry::{ElicitationResult, McpServer, Resolution, Resolver, ToolDef};
/// use mcp_server_core::types::elicitation::{ElicitResult, ElicitValue};
/// use serde_json::{Value, json};
///
/// #[derive(Clone, serde::Deserialize, schemars::JsonSchema)]
/// struct Confirm {
///     ok: bool,
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let confirm = Resolver::new("confirm", |_input| async { Resolution::<Confirm>::elicit("Really delete?") });
/// let delete = ToolDef::new("delete")
///     .resolve::<ElicitationResult<Confirm>>("confirm", confirm)
///     .handler_resolved(|_ctx, _args: Value, mut resolved| async move {
///         Ok::<_, String>(match resolved.take::<ElicitationResult<Confirm>>("confirm")? {
///             ElicitationResult::Accepted(Confirm { ok: true }) => "deleted",
///             _ => "kept",
///         })
///     });
/// let service = McpServer::new("Files").tool(delete).into_service()?;
///
/// let client = Client::builder()
///     .elicitation(|_info, params| async move {
///         assert_eq!(params.message(), "Really delete?");
///         Ok(ElicitResult::accept([("ok".to_owned(), ElicitValue::Bool(true))].into()))
///     })
///     .connect(MemoryTransport::new(&service))
///     .await?;
/// let result = client.call_tool("delete", json!({})).await?;
/// assert_eq!(result.content[0].as_text(), Some("deleted"));
/// assert_eq!(client.negotiated().unwrap().protocol_version, "2026-07-28");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("negotiated", &self.negotiated())
            .finish_non_exhaustive()
    }
}

/// Reads every message from the server: answers go to their waiting requests, notifications
/// to their handlers, legacy server-to-client requests to the callbacks.
async fn read_loop(inner: Arc<Inner>) {
    while let Some(message) = inner.transport.receive().await {
        match message {
            JsonRpcMessage::Response(r) => inner.resolve(&r.id, Ok(r.result)),
            JsonRpcMessage::Error(e) => match e.id.request_id() {
                Some(id) => inner.resolve(id, Err(e.error)),
                None => tracing::warn!(error = %e.error, "the server sent an error without an id"),
            },
            JsonRpcMessage::Notification(n) => inner.notification(&n),
            JsonRpcMessage::Request(request) => {
                let era = inner
                    .negotiated
                    .lock()
                    .ok()
                    .and_then(|n| n.as_ref().map(|n| n.era));
                if era == Some(Era::Modern) {
                    // 2026-07-28 servers ask through `inputRequests`, never with requests.
                    let error = ErrorObject::new(
                        ErrorCode::METHOD_NOT_FOUND,
                        format!(
                            "'{}': a 2026-07-28 client serves no server-to-client requests",
                            request.method
                        ),
                    );
                    inner.refuse(request.id, error).await;
                    continue;
                }
                let Some(slot) = ServingSlot::take(&inner.serving, inner.max_server_requests)
                else {
                    let error = ErrorObject::new(
                        ErrorCode(-32000),
                        format!(
                            "the client is already serving {} server requests \
                             (ClientBuilder::max_server_requests); try again later",
                            inner.max_server_requests
                        ),
                    );
                    inner.refuse(request.id, error).await;
                    continue;
                };
                let inner = inner.clone();
                tokio::spawn(async move {
                    inner.serve_server_request(request).await;
                    drop(slot);
                });
            }
        }
    }
    // The connection is gone: every waiting request fails now rather than at its timeout.
    let reason = inner
        .transport
        .error()
        .unwrap_or_else(|| "the connection closed".to_owned());
    if let Ok(mut closed) = inner.closed.lock() {
        *closed = Some(reason);
    }
    if let Ok(mut pending) = inner.pending.lock() {
        pending.clear();
    }
}

/// One of the client's `max_server_requests` slots, given back on drop.
struct ServingSlot(Arc<AtomicUsize>);

impl ServingSlot {
    fn take(serving: &Arc<AtomicUsize>, max: usize) -> Option<ServingSlot> {
        serving
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()?;
        Some(ServingSlot(serving.clone()))
    }
}

impl Drop for ServingSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Inner {
    /// Answers a server-to-client request with an error, without serving it.
    async fn refuse(&self, id: RequestId, error: ErrorObject) {
        let reply = JsonRpcMessage::Error(JsonRpcError::new(Some(id), error));
        if let Err(e) = self.transport.send(reply).await {
            tracing::warn!(error = %e, "could not refuse a server-to-client request");
        }
    }

    fn resolve(&self, id: &RequestId, answer: Answer) {
        let waiter = self.pending.lock().ok().and_then(|mut p| p.remove(id));
        match waiter {
            Some(tx) => {
                let _ = tx.send(answer);
            }
            None => {
                tracing::debug!(%id, "an answer arrived for no waiting request (late or cancelled)")
            }
        }
    }

    fn notification(&self, n: &JsonRpcNotification) {
        let notification = match ServerNotification::from_notification(n) {
            Ok(notification) => notification,
            Err(e) => return tracing::debug!(error = %e, "unknown notification ignored"),
        };
        match &notification {
            ServerNotification::Progress(p) => {
                if let Some(handler) = &self.callbacks.progress {
                    handler(p.clone());
                }
            }
            ServerNotification::LoggingMessage(m) => {
                if let Some(handler) = &self.callbacks.log {
                    handler(m.clone());
                }
            }
            other => tracing::debug!(method = other.method(), "notification"),
        }
        if let Some(handler) = &self.callbacks.notification {
            handler(&notification);
        }
    }

    /// Answers a legacy server-to-client request with the same callbacks the 2026-07-28 loop
    /// uses.
    async fn serve_server_request(&self, request: JsonRpcRequest) {
        let info = RequestInfo {
            key: request.id.to_string(),
            method: request.method.clone(),
        };
        let question = match ServerRequest::from_request(&request) {
            Ok(ServerRequest::Ping(_)) => Ok(None),
            Ok(ServerRequest::Elicit(p)) => Ok(Some(InputRequest::Elicit(p))),
            Ok(ServerRequest::CreateMessage(p)) => Ok(Some(InputRequest::CreateMessage(p))),
            Ok(ServerRequest::ListRoots(p)) => Ok(Some(InputRequest::ListRoots(p))),
            Ok(other) => Err(ErrorObject::method_not_found(other.method())),
            Err(e) => Err(ErrorObject::new(e.code(), e.to_string())),
        };
        let result: Result<ClientResult, ErrorObject> = match question {
            Err(e) => Err(e),
            Ok(None) => Ok(ClientResult::Empty(Default::default())),
            Ok(Some(question)) => {
                match dispatch::answer(&self.callbacks, &self.capabilities, info, question) {
                    Err(refusal) => Err(refusal.to_error()),
                    Ok(answer) => answer.await.map(|response| match response {
                        InputResponse::Elicit(r) => ClientResult::Elicit(r),
                        InputResponse::CreateMessage(r) => ClientResult::CreateMessage(r),
                        InputResponse::ListRoots(r) => ClientResult::ListRoots(r),
                    }),
                }
            }
        };
        let reply = match result.and_then(|r| {
            JsonRpcResponse::new(request.id.clone(), &r)
                .map_err(|e| ErrorObject::internal(e.to_string()))
        }) {
            Ok(response) => JsonRpcMessage::Response(response),
            Err(error) => JsonRpcMessage::Error(JsonRpcError::new(Some(request.id), error)),
        };
        if let Err(e) = self.transport.send(reply).await {
            tracing::warn!(error = %e, "could not answer a server-to-client request");
        }
    }
}

/// Cancels a request on the server if its caller stops waiting (dropped future or timeout).
struct Inflight<'a> {
    inner: &'a Arc<Inner>,
    id: Option<RequestId>,
}

impl Inflight<'_> {
    fn done(&mut self) {
        self.id = None;
    }
}

impl Drop for Inflight<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        if let Ok(mut pending) = self.inner.pending.lock() {
            pending.remove(&id);
        }
        let params = CancelledParams {
            request_id: Some(id),
            reason: Some("the client stopped waiting".into()),
            meta: None,
            extra: JsonObject::new(),
        };
        if let Ok(n) = ClientNotification::Cancelled(params).to_notification() {
            let transport = self.inner.transport.clone();
            // Best effort, off the dropping path.
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    let _ = transport.send(JsonRpcMessage::Notification(n)).await;
                });
            }
        }
    }
}

/// Options of one call.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Answers to send with the first request (resuming a persisted flow).
    pub input_responses: Option<InputResponses>,
    /// The `requestState` to echo on the first request (resuming a persisted flow).
    pub request_state: Option<String>,
    /// Ask for `notifications/progress` (delivered to the client's progress handler).
    pub progress: bool,
    /// A timeout for this call's requests instead of the client's.
    pub timeout: Option<Duration>,
}

impl CallOptions {
    /// Resumes a flow: the first request carries these answers and this state.
    pub fn resume(input_responses: Option<InputResponses>, request_state: Option<String>) -> Self {
        CallOptions {
            input_responses,
            request_state,
            ..CallOptions::default()
        }
    }
}

impl Client {
    /// A builder with no callbacks, `Mode::Auto`, 60 s requests and 10 rounds.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// What was negotiated.
    pub fn negotiated(&self) -> Option<Negotiated> {
        self.inner.negotiated.lock().ok().and_then(|n| n.clone())
    }

    /// The protocol version in use.
    pub fn protocol_version(&self) -> Option<String> {
        self.negotiated().map(|n| n.protocol_version)
    }

    /// The era in use.
    pub fn era(&self) -> Option<Era> {
        self.negotiated().map(|n| n.era)
    }

    /// The capabilities this client declares (derived from its callbacks).
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.inner.capabilities
    }

    /// The raw session: single requests, and the manual multi-round-trip loop.
    pub fn session(&self) -> Session<'_> {
        Session { client: self }
    }

    /// Closes the connection.
    pub async fn close(&self) {
        self.inner.transport.close().await;
    }

    /// Sends one request and waits for its answer.
    ///
    /// On 2026-07-28, a server that answers `-32022` (unsupported protocol version) naming a
    /// version this client also speaks gets the request once more, with that version in the
    /// envelope (and the connection switches to it).
    pub async fn request(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>, ClientError> {
        let again = params.clone();
        match self.request_once(method, params, timeout).await {
            Err(ClientError::Server(error))
                if error.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION =>
            {
                match self.retry_version(&error, again.as_deref()) {
                    Some((version, params)) => {
                        if let Ok(mut n) = self.inner.negotiated.lock()
                            && let Some(n) = n.as_mut()
                        {
                            n.protocol_version = version;
                        }
                        self.request_once(method, Some(params), timeout).await
                    }
                    None => Err(ClientError::Server(error)),
                }
            }
            other => other,
        }
    }

    /// The version and params to retry a request refused with `-32022` with: only on an
    /// established 2026-07-28 connection, for a request that carried the envelope, and when
    /// the server's `supported` list names a version this client speaks.
    fn retry_version(
        &self,
        error: &ErrorObject,
        params: Option<&RawValue>,
    ) -> Option<(String, Box<RawValue>)> {
        if self.era() != Some(Era::Modern) {
            return None;
        }
        let supported = error.unsupported_protocol_version_data()?.supported;
        let version = MODERN_VERSIONS
            .iter()
            .rev()
            .find(|v| supported.iter().any(|s| s == *v))?;
        let mut params: Value = serde_json::from_str(params?.get()).ok()?;
        let envelope = params.get_mut("_meta")?.as_object_mut()?;
        envelope.get(mcp_types::meta::PROTOCOL_VERSION)?;
        envelope.insert(
            mcp_types::meta::PROTOCOL_VERSION.to_owned(),
            Value::from(*version),
        );
        let params = mcp_types::jsonrpc::to_raw(&params).ok()?;
        Some(((*version).to_owned(), params))
    }

    async fn request_once(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>, ClientError> {
        let inner = &self.inner;
        let id = RequestId::Number(inner.next_id.fetch_add(1, Ordering::Relaxed) + 1);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = inner.pending.lock() {
            pending.insert(id.clone(), tx);
        }
        let mut inflight = Inflight {
            inner,
            id: Some(id.clone()),
        };
        let request_id = id.clone();
        let request = JsonRpcRequest {
            id,
            method: method.to_owned(),
            params,
            extra: JsonObject::new(),
        };
        inner
            .transport
            .send(JsonRpcMessage::Request(request))
            .await
            .map_err(ClientError::Transport)?;
        let after = timeout.unwrap_or(inner.request_timeout);
        let answer = match tokio::time::timeout(after, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => {
                inflight.done();
                let reason = inner.closed.lock().ok().and_then(|c| c.clone());
                return Err(ClientError::Transport(reason.unwrap_or_else(|| {
                    "the connection closed before the server answered".into()
                })));
            }
            Err(_) => {
                return Err(ClientError::Timeout {
                    method: method.to_owned(),
                    after,
                });
            }
        };
        inflight.done();
        answer.map_err(|error| match inner.transport.local_failure(&request_id) {
            Some(why) => ClientError::Transport(why),
            None => ClientError::Server(error),
        })
    }

    /// Sends a notification.
    pub async fn notify(&self, notification: ClientNotification) -> Result<(), ClientError> {
        let n = notification
            .to_notification()
            .map_err(|e| ClientError::InvalidResponse(e.to_string()))?;
        self.inner
            .transport
            .send(JsonRpcMessage::Notification(n))
            .await
            .map_err(ClientError::Transport)
    }

    /// The `_meta` for the next request: the envelope on 2026-07-28, only a progress token on
    /// 2025-11-25.
    fn meta(&self, progress: Option<RequestId>) -> Option<Meta> {
        let negotiated = self.negotiated();
        let mut meta = match negotiated.as_ref().map(|n| n.era) {
            Some(Era::Modern) | None => {
                let version = negotiated.map_or_else(
                    || ProtocolVersion::LATEST_MODERN.as_str().to_owned(),
                    |n| n.protocol_version,
                );
                let mut meta = Meta::request(&version, self.inner.capabilities.clone());
                meta.client_info = Some(self.inner.info.clone());
                meta.log_level = self.inner.log_level;
                meta
            }
            Some(Era::Legacy) => Meta::default(),
        };
        meta.progress_token = progress;
        (!meta.is_empty()).then_some(meta)
    }

    async fn typed<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        timeout: Option<Duration>,
    ) -> Result<R, ClientError> {
        let raw = mcp_types::jsonrpc::to_raw(params)
            .map_err(|e| ClientError::InvalidResponse(e.to_string()))?;
        let answer = self.request(method, Some(raw), timeout).await?;
        serde_json::from_str(answer.get())
            .map_err(|e| ClientError::InvalidResponse(format!("'{method}' result: {e}")))
    }

    async fn negotiate(&self, mode: Mode, discover_timeout: Duration) -> Result<(), ClientError> {
        match mode {
            Mode::Legacy => self.initialize().await,
            Mode::Pinned(version) => {
                self.set(Negotiated {
                    era: Era::Modern,
                    protocol_version: version,
                    server_info: None,
                    capabilities: None,
                    instructions: None,
                });
                Ok(())
            }
            Mode::Auto => {
                let mut version = ProtocolVersion::LATEST_MODERN.as_str().to_owned();
                for attempt in 0..2 {
                    let mut meta = Meta::request(&version, self.inner.capabilities.clone());
                    meta.client_info = Some(self.inner.info.clone());
                    let params = mcp_types::common::RequestParams {
                        meta: Some(meta),
                        extra: JsonObject::new(),
                    };
                    let probe: Result<DiscoverResult, ClientError> = self
                        .typed(methods::SERVER_DISCOVER, &params, Some(discover_timeout))
                        .await;
                    match probe {
                        Ok(discover) => {
                            let mutual = MODERN_VERSIONS
                                .iter()
                                .rev()
                                .find(|v| discover.supported_versions.iter().any(|s| s == *v));
                            let Some(mutual) = mutual else {
                                return self.initialize().await;
                            };
                            self.set(Negotiated {
                                era: Era::Modern,
                                protocol_version: (*mutual).to_owned(),
                                server_info: discover
                                    .meta
                                    .as_ref()
                                    .and_then(|m| m.server_info.as_deref().cloned()),
                                capabilities: Some(discover.capabilities),
                                instructions: discover.instructions,
                            });
                            return Ok(());
                        }
                        Err(ClientError::Server(e))
                            if e.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION =>
                        {
                            let supported = e
                                .unsupported_protocol_version_data()
                                .map(|d| d.supported)
                                .unwrap_or_default();
                            match MODERN_VERSIONS
                                .iter()
                                .rev()
                                .find(|v| supported.iter().any(|s| s == *v))
                            {
                                Some(v) if attempt == 0 => version = (*v).to_owned(),
                                _ if supported.iter().any(|s| {
                                    ProtocolVersion::parse(s)
                                        .is_some_and(ProtocolVersion::is_modern)
                                }) || supported
                                    .iter()
                                    .all(|s| !LEGACY_VERSIONS.contains(&s.as_str()))
                                    && !supported.is_empty() =>
                                {
                                    return Err(ClientError::NoCommonVersion { supported });
                                }
                                _ => return self.initialize().await,
                            }
                        }
                        // Any other answer, or none in time: not a modern server.
                        Err(
                            ClientError::Server(_)
                            | ClientError::Timeout { .. }
                            | ClientError::InvalidResponse(_),
                        ) => return self.initialize().await,
                        Err(other) => return Err(other),
                    }
                }
                self.initialize().await
            }
        }
    }

    async fn initialize(&self) -> Result<(), ClientError> {
        let params = InitializeRequestParams {
            protocol_version: ProtocolVersion::LATEST_LEGACY.as_str().to_owned(),
            capabilities: self.inner.capabilities.clone(),
            client_info: (*self.inner.info).clone(),
            meta: None,
            extra: JsonObject::new(),
        };
        let result: InitializeResult = self.typed(methods::INITIALIZE, &params, None).await?;
        if !LEGACY_VERSIONS.contains(&result.protocol_version.as_str()) {
            return Err(ClientError::InvalidResponse(format!(
                "Unsupported protocol version from the server: {}",
                result.protocol_version
            )));
        }
        self.set(Negotiated {
            era: Era::Legacy,
            protocol_version: result.protocol_version,
            server_info: Some(result.server_info),
            capabilities: Some(result.capabilities),
            instructions: result.instructions,
        });
        self.notify(ClientNotification::Initialized(None)).await
    }

    fn set(&self, negotiated: Negotiated) {
        if let Ok(mut n) = self.inner.negotiated.lock() {
            *n = Some(negotiated);
        }
    }

    /// One page of `tools/list`.
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult, ClientError> {
        let params = PaginatedRequestParams {
            cursor,
            meta: self.meta(None),
            extra: JsonObject::new(),
        };
        self.typed(methods::TOOLS_LIST, &params, None).await
    }

    /// Every tool, following cursors.
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.list_tools(cursor).await?;
            all.extend(page.tools);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts(
        &self,
        cursor: Option<String>,
    ) -> Result<ListPromptsResult, ClientError> {
        let params = PaginatedRequestParams {
            cursor,
            meta: self.meta(None),
            extra: JsonObject::new(),
        };
        self.typed(methods::PROMPTS_LIST, &params, None).await
    }

    /// Every prompt, following cursors.
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.list_prompts(cursor).await?;
            all.extend(page.prompts);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// One page of `resources/list`.
    pub async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, ClientError> {
        let params = PaginatedRequestParams {
            cursor,
            meta: self.meta(None),
            extra: JsonObject::new(),
        };
        self.typed(methods::RESOURCES_LIST, &params, None).await
    }

    /// Every resource, following cursors.
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.list_resources(cursor).await?;
            all.extend(page.resources);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// One page of `resources/templates/list`.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, ClientError> {
        let params = PaginatedRequestParams {
            cursor,
            meta: self.meta(None),
            extra: JsonObject::new(),
        };
        self.typed(methods::RESOURCES_TEMPLATES_LIST, &params, None)
            .await
    }

    /// Every resource template, following cursors.
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.list_resource_templates(cursor).await?;
            all.extend(page.resource_templates);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// Calls a tool, answering every round of questions with the callbacks; the intermediate
    /// rounds are invisible.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ClientError> {
        self.call_tool_with(name, arguments, CallOptions::default())
            .await
    }

    /// [`call_tool`](Self::call_tool) with options (resuming, progress, timeout).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallToolResult, ClientError> {
        let arguments = tool_arguments(arguments)?;
        let params = CallToolRequestParams {
            name: name.to_owned(),
            arguments,
            ..Default::default()
        };
        self.drive(methods::TOOLS_CALL, params, options).await
    }

    /// Gets a prompt, answering every round of questions with the callbacks.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult, ClientError> {
        self.get_prompt_with(name, arguments, CallOptions::default())
            .await
    }

    /// [`get_prompt`](Self::get_prompt) with options (resuming, progress, timeout).
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
        options: CallOptions,
    ) -> Result<GetPromptResult, ClientError> {
        let params = GetPromptRequestParams {
            name: name.to_owned(),
            arguments: Some(arguments),
            ..Default::default()
        };
        self.drive(methods::PROMPTS_GET, params, options).await
    }

    /// Reads a resource, answering every round of questions with the callbacks.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        self.read_resource_with(uri, CallOptions::default()).await
    }

    /// [`read_resource`](Self::read_resource) with options (resuming, progress, timeout).
    pub async fn read_resource_with(
        &self,
        uri: &str,
        options: CallOptions,
    ) -> Result<ReadResourceResult, ClientError> {
        let params = ReadResourceRequestParams {
            uri: uri.to_owned(),
            ..Default::default()
        };
        self.drive(methods::RESOURCES_READ, params, options).await
    }

    /// Sends one leg of a call and returns the answer undecoded (a result, a round or a task).
    async fn send_leg<P>(
        &self,
        method: &str,
        params: &mut P,
        options: &CallOptions,
    ) -> Result<Box<RawValue>, ClientError>
    where
        P: Serialize + HasMetaMut,
    {
        let progress = options
            .progress
            .then(|| RequestId::Number(self.inner.next_id.load(Ordering::Relaxed) + 1));
        params.set_meta(self.meta(progress));
        let raw = mcp_types::jsonrpc::to_raw(&*params)
            .map_err(|e| ClientError::InvalidResponse(e.to_string()))?;
        self.request(method, Some(raw), options.timeout).await
    }

    /// Sends one leg of a call that may answer `input_required`.
    async fn leg<P, T>(
        &self,
        method: &str,
        params: &mut P,
        options: &CallOptions,
    ) -> Result<Outcome<T>, ClientError>
    where
        P: RetryParams + Serialize + HasMetaMut,
        T: DeserializeOwned,
    {
        let mut answer = self.send_leg(method, params, options).await?;
        // Without the extension declared, a task is an unrecognized resultType (below).
        if self.declares_tasks() && mcp_types::ext::tasks::is_task_result(&answer) {
            answer = self.follow_task(method, &answer, options).await?;
        }
        decode_outcome(method, &answer)
    }
}

/// A leg's answer as a complete result or a round.
fn decode_outcome<T: DeserializeOwned>(
    method: &str,
    answer: &RawValue,
) -> Result<Outcome<T>, ClientError> {
    Outcome::from_raw(answer).map_err(|e| match e {
        OutcomeError::UnrecognizedResultType(t) => ClientError::UnrecognizedResultType(t),
        OutcomeError::Malformed(e) => {
            ClientError::InvalidResponse(format!("'{method}' result: {e}"))
        }
    })
}

impl Client {
    /// The automatic loop: answer every round, retry with a new id, the same params, the
    /// answers under the same keys and the state echoed byte for byte.
    async fn drive<P, T>(
        &self,
        method: &str,
        mut params: P,
        options: CallOptions,
    ) -> Result<T, ClientError>
    where
        P: RetryParams + Serialize + HasMetaMut,
        T: DeserializeOwned,
    {
        params.set_input_responses(options.input_responses.clone());
        params.set_request_state(options.request_state.clone());
        let mut backoff = BACKOFF_START;
        let mut retries = 0u32;
        loop {
            let round = match self.leg::<P, T>(method, &mut params, &options).await? {
                Outcome::Complete(result) => return Ok(result),
                Outcome::InputRequired(round) => round,
            };
            if retries >= self.inner.max_rounds {
                return Err(ClientError::RoundsExceeded {
                    max_rounds: self.inner.max_rounds,
                });
            }
            retries += 1;
            let requests = round.input_requests.unwrap_or_default();
            if requests.is_empty() {
                // Only state ("load shedding"): wait, doubling up to the cap.
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_CAP);
                params.set_input_responses(None);
            } else {
                backoff = BACKOFF_START;
                params.set_input_responses(Some(self.fulfil(method, requests).await?));
            }
            params.set_request_state(round.request_state);
        }
    }

    /// Answers every request of a round concurrently; the first failure stops the others.
    pub async fn fulfil(
        &self,
        method: &str,
        requests: BTreeMap<String, InputRequest>,
    ) -> Result<InputResponses, ClientError> {
        let callbacks = &self.inner.callbacks;
        let declared = &self.inner.capabilities;
        if requests.len() > self.inner.max_input_requests {
            return Err(ClientError::TooManyInputRequests {
                count: requests.len(),
                max: self.inner.max_input_requests,
            });
        }
        let mut tasks = tokio::task::JoinSet::new();
        for (key, request) in requests {
            let info = RequestInfo {
                key: key.clone(),
                method: method.to_owned(),
            };
            let future =
                dispatch::answer(callbacks, declared, info, request).map_err(|refusal| {
                    match refusal {
                        Refusal::Missing(capability) => ClientError::MissingCallback {
                            capability,
                            key: key.clone(),
                        },
                        Refusal::Undeclared(capability) => ClientError::UndeclaredCapability {
                            capability,
                            key: key.clone(),
                        },
                        Refusal::Unsupported(method) => ClientError::UnsupportedInputRequest {
                            method,
                            key: key.clone(),
                        },
                    }
                })?;
            tasks.spawn(async move { (key, future.await) });
        }
        let mut responses = InputResponses::new();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok((key, Ok(response))) => {
                    responses.insert(key, response);
                }
                Ok((_, Err(e))) => {
                    tasks.abort_all();
                    return Err(ClientError::Callback(e));
                }
                Err(e) => {
                    tasks.abort_all();
                    return Err(ClientError::Callback(ErrorObject::internal(format!(
                        "a callback panicked or was cancelled: {e}"
                    ))));
                }
            }
        }
        Ok(responses)
    }
}

/// Tool arguments: a JSON object, or `null` for none.
fn tool_arguments(arguments: Value) -> Result<Option<JsonObject>, ClientError> {
    match arguments {
        Value::Object(o) => Ok(Some(o)),
        Value::Null => Ok(None),
        other => Err(ClientError::InvalidRequest(format!(
            "tool arguments must be a JSON object or null, not {other}"
        ))),
    }
}

/// Setting `_meta` on the params of the three retrying methods.
pub trait HasMetaMut {
    /// Replaces `_meta`.
    fn set_meta(&mut self, meta: Option<Meta>);
}

macro_rules! has_meta_mut {
    ($($t:ty),*) => {$(
        impl HasMetaMut for $t {
            fn set_meta(&mut self, meta: Option<Meta>) {
                self.meta = meta;
            }
        }
    )*};
}

has_meta_mut!(
    CallToolRequestParams,
    GetPromptRequestParams,
    ReadResourceRequestParams
);

/// The raw session: one leg at a time, for applications that drive the multi-round-trip loop
/// themselves (inspect, log, refuse, apply their own backoff, persist `requestState` so another
/// process resumes).
#[derive(Debug, Clone, Copy)]
pub struct Session<'a> {
    client: &'a Client,
}

/// What one leg of a call returned.
pub type CallOutcome = Outcome<CallToolResult>;

impl Session<'_> {
    /// One `tools/call` leg: the complete result or the server's `InputRequiredResult`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallOutcome, ClientError> {
        let arguments = tool_arguments(arguments)?;
        let mut params = CallToolRequestParams {
            name: name.to_owned(),
            arguments,
            input_responses: options.input_responses.clone(),
            request_state: options.request_state.clone().map(Value::String),
            ..Default::default()
        };
        self.client
            .leg(methods::TOOLS_CALL, &mut params, &options)
            .await
    }

    /// One `prompts/get` leg.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
        options: CallOptions,
    ) -> Result<Outcome<GetPromptResult>, ClientError> {
        let mut params = GetPromptRequestParams {
            name: name.to_owned(),
            arguments: Some(arguments),
            input_responses: options.input_responses.clone(),
            request_state: options.request_state.clone().map(Value::String),
            ..Default::default()
        };
        self.client
            .leg(methods::PROMPTS_GET, &mut params, &options)
            .await
    }

    /// One `resources/read` leg.
    pub async fn read_resource(
        &self,
        uri: &str,
        options: CallOptions,
    ) -> Result<Outcome<ReadResourceResult>, ClientError> {
        let mut params = ReadResourceRequestParams {
            uri: uri.to_owned(),
            input_responses: options.input_responses.clone(),
            request_state: options.request_state.clone().map(Value::String),
            ..Default::default()
        };
        self.client
            .leg(methods::RESOURCES_READ, &mut params, &options)
            .await
    }
}
