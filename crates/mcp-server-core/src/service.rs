//! The transport-facing service: how any transport feeds messages in and gets responses out.
//!
//! - [`Service::handle_modern`] serves one stateless 2026-07-28 request (what an HTTP POST
//!   carries) and returns its [`ResponseStream`]: request-scoped notifications, then the
//!   response. Dropping the stream cancels the handler.
//! - [`Service::connect`] opens a [`Session`] for a stream transport (stdio, a socket, an
//!   in-memory pipe) or a legacy HTTP session: every message of the connection goes through
//!   [`Session::handle`]; an `initialize` starts a 2025-11-25 session on it, while requests
//!   carrying the 2026-07-28 envelope are always served statelessly. Unsolicited messages
//!   (legacy list-changed and resource-updated notifications) arrive on the receiver
//!   `connect` returns.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use mcp_state_seal::{
    INVALID_REQUEST_STATE_DATA_REASON, INVALID_REQUEST_STATE_MESSAGE, Principal, PrincipalSource,
    RequestBinding, UseClaim,
};
use mcp_types::capabilities::{ClientCapabilities, ServerCapabilities};
use mcp_types::common::{EmptyResult, RequestParams};
use mcp_types::discover::DiscoverResult;
use mcp_types::lifecycle::{Implementation, InitializeRequestParams, InitializeResult};
use mcp_types::logging::LoggingLevel;
use mcp_types::meta::{self, Meta};
use mcp_types::methods::{self, Direction, Kind};
use mcp_types::mrtr::{Outcome, RetryParams};
use mcp_types::notifications::CancelledParams;
use mcp_types::resources::ResourceUriParams;
use mcp_types::subscriptions::{
    SubscriptionFilter, SubscriptionsAcknowledgedParams, SubscriptionsListenRequestParams,
};
use mcp_types::version::{Era, ProtocolVersion};
use mcp_types::{
    ClientNotification, ClientRequest, ErrorCode, ErrorObject, InputRequiredResult, JsonObject,
    JsonRpcError, JsonRpcMessage, JsonRpcRequest, JsonRpcResponse, ParamsError, RequestId,
    ResultType, ServerNotification,
};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::{broadcast, mpsc};

use crate::cancel::CancellationToken;
use crate::context::RequestContext;
use crate::futures::CatchUnwind;
use crate::gating;
use crate::limits::SessionLimits;
use crate::notify::{ChangeEvent, ChangeNotifier};
use crate::param_headers::ParamHeader;
use crate::peer::{Peer, Pending};
use crate::server::{Handler, Server};
use crate::sink::Sink;
use crate::stamp::{Stamp, Stamped};
use crate::trace::RequestSpan;

/// The versions served statelessly (a request's `_meta` must name one of them).
pub const MODERN_VERSIONS: [&str; 1] = [ProtocolVersion::V2026_07_28.as_str()];
/// The handshake versions an `initialize` may negotiate.
pub const LEGACY_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// What `server/discover` lists: the stateless version first, then the handshake one a legacy
/// client can reach through `initialize`.
pub const SUPPORTED_VERSIONS: [&str; 2] = ["2026-07-28", "2025-11-25"];

/// What a transport knows about who sent a message.
#[derive(Clone, Default)]
pub struct TransportContext {
    /// The authenticated principal (e.g. from a verified bearer token), if any.
    pub principal: Option<Principal>,
    /// Anything else a deployment's principal binding needs (e.g. the HTTP request parts).
    pub context: Option<Arc<dyn Any + Send + Sync>>,
    /// Where the replay guard's claim on this request's `requestState` waits until the
    /// transport delivered the answer (see [`Delivery`]). `None`: the claim is marked done
    /// as soon as the handler answered.
    pub delivery: Option<Arc<Delivery>>,
}

impl fmt::Debug for TransportContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportContext")
            .field("principal", &self.principal)
            .field("context", &self.context.is_some())
            .field("delivery", &self.delivery.is_some())
            .finish()
    }
}

/// The replay guard's claims of one request whose handler answered, held by the transport
/// until the answer left (an HTTP body written): only then is the state marked done. An
/// instance that dies between the two leaves the claim to be taken over by the instance a load
/// balancer re-sends the request to, instead of that one refusing it as a replay.
#[derive(Default)]
pub struct Delivery {
    claims: Mutex<Vec<UseClaim>>,
}

impl fmt::Debug for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Delivery").finish_non_exhaustive()
    }
}

impl Delivery {
    /// An empty holder, for one request.
    pub fn new() -> Self {
        Self::default()
    }

    fn hold(&self, claim: UseClaim) -> Result<(), UseClaim> {
        match self.claims.lock() {
            Ok(mut claims) => {
                claims.push(claim);
                Ok(())
            }
            Err(_) => Err(claim),
        }
    }

    /// Whether a claim waits here.
    pub fn is_empty(&self) -> bool {
        self.claims.lock().map_or(true, |claims| claims.is_empty())
    }

    /// Marks every claim held here done: the answer was delivered (or its connection is gone).
    pub async fn finish(&self) {
        let claims = match self.claims.lock() {
            Ok(mut claims) => std::mem::take(&mut *claims),
            Err(_) => return,
        };
        for claim in claims {
            Box::pin(claim.finish()).await;
        }
    }
}

/// The messages a request produces, in order: notifications (and, on legacy sessions,
/// server-to-client requests), then exactly one response, after which the stream ends. A
/// cancelled request ends without a response.
#[derive(Debug)]
pub struct ResponseStream {
    rx: mpsc::Receiver<JsonRpcMessage>,
}

impl ResponseStream {
    /// A stream holding one message that is already known (an immediate error or result).
    pub fn ready(message: JsonRpcMessage) -> Self {
        let (tx, rx) = mpsc::channel(1);
        // The channel has room for exactly this message.
        let _ = tx.try_send(message);
        ResponseStream { rx }
    }

    /// The next message, or `None` once the stream ended.
    pub async fn next(&mut self) -> Option<JsonRpcMessage> {
        self.rx.recv().await
    }

    /// Polls for the next message (for transports that implement a body or a stream by hand).
    pub fn poll_next(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<JsonRpcMessage>> {
        self.rx.poll_recv(cx)
    }

    /// Drains the stream.
    pub async fn collect(mut self) -> Vec<JsonRpcMessage> {
        let mut out = Vec::new();
        while let Some(message) = self.next().await {
            out.push(message);
        }
        out
    }
}

pub(crate) struct Inner {
    pub(crate) server: Server,
    capabilities: ServerCapabilities,
    legacy_capabilities: ServerCapabilities,
    notifier: ChangeNotifier,
}

/// A server ready to be driven by transports. Cheap to clone.
#[derive(Clone)]
pub struct Service {
    inner: Arc<Inner>,
}

impl fmt::Debug for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Service")
            .field("server", &self.inner.server)
            .finish()
    }
}

impl Server {
    /// Turns the server into the service transports drive.
    pub fn into_service(self) -> Service {
        Service::new(self)
    }
}

