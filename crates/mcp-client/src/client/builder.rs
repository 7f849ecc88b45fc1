//! Building a client: its callbacks, capabilities, limits and mode, then `connect`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_types::capabilities::ClientCapabilities;
use mcp_types::lifecycle::Implementation;
use mcp_types::logging::LoggingLevel;
use mcp_types::{ErrorObject, ServerNotification};

use crate::callbacks::{Callbacks, RequestInfo};
use crate::error::ClientError;
use crate::transport::Transport;

use crate::client::{Inner, read_loop};
use crate::{
    Client, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_INPUT_REQUESTS, DEFAULT_MAX_ROUNDS,
    DEFAULT_MAX_SERVER_REQUESTS, DEFAULT_MAX_TASK_WAIT, DEFAULT_MAX_TOTAL_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT, DISCOVER_TIMEOUT, Mode,
};

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
    pub(super) callbacks: Callbacks,
    pub(super) info: Implementation,
    pub(super) mode: Mode,
    pub(super) request_timeout: Duration,
    pub(super) max_total_timeout: Option<Duration>,
    pub(super) discover_timeout: Duration,
    pub(super) max_rounds: u32,
    pub(super) log_level: Option<LoggingLevel>,
    pub(super) declared: ClientCapabilities,
    pub(super) max_server_requests: usize,
    pub(super) max_input_requests: usize,
    pub(super) tasks: bool,
    pub(super) max_task_wait: Duration,
    pub(super) cache: Option<Arc<dyn crate::cache::CacheStore>>,
    pub(super) max_in_flight: usize,
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
            max_total_timeout: None,
            discover_timeout: DISCOVER_TIMEOUT,
            max_rounds: DEFAULT_MAX_ROUNDS,
            log_level: None,
            declared: ClientCapabilities::default(),
            max_server_requests: DEFAULT_MAX_SERVER_REQUESTS,
            max_input_requests: DEFAULT_MAX_INPUT_REQUESTS,
            tasks: false,
            max_task_wait: DEFAULT_MAX_TASK_WAIT,
            cache: Some(Arc::new(crate::cache::MemoryCache::default())),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
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

    /// How long each request waits for its answer (default 60 s). Each progress notification
    /// the request receives starts the wait again, up to
    /// [`max_total_timeout`](Self::max_total_timeout); past it the call fails with
    /// [`ClientError::Timeout`] and the request is cancelled.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The longest each request waits in all, however much progress it reports (default
    /// [`DEFAULT_MAX_TOTAL_TIMEOUT`], one hour, or the request timeout when that is longer);
    /// past it the call fails with [`ClientError::TotalTimeout`] and the request is
    /// cancelled.
    pub fn max_total_timeout(mut self, limit: Duration) -> Self {
        self.max_total_timeout = Some(limit);
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

    /// Keeps cacheable results in `store` instead of a [`MemoryCache`](crate::MemoryCache) of
    /// its own (the default): a store shared by several clients shares `public` results
    /// between them; `private` ones serve only the authorization they were fetched with
    /// ([`Transport::principal`]).
    pub fn cache(mut self, store: Arc<dyn crate::cache::CacheStore>) -> Self {
        self.cache = Some(store);
        self
    }

    /// How many requests this client has on the wire at once (default
    /// [`DEFAULT_MAX_IN_FLIGHT`], at least 1). More wait their turn in the order they came, each
    /// within its own timeout: a burst of calls queues instead of failing or flooding the
    /// server.
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = max.max(1);
        self
    }

    /// Keeps no results: every request goes to the server.
    pub fn no_cache(mut self) -> Self {
        self.cache = None;
        self
    }

    /// Sees the method of each request answered from the cache instead of the server.
    pub fn on_cache_hit(mut self, handler: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.callbacks.cache_hit = Some(Arc::new(handler));
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
        let cache_scope = super::cache_key::CacheScope::of(&transport);
        let inner = Arc::new(Inner {
            transport: Arc::new(transport),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(0),
            callbacks: self.callbacks,
            capabilities,
            info: Arc::new(self.info),
            request_timeout: self.request_timeout,
            max_total_timeout: self
                .max_total_timeout
                .unwrap_or(DEFAULT_MAX_TOTAL_TIMEOUT.max(self.request_timeout)),
            progress_waiters: Mutex::new(HashMap::new()),
            next_progress: AtomicI64::new(0),
            repeatable_tools: Mutex::new(HashMap::new()),
            cache: self.cache,
            cache_scope,
            in_flight: Arc::new(tokio::sync::Semaphore::new(self.max_in_flight)),
            max_rounds: self.max_rounds,
            log_level: self.log_level,
            max_server_requests: self.max_server_requests,
            max_input_requests: self.max_input_requests,
            max_task_wait: self.max_task_wait,
            serving: Arc::new(AtomicUsize::new(0)),
            negotiated: Mutex::new(None),
            closed: Mutex::new(None),
            #[cfg(feature = "otel")]
            opened: std::time::Instant::now(),
        });
        tokio::spawn(read_loop(inner.clone()));
        let client = Client {
            inner,
            cache_mode: crate::cache::CacheMode::Use,
        };
        client.negotiate(self.mode, self.discover_timeout).await?;
        Ok(client)
    }
}

impl Client {
    /// A builder with no callbacks, `Mode::Auto`, 60 s requests and 10 rounds.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }
}