impl Service {
    pub(crate) fn new(server: Server) -> Self {
        let capabilities = server.capabilities();
        // 2025-11-25 has no `extensions` capability and its own core tasks: only the
        // extensions the server registered itself (which serve both eras) are advertised there.
        let legacy_capabilities = ServerCapabilities {
            extensions: (!server.extensions.is_empty()).then(|| server.extensions.clone()),
            ..capabilities.clone()
        };
        Service {
            inner: Arc::new(Inner {
                server,
                capabilities,
                legacy_capabilities,
                notifier: ChangeNotifier::default(),
            }),
        }
    }

    /// The `x-mcp-header` annotations of tool `name`, if it has any (see
    /// [`Server::tool_input_schema`]).
    pub fn param_headers(&self, tool: &str) -> Option<&[ParamHeader]> {
        self.inner.server.param_headers.get(tool).map(|h| &h[..])
    }

    /// The limits every session of this service runs under.
    pub fn limits(&self) -> &SessionLimits {
        &self.inner.server.limits
    }

    /// The server's identity.
    pub fn server_info(&self) -> &Implementation {
        &self.inner.server.info
    }

    /// What `server/discover` advertises.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.inner.capabilities
    }

    /// A handle to announce list changes and resource updates to every subscriber.
    pub fn notifier(&self) -> ChangeNotifier {
        self.inner.notifier.clone()
    }

    /// How many task bodies (Tasks extension) run in this process now: a draining transport
    /// waits for them (bounded), since a body cannot move to another instance.
    pub fn running_tasks(&self) -> usize {
        self.inner
            .server
            .tasks
            .as_ref()
            .map_or(0, crate::tasks::TaskEngine::running)
    }

    /// Ends every `subscriptions/listen` stream with its result. In-flight calls finish.
    pub fn shutdown(&self) {
        self.inner.notifier.send(ChangeEvent::Shutdown);
    }

    /// Serves one stateless 2026-07-28 request. The caller has already checked whatever its
    /// transport adds (HTTP headers); this checks the `_meta` envelope, the version, the method
    /// and the params, in that order, then runs the handler.
    pub fn handle_modern(
        &self,
        request: JsonRpcRequest,
        transport: TransportContext,
    ) -> ResponseStream {
        let typed = ClientRequest::from_request(&request);
        self.handle_modern_decoded(request, typed, transport)
    }

    /// [`Service::handle_modern`] for a transport that has already decoded the params (to
    /// check its own headers against them): `typed` must be
    /// `ClientRequest::from_request(&request)`, so the body is decoded once.
    pub fn handle_modern_decoded(
        &self,
        request: JsonRpcRequest,
        typed: Result<ClientRequest, ParamsError>,
        transport: TransportContext,
    ) -> ResponseStream {
        spawn_request(
            self.inner.clone(),
            request,
            typed,
            Route::Modern {
                transport,
                session: None,
            },
        )
    }

    /// Opens a connection. Drop the [`Session`] (or call [`Session::close`]) when the
    /// transport ends.
    pub fn connect(
        &self,
        transport: TransportContext,
    ) -> (Session, mpsc::Receiver<JsonRpcMessage>) {
        let (outbound, rx) = mpsc::channel(self.inner.server.limits.unsolicited_queue.max(1));
        let state = Arc::new(SessionState {
            inner: self.inner.clone(),
            transport,
            outbound,
            legacy: Mutex::new(None),
            subscriptions: Mutex::new(HashSet::new()),
            inflight: Mutex::new(HashMap::new()),
            pending: Arc::new(Pending::default()),
            closed: CancellationToken::new(),
        });
        (Session { state }, rx)
    }
}

/// The state a legacy (2025-11-25) session negotiated with `initialize`.
#[derive(Debug, Clone)]
struct LegacyState {
    protocol_version: String,
    capabilities: Arc<ClientCapabilities>,
    client_info: Option<Arc<Implementation>>,
    log_level: Option<LoggingLevel>,
}

pub(crate) struct SessionState {
    inner: Arc<Inner>,
    transport: TransportContext,
    outbound: mpsc::Sender<JsonRpcMessage>,
    legacy: Mutex<Option<LegacyState>>,
    /// Kept apart from `legacy`, which is cloned per request: this set can be large.
    subscriptions: Mutex<HashSet<String>>,
    inflight: Mutex<HashMap<RequestId, Tracked>>,
    pending: Arc<Pending>,
    closed: CancellationToken,
}

impl SessionState {
    fn legacy(&self) -> Option<LegacyState> {
        self.legacy.lock().ok().and_then(|l| l.clone())
    }

    fn with_legacy<R>(&self, f: impl FnOnce(&mut LegacyState) -> R) -> Option<R> {
        self.legacy.lock().ok().and_then(|mut l| l.as_mut().map(f))
    }

    /// Tracks a request for cancellation; `false` when a request with this id is in flight.
    fn track(&self, id: &RequestId, token: CancellationToken, stream: bool) -> bool {
        let Ok(mut inflight) = self.inflight.lock() else {
            return false;
        };
        if inflight.contains_key(id) {
            return false;
        }
        inflight.insert(id.clone(), Tracked { token, stream });
        true
    }

    fn untrack(&self, id: &RequestId) {
        if let Ok(mut inflight) = self.inflight.lock() {
            inflight.remove(id);
        }
    }

    fn cancel(&self, id: &RequestId) {
        let token = self
            .inflight
            .lock()
            .ok()
            .and_then(|i| i.get(id).map(|t| t.token.clone()));
        match token {
            Some(token) => token.cancel(),
            None => tracing::debug!(%id, "cancellation for no in-flight request ignored"),
        }
    }
}

/// An in-flight request of a session: its cancel token, and whether it is a long-lived stream
/// (`subscriptions/listen`) that only ends when cancelled.
struct Tracked {
    token: CancellationToken,
    stream: bool,
}

/// One connection: a stdio process, a socket, an in-memory pipe, or a legacy HTTP session.
pub struct Session {
    state: Arc<SessionState>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("legacy", &self.protocol_version())
            .finish()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

impl Session {
    /// Whether an `initialize` started a legacy session on this connection.
    pub fn is_legacy(&self) -> bool {
        self.state.legacy().is_some()
    }

    /// The version negotiated by `initialize`, if any.
    pub fn protocol_version(&self) -> Option<String> {
        self.state.legacy().map(|l| l.protocol_version)
    }

    /// Ends the connection: cancels in-flight requests and fails pending server-to-client
    /// requests.
    pub fn close(&self) {
        self.state.closed.cancel();
        if let Ok(inflight) = self.state.inflight.lock() {
            inflight.values().for_each(|t| t.token.cancel());
        }
        self.state.pending.close();
    }

    /// Ends the session's long-lived streams (`subscriptions/listen`) and fails its pending
    /// server-to-client requests, leaving ordinary requests to finish: what a stream transport
    /// does at end of input, since nobody is left to cancel a stream or answer a question.
    pub fn end_streams(&self) {
        if let Ok(inflight) = self.state.inflight.lock() {
            inflight
                .values()
                .filter(|t| t.stream)
                .for_each(|t| t.token.cancel());
        }
        self.state.pending.close();
    }

    /// Resolves once the session is closed (at once if it already is).
    pub fn closed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let closed = self.state.closed.clone();
        async move { closed.cancelled().await }
    }

    /// The limits this session runs under.
    pub fn limits(&self) -> &SessionLimits {
        &self.state.inner.server.limits
    }

    /// Feeds one raw message (a stdio line, an HTTP body). Bytes that are not a valid message
    /// get the JSON-RPC error the spec names.
    pub fn handle_bytes(&self, bytes: &[u8]) -> Option<ResponseStream> {
        match JsonRpcMessage::from_slice(bytes) {
            Ok(message) => self.handle(message),
            Err(e) => {
                tracing::debug!(error = %e, "rejected a malformed message");
                Some(ResponseStream::ready(JsonRpcMessage::Error(
                    e.to_response(),
                )))
            }
        }
    }

    /// Feeds one message. A request returns its [`ResponseStream`]; notifications and answers
    /// to server-to-client requests return `None`.
    pub fn handle(&self, message: JsonRpcMessage) -> Option<ResponseStream> {
        self.handle_with(message, self.state.transport.clone(), true)
    }

    /// Feeds one message that arrived with its own transport context (each POST of a legacy
    /// HTTP session is authenticated on its own). Without a `back_channel` (a legacy client
    /// that takes no SSE answer), the request's handlers cannot ask the client anything: an
    /// elicitation or sampling request fails at once instead of waiting for an answer that
    /// cannot arrive.
    pub fn handle_with(
        &self,
        message: JsonRpcMessage,
        transport: TransportContext,
        back_channel: bool,
    ) -> Option<ResponseStream> {
        match message {
            JsonRpcMessage::Request(request) => {
                Some(self.handle_request(request, transport, back_channel))
            }
            JsonRpcMessage::Notification(notification) => {
                match ClientNotification::from_notification(&notification) {
                    Ok(ClientNotification::Cancelled(CancelledParams {
                        request_id: Some(id),
                        ..
                    })) => self.state.cancel(&id),
                    Ok(ClientNotification::Initialized(_)) => {
                        tracing::debug!("legacy session initialized")
                    }
                    Ok(other) => tracing::debug!(method = other.method(), "notification ignored"),
                    Err(e) => {
                        tracing::debug!(error = %e, "unknown or malformed notification ignored")
                    }
                }
                None
            }
            JsonRpcMessage::Response(response) => {
                self.state
                    .pending
                    .resolve(&response.id, Ok(response.result));
                None
            }
            JsonRpcMessage::Error(error) => {
                if let Some(id) = error.id.request_id() {
                    self.state.pending.resolve(id, Err(error.error));
                }
                None
            }
        }
    }

    fn handle_request(
        &self,
        request: JsonRpcRequest,
        transport: TransportContext,
        back_channel: bool,
    ) -> ResponseStream {
        if request.method == methods::INITIALIZE {
            let response = match self.initialize(&request) {
                Ok(result) => respond(&request.id, Ok(result)),
                Err(e) => respond(&request.id, Err(e)),
            };
            return ResponseStream::ready(response);
        }
        let typed = ClientRequest::from_request(&request);
        let enveloped = match &typed {
            Ok(t) => t.meta().is_some_and(|m| m.protocol_version.is_some()),
            Err(_) => probe_meta(request.params.as_deref())
                .as_ref()
                .is_some_and(|m| m.get(meta::PROTOCOL_VERSION).is_some()),
        };
        let route = if enveloped || !self.is_legacy() {
            Route::Modern {
                transport,
                session: Some(self.state.clone()),
            }
        } else {
            Route::Legacy {
                session: self.state.clone(),
                transport,
                back_channel,
            }
        };
        spawn_request(self.state.inner.clone(), request, typed, route)
    }

    fn initialize(&self, request: &JsonRpcRequest) -> Result<Box<RawValue>, ErrorObject> {
        let cap = self.state.inner.server.limits.max_initialize_params;
        if request
            .params
            .as_deref()
            .is_some_and(|p| p.get().len() > cap)
        {
            return Err(ErrorObject::invalid_params(format!(
                "initialize params exceed {cap} bytes; send a smaller clientInfo and capabilities"
            )));
        }
        let params: InitializeRequestParams = match ClientRequest::from_request(request) {
            Ok(ClientRequest::Initialize(p)) => p,
            Ok(_) => {
                return Err(ErrorObject::internal(
                    "initialize decoded as another method",
                ));
            }
            Err(e) => return Err(params_error(e)),
        };
        let version = if LEGACY_VERSIONS.contains(&params.protocol_version.as_str()) {
            params.protocol_version.clone()
        } else {
            ProtocolVersion::LATEST_LEGACY.as_str().to_owned()
        };
        let first = {
            let Ok(mut legacy) = self.state.legacy.lock() else {
                return Err(ErrorObject::internal("session state is unavailable"));
            };
            let first = legacy.is_none();
            *legacy = Some(LegacyState {
                protocol_version: version.clone(),
                capabilities: Arc::new(params.capabilities),
                client_info: Some(Arc::new(params.client_info)),
                // Debug logs often hold internals: nothing below info until `logging/setLevel`.
                log_level: Some(LoggingLevel::Info),
            });
            first
        };
        if first {
            spawn_change_forwarder(&self.state);
        }
        let inner = &self.state.inner;
        tracing::debug!(%version, "legacy session initialized");
        to_raw(&InitializeResult {
            protocol_version: version,
            capabilities: inner.legacy_capabilities.clone(),
            server_info: (*inner.server.info).clone(),
            instructions: inner.server.instructions.clone(),
            meta: None,
            extra: JsonObject::new(),
        })
    }
}

/// Forwards change events to a legacy session as unsolicited notifications.
fn spawn_change_forwarder(state: &Arc<SessionState>) {
    if !state.inner.server.change_notifications {
        return;
    }
    let mut events = state.inner.notifier.subscribe();
    let state = state.clone();
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                () = state.closed.cancelled() => return,
                event = events.recv() => event,
            };
            let notification = match event {
                Ok(ChangeEvent::ToolsListChanged) => ServerNotification::ToolListChanged(None),
                Ok(ChangeEvent::PromptsListChanged) => ServerNotification::PromptListChanged(None),
                Ok(ChangeEvent::ResourcesListChanged) => {
                    ServerNotification::ResourceListChanged(None)
                }
                Ok(ChangeEvent::ResourceUpdated(uri)) => {
                    let subscribed = state
                        .subscriptions
                        .lock()
                        .map(|s| s.iter().any(|s| covers(s, &uri)))
                        .unwrap_or(false)
                        && may_hear(
                            &state.inner.server,
                            state.transport.principal.as_ref(),
                            &uri,
                        );
                    if !subscribed {
                        continue;
                    }
                    ServerNotification::ResourceUpdated(ResourceUriParams {
                        uri,
                        meta: None,
                        extra: JsonObject::new(),
                    })
                }
                Ok(ChangeEvent::Shutdown) => continue,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(
                        skipped = n,
                        "a legacy session lagged behind change notifications"
                    );
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            };
            if let Ok(n) = notification.to_notification() {
                match state.outbound.try_send(JsonRpcMessage::Notification(n)) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(_)) => tracing::warn!(
                        "a legacy session's reader is not keeping up; a notification was dropped"
                    ),
                    Err(mpsc::error::TrySendError::Closed(_)) => return,
                }
            }
        }
    });
}

/// Whether the server's update filter lets `principal` hear that `uri` changed.
fn may_hear(server: &Server, principal: Option<&Principal>, uri: &str) -> bool {
    server
        .update_filter
        .as_ref()
        .is_none_or(|filter| filter(principal, uri))
}

/// Whether a subscription to `subscribed` covers an update of `uri` (itself or a sub-resource).
fn covers(subscribed: &str, uri: &str) -> bool {
    uri == subscribed
        || uri
            .strip_prefix(subscribed)
            .is_some_and(|rest| subscribed.ends_with('/') || rest.starts_with('/'))
}

enum Route {
    Modern {
        transport: TransportContext,
        session: Option<Arc<SessionState>>,
    },
    Legacy {
        session: Arc<SessionState>,
        transport: TransportContext,
        back_channel: bool,
    },
}

impl Route {
    fn session(&self) -> Option<&Arc<SessionState>> {
        match self {
            Route::Modern { session, .. } => session.as_ref(),
            Route::Legacy { session, .. } => Some(session),
        }
    }
}

type Served = Option<Result<Box<RawValue>, ErrorObject>>;

fn respond(id: &RequestId, result: Result<Box<RawValue>, ErrorObject>) -> JsonRpcMessage {
    match result {
        Ok(result) => JsonRpcMessage::Response(JsonRpcResponse {
            id: id.clone(),
            result,
            extra: JsonObject::new(),
        }),
        Err(error) => JsonRpcMessage::Error(JsonRpcError::new(Some(id.clone()), error)),
    }
}

fn spawn_request(
    inner: Arc<Inner>,
    request: JsonRpcRequest,
    typed: Result<ClientRequest, ParamsError>,
    route: Route,
) -> ResponseStream {
    let cancel = CancellationToken::new();
    if let Some(session) = route.session() {
        let stream = request.method == methods::SUBSCRIPTIONS_LISTEN;
        if !session.track(&request.id, cancel.clone(), stream) {
            return ResponseStream::ready(respond(
                &request.id,
                Err(ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "a request with id {} is already in flight on this session",
                        request.id
                    ),
                )),
            ));
        }
    }
    let era: Option<std::borrow::Cow<'_, str>> = match &route {
        Route::Modern { .. } => typed
            .as_ref()
            .ok()
            .and_then(|t| t.meta())
            .and_then(|m| m.protocol_version.as_deref())
            .map(std::borrow::Cow::Borrowed),
        Route::Legacy { session, .. } => session
            .with_legacy(|l| l.protocol_version.clone())
            .map(std::borrow::Cow::Owned),
    };
    let traced = RequestSpan::open(&request, typed.as_ref().ok(), era.as_deref());
    let span = traced.span.clone();
    let (sink, rx) = Sink::channel();
    let task = async move {
        let id = request.id.clone();
        let work = CatchUnwind(Box::pin(async {
            match &route {
                Route::Modern { transport, .. } => {
                    serve_modern(&inner, &request, typed, transport, &sink, &cancel).await
                }
                Route::Legacy {
                    session,
                    transport,
                    back_channel,
                } => {
                    let call = LegacyCall {
                        session,
                        transport,
                        back_channel: *back_channel,
                    };
                    serve_legacy(&inner, &request, typed, &call, &sink, &cancel).await
                }
            }
        }));
        let served = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            () = sink.closed() => {
                cancel.cancel();
                None
            }
            served = work => served.unwrap_or_else(|| {
                tracing::error!(%id, "a handler panicked; answering -32603");
                Some(Err(ErrorObject::internal("Internal error")))
            }),
        };
        traced.finish(served.as_ref().map(|r| r.as_ref().map(|raw| raw.get())));
        if let Some(result) = served {
            sink.send(respond(&id, result)).await;
        } else {
            tracing::debug!(%id, "request cancelled; no response is sent");
        }
        if let Some(session) = route.session() {
            session.untrack(&id);
        }
    };
    run_until_it_waits(Box::pin(tracing::Instrument::instrument(task, span)));
    ResponseStream { rx }
}

/// Polls a request once, here, and hands it to the runtime only if it has to wait. Most
/// handlers answer without waiting on anything (a tool that computes its result): those finish
/// on the caller's task, with their answer already in the response channel, and cost no task
/// of their own, no scheduling and no wake-up of another worker. A request that waits (a
/// back-channel question, a timer, I/O) is spawned where it stopped; the runtime's first poll
/// gives every future it waits on the task's real waker.
fn run_until_it_waits(mut task: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>) {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    if task.as_mut().poll(&mut cx).is_pending() {
        tokio::spawn(task);
    }
}

fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, ErrorObject> {
    mcp_types::jsonrpc::to_raw(value)
        .map_err(|e| ErrorObject::internal(format!("the result could not be serialized: {e}")))
}

fn params_error(e: ParamsError) -> ErrorObject {
    match e {
        ParamsError::UnknownMethod(method) => ErrorObject::method_not_found(&method),
        other => ErrorObject::invalid_params(other.to_string()),
    }
}

fn probe_meta(params: Option<&RawValue>) -> Option<JsonObject> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "_meta")]
        meta: Option<Value>,
    }
    let probe: Probe = serde_json::from_str(params?.get()).ok()?;
    match probe.meta? {
        Value::Object(o) => Some(o),
        _ => None,
    }
}

/// The 2026-07-28 envelope checks, on a `_meta` read without the method's type: used when the
/// params do not parse, so an envelope or version error still wins over a params error.
fn check_raw_envelope(params: Option<&RawValue>) -> Result<(), ErrorObject> {
    let Some(meta) = probe_meta(params) else {
        return Err(envelope_missing());
    };
    let missing: Vec<&str> = [meta::PROTOCOL_VERSION, meta::CLIENT_CAPABILITIES]
        .into_iter()
        .filter(|k| !meta.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return Err(envelope_keys_missing(&missing));
    }
    match meta.get(meta::PROTOCOL_VERSION) {
        Some(Value::String(v)) => check_version(v),
        _ => Err(ErrorObject::invalid_params(format!(
            "params._meta '{}' must be a string",
            meta::PROTOCOL_VERSION
        ))),
    }
}

fn envelope_missing() -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "params._meta must be an object carrying the required '{}' and '{}' envelope keys",
        meta::PROTOCOL_VERSION,
        meta::CLIENT_CAPABILITIES
    ))
}

fn envelope_keys_missing(missing: &[&str]) -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "params._meta is missing the required envelope key(s): {}",
        missing.join(", ")
    ))
}

fn check_version(version: &str) -> Result<(), ErrorObject> {
    if MODERN_VERSIONS.contains(&version) {
        Ok(())
    } else {
        Err(ErrorObject::unsupported_protocol_version(
            &MODERN_VERSIONS,
            version,
        ))
    }
}

/// Whether the server serves `method` at all (its capability is advertised).
fn method_served(server: &Server, method: &str) -> bool {
    match method {
        methods::TOOLS_LIST | methods::TOOLS_CALL => server.serves_tools(),
        methods::PROMPTS_LIST | methods::PROMPTS_GET => server.serves_prompts(),
        methods::RESOURCES_LIST | methods::RESOURCES_TEMPLATES_LIST | methods::RESOURCES_READ => {
            server.serves_resources()
        }
        methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
            server.serves_resources() && server.change_notifications
        }
        methods::SUBSCRIPTIONS_LISTEN => server.change_notifications,
        methods::COMPLETION_COMPLETE => server.handlers.complete.is_some(),
        methods::TASKS_GET
        | methods::TASKS_RESULT
        | methods::TASKS_LIST
        | methods::TASKS_CANCEL => false,
        _ => true,
    }
}

/// Whether `method` exists on the 2026-07-28 wire and this server serves it.
fn modern_method_served(server: &Server, method: &str) -> bool {
    methods::exists(
        ProtocolVersion::V2026_07_28,
        method,
        Kind::Request,
        Direction::ClientToServer,
    ) && method_served(server, method)
}

async fn serve_modern(
    inner: &Arc<Inner>,
    request: &JsonRpcRequest,
    typed: Result<ClientRequest, ParamsError>,
    transport: &TransportContext,
    sink: &Sink,
    cancel: &CancellationToken,
) -> Served {
    let typed = match typed {
        Ok(typed) => typed,
        Err(e) => {
            if let Err(envelope) = check_raw_envelope(request.params.as_deref()) {
                return Some(Err(envelope));
            }
            if let Some(method) = inner.server.extension_methods.get(&request.method) {
                let meta: Meta = probe_meta(request.params.as_deref())
                    .and_then(|m| serde_json::from_value(Value::Object(m)).ok())
                    .unwrap_or_default();
                if let Err(e) =
                    check_meta_size(request, &meta, inner.server.limits.max_initialize_params)
                {
                    return Some(Err(e));
                }
                let ctx = modern_context(inner, request, meta, transport, sink, cancel);
                return Some(Box::pin(extension_request(inner, method, request, ctx)).await);
            }
            // The method is checked before its params: a removed method (`initialize`,
            // `logging/setLevel`...) is -32601 whatever params it carries.
            let served = modern_method_served(&inner.server, &request.method)
                || crate::tasks::serves(inner.server.tasks.is_some(), &request.method);
            if !served {
                return Some(Err(ErrorObject::method_not_found(&request.method)));
            }
            return Some(Err(params_error(e)));
        }
    };
    let Some(meta) = typed.meta() else {
        return Some(Err(envelope_missing()));
    };
    let missing = meta.missing_envelope_keys();
    if !missing.is_empty() {
        return Some(Err(envelope_keys_missing(&missing)));
    }
    let version = meta.protocol_version.clone().unwrap_or_default();
    if let Err(e) = check_version(&version) {
        return Some(Err(e));
    }
    if let Err(e) = check_meta_size(request, meta, inner.server.limits.max_initialize_params) {
        return Some(Err(e));
    }
    let method = typed.method();
    if crate::tasks::is_task_method(method) {
        let caps = meta.client_capabilities.clone().unwrap_or_default();
        let principal = match task_principal(inner, method, transport) {
            Ok(principal) => principal,
            Err(e) => return Some(Err(e)),
        };
        let served = crate::tasks::TaskEngine::serve(
            inner.server.tasks.as_ref(),
            typed,
            &caps,
            principal.as_ref(),
        );
        return Some(Box::pin(served).await);
    }
    if !modern_method_served(&inner.server, method) {
        return Some(Err(ErrorObject::method_not_found(&request.method)));
    }
    let ctx = modern_context(inner, request, meta.clone(), transport, sink, cancel);
    match typed {
        ClientRequest::Discover(_) => Some(discover(inner)),
        ClientRequest::SubscriptionsListen(params) => {
            let principal = transport.principal.as_ref();
            Box::pin(listen(inner, &request.id, params, principal, sink, cancel)).await
        }
        other => Some(execute(inner, other, ctx, transport).await),
    }
}

/// A request's `_meta` (its client capabilities and identity on 2026-07-28) is kept for as long
/// as the request runs, a task's for the task's whole life, so it is capped like the
/// `initialize` params a legacy session keeps (review W1). Params no longer than the cap cannot
/// hold a larger `_meta`, so an ordinary request costs one comparison.
fn check_meta_size(request: &JsonRpcRequest, meta: &Meta, limit: usize) -> Result<(), ErrorObject> {
    if request
        .params
        .as_ref()
        .is_none_or(|p| p.get().len() <= limit)
    {
        return Ok(());
    }
    if crate::json_size::encoded_len_within(meta, limit) {
        Ok(())
    } else {
        Err(ErrorObject::invalid_params(format!(
            "_meta exceeds {limit} bytes; send smaller clientCapabilities, clientInfo and _meta members"
        )))
    }
}

/// Who a `tasks/*` request comes from: the authenticated principal, else the one the sealing
/// boundary's principal binding resolves (a deployment whose authentication ends at a gateway),
/// the same identity a task was created under (review W19). A binding that fails refuses the
/// request: a task is never served to a caller nobody could name.
fn task_principal(
    inner: &Inner,
    method: &str,
    transport: &TransportContext,
) -> Result<Option<Principal>, ErrorObject> {
    if transport.principal.is_some() {
        return Ok(transport.principal.clone());
    }
    let Some(boundary) = inner.server.boundary.as_ref() else {
        return Ok(None);
    };
    let source = PrincipalSource::new(method, None);
    let source = match transport.context.as_deref() {
        Some(context) => source.with_context(context),
        None => source,
    };
    boundary.principal(&source).map_err(|e| {
        tracing::debug!(reason = %e.reason(), "principal binding failed for a task request");
        ErrorObject::new(
            mcp_types::ErrorCode::INVALID_REQUEST,
            "The caller of this request could not be determined",
        )
    })
}

/// The context of a 2026-07-28 request: what it knows of its client comes from its `_meta`.
fn modern_context(
    inner: &Inner,
    request: &JsonRpcRequest,
    meta: Meta,
    transport: &TransportContext,
    sink: &Sink,
    cancel: &CancellationToken,
) -> RequestContext {
    RequestContext {
        id: request.id.clone(),
        method: request.method.clone(),
        era: Era::Modern,
        protocol_version: meta.protocol_version.clone().unwrap_or_default(),
        client_capabilities: meta.client_capabilities.clone().unwrap_or_default(),
        client_info: meta.client_info.clone(),
        progress_token: meta.progress_token.clone(),
        log_level: meta.log_level,
        meta: Some(Arc::new(meta)),
        principal: transport.principal.clone(),
        request_state: None,
        input_responses: None,
        sink: sink.clone(),
        cancellation: cancel.clone(),
        peer: None,
        notifier: inner.notifier.clone(),
        task: Default::default(),
    }
}

/// The context of a 2025-11-25 request: what it knows of its client comes from the session's
/// `initialize`, the request's own `_meta` adds its progress token.
fn legacy_context(
    inner: &Inner,
    request: &JsonRpcRequest,
    meta: Option<Meta>,
    legacy: &LegacyState,
    call: &LegacyCall<'_>,
    sink: &Sink,
    cancel: &CancellationToken,
) -> RequestContext {
    RequestContext {
        id: request.id.clone(),
        method: request.method.clone(),
        era: Era::Legacy,
        protocol_version: legacy.protocol_version.clone(),
        client_capabilities: legacy.capabilities.clone(),
        client_info: legacy.client_info.clone(),
        progress_token: meta.as_ref().and_then(|m| m.progress_token.clone()),
        meta: meta.map(Arc::new),
        principal: call.transport.principal.clone(),
        request_state: None,
        input_responses: None,
        log_level: legacy.log_level,
        sink: sink.clone(),
        cancellation: cancel.clone(),
        peer: call.back_channel.then(|| Peer {
            pending: call.session.pending.clone(),
            timeout: inner.server.request_timeout,
        }),
        notifier: inner.notifier.clone(),
        task: Default::default(),
    }
}

/// Who a legacy request came from: its session, its own transport context, and whether the
/// client can receive server-to-client requests while it waits.
struct LegacyCall<'a> {
    session: &'a Arc<SessionState>,
    transport: &'a TransportContext,
    back_channel: bool,
}

async fn serve_legacy(
    inner: &Arc<Inner>,
    request: &JsonRpcRequest,
    typed: Result<ClientRequest, ParamsError>,
    call: &LegacyCall<'_>,
    sink: &Sink,
    cancel: &CancellationToken,
) -> Served {
    let session = call.session;
    let Some(legacy) = session.legacy() else {
        return Some(Err(ErrorObject::internal("the legacy session is gone")));
    };
    let typed = match typed {
        Ok(typed) => typed,
        Err(e) => {
            let Some(method) = inner.server.extension_methods.get(&request.method) else {
                return Some(Err(params_error(e)));
            };
            let meta: Option<Meta> = probe_meta(request.params.as_deref())
                .and_then(|m| serde_json::from_value(Value::Object(m)).ok());
            if let Some(meta) = &meta
                && let Err(e) =
                    check_meta_size(request, meta, inner.server.limits.max_initialize_params)
            {
                return Some(Err(e));
            }
            let ctx = legacy_context(inner, request, meta, &legacy, call, sink, cancel);
            return Some(Box::pin(extension_request(inner, method, request, ctx)).await);
        }
    };
    let method = typed.method();
    if !methods::exists(
        ProtocolVersion::LATEST_LEGACY,
        method,
        Kind::Request,
        Direction::ClientToServer,
    ) || !method_served(&inner.server, method)
    {
        return Some(Err(ErrorObject::method_not_found(&request.method)));
    }
    let meta = typed.meta().cloned();
    if let Some(meta) = &meta
        && let Err(e) = check_meta_size(request, meta, inner.server.limits.max_initialize_params)
    {
        return Some(Err(e));
    }
    let ctx = legacy_context(inner, request, meta, &legacy, call, sink, cancel);
    let empty = || to_raw(&EmptyResult::default());
    Some(match typed {
        ClientRequest::Ping(_) => empty(),
        ClientRequest::SetLevel(params) => {
            session.with_legacy(|l| l.log_level = Some(params.level));
            empty()
        }
        ClientRequest::Subscribe(params) => Box::pin(subscribe(inner, session, ctx, params)).await,
        ClientRequest::Unsubscribe(params) => {
            if let Ok(mut subscriptions) = session.subscriptions.lock() {
                subscriptions.remove(&params.uri);
            }
            match &inner.server.handlers.unsubscribe {
                Some(handler) => handler(ctx, params).await.and_then(|()| empty()),
                None => empty(),
            }
        }
        other => execute(inner, other, ctx, call.transport).await,
    })
}

/// Legacy `resources/subscribe`: within the session's limits, and recorded only once the
/// handler accepted it.
async fn subscribe(
    inner: &Arc<Inner>,
    session: &Arc<SessionState>,
    ctx: RequestContext,
    params: ResourceUriParams,
) -> Result<Box<RawValue>, ErrorObject> {
    let limits = &inner.server.limits;
    if params.uri.len() > limits.max_subscription_uri {
        return Err(ErrorObject::invalid_params(format!(
            "a subscribed URI is at most {} bytes",
            limits.max_subscription_uri
        )));
    }
    let full = |n: usize| {
        ErrorObject::invalid_params(format!(
            "A session holds at most {n} resource subscriptions"
        ))
    };
    let held = session
        .subscriptions
        .lock()
        .map(|s| (s.len(), s.contains(&params.uri)))
        .unwrap_or((usize::MAX, false));
    if !held.1 && held.0 >= limits.max_subscriptions {
        return Err(full(limits.max_subscriptions));
    }
    let uri = params.uri.clone();
    if let Some(handler) = &inner.server.handlers.subscribe {
        handler(ctx, params).await?;
    }
    let Ok(mut subscriptions) = session.subscriptions.lock() else {
        return Err(ErrorObject::internal("session state is unavailable"));
    };
    // Checked again: concurrent subscribes may have filled the set meanwhile.
    if !subscriptions.contains(&uri) && subscriptions.len() >= limits.max_subscriptions {
        return Err(full(limits.max_subscriptions));
    }
    subscriptions.insert(uri);
    to_raw(&EmptyResult::default())
}

fn discover(inner: &Inner) -> Result<Box<RawValue>, ErrorObject> {
    let mut result = DiscoverResult {
        supported_versions: SUPPORTED_VERSIONS.iter().map(|v| (*v).to_owned()).collect(),
        capabilities: inner.capabilities.clone(),
        instructions: inner.server.instructions.clone(),
        ..DiscoverResult::default()
    };
    result.stamp_modern(&Stamp {
        server_info: &inner.server.info,
        cache: inner.server.discover_cache,
    });
    to_raw(&result)
}

/// `subscriptions/listen`: acknowledge, then deliver the opted-in changes tagged with the
/// listen id until the client cancels or the server shuts down (then send the result).
async fn listen(
    inner: &Arc<Inner>,
    id: &RequestId,
    params: SubscriptionsListenRequestParams,
    principal: Option<&Principal>,
    sink: &Sink,
    cancel: &CancellationToken,
) -> Served {
    let wanted = params.notifications;
    let server = &inner.server;
    let honoured = SubscriptionFilter {
        tools_list_changed: wanted
            .tools_list_changed
            .filter(|w| *w && server.serves_tools()),
        prompts_list_changed: wanted
            .prompts_list_changed
            .filter(|w| *w && server.serves_prompts()),
        resources_list_changed: wanted
            .resources_list_changed
            .filter(|w| *w && server.serves_resources()),
        resource_subscriptions: wanted
            .resource_subscriptions
            .filter(|_| server.serves_resources()),
        extra: JsonObject::new(),
    };
    // Subscribe before acknowledging, so no change between the two is lost.
    let mut events = inner.notifier.subscribe();
    let tag = || {
        Some(Meta {
            subscription_id: Some(id.clone()),
            ..Meta::default()
        })
    };
    sink.notify(ServerNotification::SubscriptionsAcknowledged(
        SubscriptionsAcknowledgedParams {
            notifications: honoured.clone(),
            meta: tag(),
            extra: JsonObject::new(),
        },
    ))
    .await;
    let tagged = || {
        Some(RequestParams {
            meta: tag(),
            extra: JsonObject::new(),
        })
    };
    loop {
        let event = tokio::select! {
            () = cancel.cancelled() => return None,
            event = events.recv() => event,
        };
        let notification = match event {
            Ok(ChangeEvent::ToolsListChanged) if honoured.tools_list_changed == Some(true) => {
                ServerNotification::ToolListChanged(tagged())
            }
            Ok(ChangeEvent::PromptsListChanged) if honoured.prompts_list_changed == Some(true) => {
                ServerNotification::PromptListChanged(tagged())
            }
            Ok(ChangeEvent::ResourcesListChanged)
                if honoured.resources_list_changed == Some(true) =>
            {
                ServerNotification::ResourceListChanged(tagged())
            }
            Ok(ChangeEvent::ResourceUpdated(uri))
                if honoured
                    .resource_subscriptions
                    .as_ref()
                    .is_some_and(|s| s.iter().any(|s| covers(s, &uri)))
                    && may_hear(server, principal, &uri) =>
            {
                ServerNotification::ResourceUpdated(ResourceUriParams {
                    uri,
                    meta: tag(),
                    extra: JsonObject::new(),
                })
            }
            Ok(ChangeEvent::Shutdown) | Err(broadcast::error::RecvError::Closed) => {
                let mut result = EmptyResult {
                    meta: tag(),
                    ..EmptyResult::default()
                };
                result.stamp_modern(&Stamp {
                    server_info: &server.info,
                    cache: server.cache,
                });
                return Some(to_raw(&result));
            }
            Ok(_) => continue,
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(
                    skipped = n,
                    "a listen stream lagged behind change notifications"
                );
                continue;
            }
        };
        sink.notify(notification).await;
    }
}

/// An extension's request: params as an object (without `_meta`), the handler, then the
/// era's stamping by JSON (`resultType`, server identity and, for a cacheable method, the
/// caching hints on 2026-07-28; none of them on 2025-11-25).
async fn extension_request(
    inner: &Inner,
    method: &crate::server::ExtensionMethod,
    request: &JsonRpcRequest,
    ctx: RequestContext,
) -> Result<Box<RawValue>, ErrorObject> {
    let mut params: JsonObject = match request.params.as_deref() {
        None => JsonObject::new(),
        Some(raw) => match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::Object(params)) => params,
            Ok(Value::Null) => JsonObject::new(),
            _ => {
                return Err(ErrorObject::invalid_params(format!(
                    "the params of '{}' must be an object",
                    request.method
                )));
            }
        },
    };
    params.remove("_meta");
    let era = ctx.era;
    let mut result = (method.handler)(ctx, params).await?;
    match era {
        Era::Modern => {
            result
                .entry("resultType")
                .or_insert_with(|| Value::from("complete"));
            if method.cacheable {
                let hints = inner.server.cache;
                result
                    .entry("ttlMs")
                    .or_insert_with(|| Value::from(hints.ttl_ms));
                result.entry("cacheScope").or_insert_with(|| {
                    serde_json::to_value(hints.scope).unwrap_or(Value::from("private"))
                });
            }
            let meta = result
                .entry("_meta")
                .or_insert_with(|| Value::Object(JsonObject::new()));
            if let Value::Object(meta) = meta {
                meta.entry(meta::SERVER_INFO).or_insert_with(|| {
                    serde_json::to_value(&inner.server.info).unwrap_or(Value::Null)
                });
            }
        }
        Era::Legacy => {
            result.remove("resultType");
            result.remove("ttlMs");
            result.remove("cacheScope");
        }
    }
    to_raw(&result)
}

fn finish<T: Stamped + Serialize>(
    inner: &Inner,
    era: Era,
    mut result: T,
) -> Result<Box<RawValue>, ErrorObject> {
    match era {
        Era::Modern => result.stamp_modern(&Stamp {
            server_info: &inner.server.info,
            cache: inner.server.cache,
        }),
        Era::Legacy => result.strip_legacy(),
    }
    to_raw(&result)
}

async fn list<P: Default, R: Stamped + Serialize + Default>(
    inner: &Inner,
    handler: Option<&Handler<P, R>>,
    ctx: RequestContext,
    params: Option<P>,
) -> Result<Box<RawValue>, ErrorObject> {
    let era = ctx.era;
    let result = match handler {
        Some(handler) => handler(ctx, params.unwrap_or_default()).await?,
        None => R::default(),
    };
    finish(inner, era, result)
}

/// The future of one method's work.
type Executing<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Box<RawValue>, ErrorObject>> + Send + 'a>,
>;

/// Runs a decoded request's method. Each method's future is boxed on its own, so the request's
/// future holds a pointer instead of room for the largest of them (and a second copy of the
/// request and its context, which an `async fn` matching here would keep).
fn execute<'a>(
    inner: &'a Arc<Inner>,
    typed: ClientRequest,
    ctx: RequestContext,
    transport: &'a TransportContext,
) -> Executing<'a> {
    let h = &inner.server.handlers;
    match typed {
        ClientRequest::ListTools(p) => Box::pin(list(inner, h.list_tools.as_ref(), ctx, p)),
        ClientRequest::ListPrompts(p) => Box::pin(list(inner, h.list_prompts.as_ref(), ctx, p)),
        ClientRequest::ListResources(p) => Box::pin(list(inner, h.list_resources.as_ref(), ctx, p)),
        ClientRequest::ListResourceTemplates(p) => {
            Box::pin(list(inner, h.list_resource_templates.as_ref(), ctx, p))
        }
        ClientRequest::Complete(p) => Box::pin(async move {
            match &h.complete {
                Some(handler) => {
                    let era = ctx.era;
                    let result = handler(ctx, p).await?;
                    finish(inner, era, result)
                }
                None => Err(ErrorObject::method_not_found(methods::COMPLETION_COMPLETE)),
            }
        }),
        ClientRequest::CallTool(p) => Box::pin(call_tool(inner, p, ctx, transport)),
        ClientRequest::GetPrompt(p) => Box::pin(async move {
            let binding = inner.server.boundary.is_some().then(|| BindingParts {
                method: methods::PROMPTS_GET,
                target: p.name.clone(),
                arguments: Some(
                    p.arguments
                        .as_ref()
                        .map(|a| {
                            Value::Object(
                                a.iter()
                                    .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                                    .collect(),
                            )
                        })
                        .unwrap_or_else(|| Value::Object(JsonObject::new())),
                ),
            });
            carrier(
                inner,
                h.get_prompt.as_ref(),
                p,
                ctx,
                transport,
                binding,
                |p| ErrorObject::invalid_params(format!("Unknown prompt: {}", p.name)),
            )
            .await
        }),
        ClientRequest::ReadResource(p) => Box::pin(async move {
            let binding = inner.server.boundary.is_some().then(|| BindingParts {
                method: methods::RESOURCES_READ,
                target: p.uri.clone(),
                arguments: None,
            });
            let era = ctx.era;
            carrier(
                inner,
                h.read_resource.as_ref(),
                p,
                ctx,
                transport,
                binding,
                |p| resource_not_found(era, &p.uri),
            )
            .await
        }),
        other => Box::pin(std::future::ready(Err(ErrorObject::method_not_found(
            other.method(),
        )))),
    }
}

/// `tools/call`: admitted as a task when the tool and the client agree, then through the
/// carrier (state verified, handler run, an outgoing round checked and sealed).
async fn call_tool(
    inner: &Arc<Inner>,
    mut p: mcp_types::tools::CallToolRequestParams,
    ctx: RequestContext,
    transport: &TransportContext,
) -> Result<Box<RawValue>, ErrorObject> {
    let launch = if ctx.era == Era::Modern {
        // The 2025-11-25 opt-in `params.task` means nothing on 2026-07-28.
        p.task = None;
        // A task belongs to the caller the sealing boundary would bind state to (review W19);
        // a binding that cannot name the caller refuses the task, not a plain call.
        let owner = match inner.server.tasks {
            Some(_) => task_principal(inner, methods::TOOLS_CALL, transport),
            None => Ok(None),
        };
        let launch = crate::tasks::TaskEngine::admit(
            inner.server.tasks.as_ref(),
            inner.server.task_support(&p.name),
            &p.name,
            ctx.client_capabilities(),
            owner.as_ref().ok().and_then(Option::as_ref),
        )?;
        if launch.is_some()
            && let Err(e) = owner
        {
            return Err(e);
        }
        launch
    } else {
        None
    };
    let mut ctx = ctx;
    if let Some(launch) = &launch {
        ctx.task = crate::tasks::TaskCtx::May(launch.clone());
    }
    let binding = inner.server.boundary.is_some().then(|| BindingParts {
        method: methods::TOOLS_CALL,
        target: p.name.clone(),
        arguments: Some(Value::Object(p.arguments.clone().unwrap_or_default())),
    });
    let served = carrier(
        inner,
        inner.server.handlers.call_tool.as_ref(),
        p,
        ctx,
        transport,
        binding,
        |p| ErrorObject::invalid_params(format!("Unknown tool: {}", p.name)),
    )
    .await;
    match launch.and_then(|l| l.take_created()) {
        Some(created) => to_raw(&created),
        None => served,
    }
}

/// "Resource not found": `-32602` with `data.uri` on 2026-07-28, the legacy `-32002` before.
pub fn resource_not_found(era: Era, uri: &str) -> ErrorObject {
    let code = match era {
        Era::Modern => ErrorCode::INVALID_PARAMS,
        Era::Legacy => ErrorCode::LEGACY_RESOURCE_NOT_FOUND,
    };
    ErrorObject::new(code, "Resource not found").with_data(serde_json::json!({ "uri": uri }))
}

struct BindingParts {
    method: &'static str,
    target: String,
    arguments: Option<Value>,
}

impl BindingParts {
    fn binding(&self) -> RequestBinding<'_> {
        RequestBinding::new(self.method, &self.target, self.arguments.as_ref())
    }
}

fn invalid_request_state() -> ErrorObject {
    ErrorObject::invalid_params(INVALID_REQUEST_STATE_MESSAGE)
        .with_data(serde_json::json!({ "reason": INVALID_REQUEST_STATE_DATA_REASON }))
}

/// A method that may answer `input_required`: verify the incoming state, run the handler,
/// check and seal the outgoing round.
async fn carrier<P, T>(
    inner: &Arc<Inner>,
    handler: Option<&Handler<P, Outcome<T>>>,
    mut params: P,
    mut ctx: RequestContext,
    transport: &TransportContext,
    binding: Option<BindingParts>,
    missing: impl FnOnce(&P) -> ErrorObject,
) -> Result<Box<RawValue>, ErrorObject>
where
    P: RetryParams,
    T: Stamped + Serialize,
{
    let Some(handler) = handler else {
        return Err(missing(&params));
    };
    let era = ctx.era;
    let boundary = inner
        .server
        .boundary
        .as_ref()
        .filter(|_| era == Era::Modern);
    let mut principal: Option<Result<Option<Principal>, ()>> = None;
    // The replay guard's claim on the incoming state, marked done once the handler answered.
    let mut claim = None;
    if era == Era::Modern {
        if let (Some(boundary), Some(parts)) = (boundary, binding.as_ref()) {
            let source = PrincipalSource::new(parts.method, transport.principal.as_ref());
            let source = match transport.context.as_deref() {
                Some(context) => source.with_context(context),
                None => source,
            };
            let resolved = boundary.principal(&source).map_err(|e| {
                tracing::debug!(reason = %e.reason(), "principal binding failed");
            });
            if let Some(state) = params.request_state_value() {
                let Ok(who) = &resolved else {
                    return Err(invalid_request_state());
                };
                let Some(token) = state.as_str() else {
                    tracing::debug!(method = parts.method, "requestState rejected: not a string");
                    return Err(invalid_request_state());
                };
                match Box::pin(boundary.unseal_claim(&parts.binding(), token, who.as_ref())).await {
                    Ok((plaintext, used)) => {
                        params.set_request_state(Some(plaintext));
                        claim = used;
                    }
                    Err(e) => {
                        tracing::debug!(method = parts.method, reason = %e.reason(), "requestState rejected");
                        return Err(invalid_request_state());
                    }
                }
            }
            principal = Some(resolved);
        } else if let Some(state) = params.request_state_value()
            && !state.is_string()
        {
            return Err(ErrorObject::invalid_params(
                "Invalid params: requestState must be a string",
            ));
        }
        ctx.request_state = params.request_state().map(str::to_owned);
        ctx.input_responses = params.input_responses().cloned().map(Arc::new);
    } else {
        // 2025-11-25 has no requestState: a client's value is never handed on unverified.
        params.set_request_state(None);
    }
    let caps = ctx.client_capabilities.clone();
    let outcome = handler(ctx, params).await;
    // The request produced its answer (a result or an error): its state is done once the
    // transport delivered it (or now, without a transport that says so), so no other
    // instance may take it over after that.
    if let Some(claim) = claim {
        let unheld = match transport.delivery.as_deref() {
            Some(delivery) => delivery.hold(claim).err(),
            None => Some(claim),
        };
        if let Some(claim) = unheld {
            Box::pin(claim.finish()).await;
        }
    }
    match outcome? {
        Outcome::Complete(result) => finish(inner, era, result),
        Outcome::InputRequired(_) if era == Era::Legacy => {
            tracing::warn!("a handler returned input_required on a 2025-11-25 session");
            Err(ErrorObject::internal("Handler returned an invalid result"))
        }
        Outcome::InputRequired(mut round) => {
            if !round.is_well_formed() {
                tracing::warn!(
                    "a handler returned input_required with neither inputRequests nor requestState"
                );
                return Err(ErrorObject::internal("Handler returned an invalid result"));
            }
            if let Some(requests) = &round.input_requests {
                gating::check_input_requests(requests.iter(), &caps)?;
            }
            if let (Some(boundary), Some(parts), Some(state)) =
                (boundary, binding.as_ref(), round.request_state.as_ref())
            {
                let Some(Ok(who)) = principal else {
                    return Err(ErrorObject::internal("Internal error"));
                };
                match boundary.seal(&parts.binding(), state, who.as_ref()) {
                    Ok(token) => round.request_state = Some(token),
                    Err(e) => {
                        tracing::warn!(error = %e, "sealing requestState failed");
                        return Err(ErrorObject::internal("Internal error"));
                    }
                }
            }
            round.stamp_modern(&Stamp {
                server_info: &inner.server.info,
                cache: inner.server.cache,
            });
            debug_assert_eq!(round.result_type, ResultType::InputRequired);
            to_raw::<InputRequiredResult>(&round)
        }
    }
}
