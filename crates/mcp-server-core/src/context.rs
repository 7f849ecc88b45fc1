//! What a handler knows about the request it serves: who asked, with which capabilities, the
//! multi-round-trip input, and the channels back to the client (progress, logs, and on legacy
//! sessions live server-to-client requests).

use std::sync::Arc;

use mcp_state_seal::Principal;
use mcp_types::capabilities::ClientCapabilities;
use mcp_types::elicitation::{
    ElicitAction, ElicitRequestFormParams, ElicitRequestParams, ElicitRequestUrlParams,
    ElicitResult, ElicitationCompleteParams,
};
use mcp_types::lifecycle::Implementation;
use mcp_types::logging::{LoggingLevel, LoggingMessageParams};
use mcp_types::meta::Meta;
use mcp_types::mrtr::InputResponses;
use mcp_types::notifications::{ProgressParams, ProgressToken};
use mcp_types::roots::ListRootsResult;
use mcp_types::sampling::{CreateMessageRequestParams, CreateMessageResult};
use mcp_types::version::Era;
use mcp_types::{
    ClientResult, ErrorObject, JsonObject, RequestId, ServerNotification, ServerRequest,
};
use serde_json::{Number, Value};

use crate::cancel::CancellationToken;
use crate::elicit::{ElicitModel, ElicitationResult, elicitation_schema, parse_elicit_result};
use crate::notify::ChangeNotifier;
use crate::peer::{ClientRequester, PeerError};
use crate::sink::Sink;

/// The context of one request, handed to its handler. Cheap to clone.
#[derive(Clone)]
pub struct RequestContext {
    pub(crate) id: RequestId,
    /// The method: the table's own name when it is one of the protocol's (no copy).
    pub(crate) method: std::borrow::Cow<'static, str>,
    pub(crate) era: Era,
    /// The version: the version table's own text when it is a known one (no copy).
    pub(crate) protocol_version: std::borrow::Cow<'static, str>,
    pub(crate) client_capabilities: Arc<ClientCapabilities>,
    pub(crate) client_info: Option<Arc<Implementation>>,
    pub(crate) meta: Option<Arc<Meta>>,
    pub(crate) principal: Option<Principal>,
    pub(crate) request_state: Option<String>,
    /// Shared: resolvers get clones of the context, one per resolver and round.
    pub(crate) input_responses: Option<Arc<InputResponses>>,
    pub(crate) progress_token: Option<ProgressToken>,
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) sink: Sink,
    pub(crate) cancellation: CancellationToken,
    pub(crate) peer: Option<ClientRequester>,
    pub(crate) notifier: ChangeNotifier,
    pub(crate) task: crate::tasks::TaskCtx,
    /// The server's sealing boundary and what its principal binding reads, for handles.
    pub(crate) sealing: Option<crate::sealing::Sealing>,
    /// The server's application state, shared.
    pub(crate) state: crate::state::StateMap,
}

/// Shows what the request is, never what it carries: the unsealed state and the answers may
/// hold anything the user typed.
impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("id", &self.id)
            .field("method", &self.method)
            .field("era", &self.era)
            .field("protocol_version", &self.protocol_version)
            .field("principal", &self.principal)
            .field(
                "request_state",
                &self.request_state.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "input_responses",
                &self.input_responses.as_ref().map(|r| r.len()),
            )
            .field("progress_token", &self.progress_token)
            .field("log_level", &self.log_level)
            .field("back_channel", &self.peer.is_some())
            .finish_non_exhaustive()
    }
}

impl RequestContext {
    /// What the task engine reads of a `tasks/*` request.
    pub(crate) fn task_caller(&self) -> crate::tasks::TaskCaller<'_> {
        crate::tasks::TaskCaller {
            method: &self.method,
            capabilities: &self.client_capabilities,
            principal: self.principal.as_ref(),
        }
    }

    /// Trims what a task's body keeps of its creating request for the task's whole life
    /// (review W1): the declared capabilities as flags, the extensions by name without their
    /// settings, and `_meta` sharing that trimmed copy instead of whatever the client sent.
    pub(crate) fn keep_for_task(&mut self) {
        if let Some(sealing) = &mut self.sealing {
            sealing.settle(&self.method, self.principal.as_ref());
        }
        let declared = &self.client_capabilities;
        let mut caps = crate::gating::ClientSupport::of(declared).to_capabilities();
        caps.extensions = declared.extensions.as_ref().map(|e| {
            e.keys()
                .map(|k| (k.clone(), mcp_types::JsonObject::new()))
                .collect()
        });
        let caps = Arc::new(caps);
        if let Some(meta) = &self.meta {
            let mut meta = Meta::clone(meta);
            meta.client_capabilities = Some(caps.clone());
            self.meta = Some(Arc::new(meta));
        }
        self.client_capabilities = caps;
    }

    /// The server's application state of type `T` (given with `with_state`), if it has one.
    /// Annotated functions take it as a parameter instead: `notes: State<Notes>`.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<crate::State<T>> {
        self.state.get()
    }

    /// The JSON-RPC id of the request.
    pub fn request_id(&self) -> &RequestId {
        &self.id
    }

    /// The method, e.g. `tools/call`.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Which era the request belongs to: a stateless 2026-07-28 request or a legacy session.
    pub fn era(&self) -> Era {
        self.era
    }

    /// The protocol version of this request (modern) or of the session (legacy).
    pub fn protocol_version(&self) -> &str {
        &self.protocol_version
    }

    /// The capabilities the client declared: on 2026-07-28 for *this* request only, on
    /// 2025-11-25 for the session.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.client_capabilities
    }

    /// The settings the client declared for extension `id` (on 2026-07-28 in this request's
    /// capabilities, on 2025-11-25 in the session's), or `None` when it did not declare it.
    /// Whether it counts as negotiated is the extension's call:
    /// [`Extension::negotiated`](crate::Extension::negotiated).
    pub fn extension(&self, id: &str) -> Option<&mcp_types::JsonObject> {
        self.client_capabilities.extensions.as_ref()?.get(id)
    }

    /// The client's self-reported identity, if it sent one. Never a security signal.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.client_info.as_deref()
    }

    /// The request's `_meta`, as sent.
    pub fn meta(&self) -> Option<&Meta> {
        self.meta.as_deref()
    }

    /// The authenticated principal, when the transport authenticated one.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    /// The plaintext `requestState` of this retry: verified and unsealed when the server has a
    /// sealing boundary, verbatim otherwise.
    pub fn request_state(&self) -> Option<&str> {
        self.request_state.as_deref()
    }

    /// The `inputResponses` of this retry, keyed like the previous round's `inputRequests`.
    pub fn input_responses(&self) -> Option<&InputResponses> {
        self.input_responses.as_deref()
    }

    /// A signal that trips when the client cancels the request (or the transport drops it).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancellation
    }

    /// Whether the request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation.is_cancelled()
    }

    /// A handle to announce list changes and resource updates to subscribers.
    pub fn notifier(&self) -> &ChangeNotifier {
        &self.notifier
    }

    /// Whether the client asked for progress (`_meta.progressToken`).
    pub fn wants_progress(&self) -> bool {
        self.progress_token.is_some()
    }

    /// Sends `notifications/progress` for this request, if the client asked for progress;
    /// otherwise does nothing. `progress` should increase with every call.
    ///
    /// Inside a task (which has no request stream to send on) it sets the task's
    /// `statusMessage` instead: `message`, or `progress/total` when there is none.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let crate::tasks::TaskCtx::Running(link) = &self.task {
            let text = match (message, total) {
                (Some(m), _) => m.to_owned(),
                (None, Some(total)) => format!("{progress}/{total}"),
                (None, None) => format!("{progress}"),
            };
            link.set_status_message(text).await;
            return;
        }
        let Some(token) = &self.progress_token else {
            return;
        };
        let (Some(progress), total) =
            (Number::from_f64(progress), total.and_then(Number::from_f64))
        else {
            return;
        };
        let params = ProgressParams {
            progress_token: token.clone(),
            progress,
            total,
            message: message.map(str::to_owned),
            meta: None,
            extra: JsonObject::new(),
        };
        self.sink.notify(ServerNotification::Progress(params)).await;
    }

    /// The least severe level the client wants logs at for this request, if any: on
    /// 2026-07-28 from `_meta.logLevel` (absent means no logs at all), on 2025-11-25 from
    /// `logging/setLevel`.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.log_level
    }

    /// Sends `notifications/message` for this request when `level` is at or above the level
    /// the client asked for; otherwise does nothing.
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        if self.log_level.is_none_or(|min| level < min) {
            return;
        }
        let params = LoggingMessageParams {
            level,
            logger: logger.map(str::to_owned),
            data,
            meta: None,
            extra: JsonObject::new(),
        };
        self.sink
            .notify(ServerNotification::LoggingMessage(params))
            .await;
    }

    /// Whether a live server-to-client request can be sent: a 2025-11-25 session, or the body
    /// of a task (whose questions become the task's `inputRequests`).
    pub fn has_back_channel(&self) -> bool {
        self.peer.is_some() || matches!(self.task, crate::tasks::TaskCtx::Running(_))
    }

    /// Sends a server-to-client request on a legacy session and waits for the answer.
    ///
    /// On a 2026-07-28 request there is no back-channel: return an `InputRequiredResult`
    /// instead (or use the high-level server's resolvers).
    ///
    /// Inside a task, an elicitation, sampling or roots request becomes one of the task's
    /// `inputRequests` and this waits for the answer `tasks/update` delivers.
    pub async fn send_request(&self, request: ServerRequest) -> Result<ClientResult, PeerError> {
        if let crate::tasks::TaskCtx::Running(link) = &self.task {
            let question = match request {
                ServerRequest::Elicit(mut p) => {
                    // 2026-07-28 has no elicitationId.
                    if let ElicitRequestParams::Url(url) = &mut p {
                        url.elicitation_id = None;
                    }
                    mcp_types::mrtr::InputRequest::Elicit(p)
                }
                ServerRequest::CreateMessage(p) => mcp_types::mrtr::InputRequest::CreateMessage(p),
                ServerRequest::ListRoots(p) => mcp_types::mrtr::InputRequest::ListRoots(p),
                other => {
                    return Err(PeerError::NoBackChannel {
                        method: other.method(),
                    });
                }
            };
            return link
                .ask(question, &self.client_capabilities, &self.cancellation)
                .await;
        }
        let Some(peer) = &self.peer else {
            return Err(PeerError::NoBackChannel {
                method: request.method(),
            });
        };
        peer.request(
            request,
            &self.client_capabilities,
            &self.cancellation,
            &self.sink,
        )
        .await
    }

    /// `elicitation/create` with hand-built params, on a legacy session.
    pub async fn elicit_with(
        &self,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, PeerError> {
        match self.send_request(ServerRequest::Elicit(params)).await? {
            ClientResult::Elicit(result) => Ok(result),
            other => Err(PeerError::wrong_result("elicitation/create", &other)),
        }
    }

    /// `sampling/createMessage` on a legacy session.
    pub async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, PeerError> {
        match self
            .send_request(ServerRequest::CreateMessage(params))
            .await?
        {
            ClientResult::CreateMessage(result) => Ok(result),
            other => Err(PeerError::wrong_result("sampling/createMessage", &other)),
        }
    }

    /// `roots/list` on a legacy session.
    pub async fn list_roots(&self) -> Result<ListRootsResult, PeerError> {
        match self.send_request(ServerRequest::ListRoots(None)).await? {
            ClientResult::ListRoots(result) => Ok(result),
            other => Err(PeerError::wrong_result("roots/list", &other)),
        }
    }

    /// Asks the user to fill in `T` as a form, live, on a 2025-11-25 session.
    ///
    /// A 2026-07-28 request has no back-channel: ask with a resolver (`#[resolve]`, or
    /// [`ToolDef::resolve`](crate::registry::ToolDef::resolve)) instead, which works on both eras.
    pub async fn elicit<T: ElicitModel>(
        &self,
        message: impl Into<String>,
    ) -> Result<ElicitationResult<T>, ErrorObject> {
        self.require_back_channel("ctx.elicit()")?;
        let schema = elicitation_schema::<T>().map_err(|e| ErrorObject::internal(e.0))?;
        let params = ElicitRequestParams::Form(ElicitRequestFormParams {
            mode: Some("form".into()),
            message: message.into(),
            requested_schema: (*schema).clone(),
            task: None,
            meta: None,
            extra: JsonObject::new(),
        });
        let result = self.elicit_with(params).await?;
        parse_elicit_result(&result)
            .map_err(|why| ErrorObject::invalid_params(format!("The client sent {why}")))
    }

    /// Asks the user to open `url` (URL-mode elicitation), live, on a 2025-11-25 session;
    /// `elicitation_id` correlates a later [`send_elicit_complete`](Self::send_elicit_complete).
    pub async fn elicit_url(
        &self,
        message: impl Into<String>,
        url: impl Into<String>,
        elicitation_id: impl Into<String>,
    ) -> Result<ElicitAction, ErrorObject> {
        self.require_back_channel("ctx.elicit_url()")?;
        let params = ElicitRequestParams::Url(ElicitRequestUrlParams {
            mode: "url".into(),
            message: message.into(),
            url: url.into(),
            elicitation_id: Some(elicitation_id.into()),
            task: None,
            meta: None,
            extra: JsonObject::new(),
        });
        Ok(self.elicit_with(params).await?.action)
    }

    /// Tells a 2025-11-25 client that the URL elicitation `elicitation_id` completed
    /// (`notifications/elicitation/complete`). 2026-07-28 has no such notification: the client
    /// learns the outcome by retrying, so on a modern request this is an error.
    pub async fn send_elicit_complete(
        &self,
        elicitation_id: impl Into<String>,
    ) -> Result<(), ErrorObject> {
        self.require_back_channel("ctx.send_elicit_complete()")?;
        self.notify(ServerNotification::ElicitationComplete(
            ElicitationCompleteParams {
                elicitation_id: elicitation_id.into(),
                extra: JsonObject::new(),
            },
        ))
        .await;
        Ok(())
    }

    fn require_back_channel(&self, what: &str) -> Result<(), ErrorObject> {
        if self.has_back_channel() && (self.peer.is_some() || what != "ctx.send_elicit_complete()")
        {
            return Ok(());
        }
        Err(ErrorObject::new(
            mcp_types::ErrorCode::INVALID_REQUEST,
            format!(
                "{what} needs a 2025-11-25 session with a live back-channel; on a 2026-07-28 request, \
                 ask with a resolver (#[resolve(...)]) or return an InputRequiredResult"
            ),
        ))
    }

    /// Sends a notification on this request's stream (e.g. the legacy
    /// `notifications/elicitation/complete`).
    pub async fn notify(&self, notification: ServerNotification) {
        self.sink.notify(notification).await;
    }
}

/// `method` as a context keeps it: the method table's own `&'static` name for a protocol
/// request, a copy only for another (an extension's) method.
pub(crate) fn method_name(method: &str) -> std::borrow::Cow<'static, str> {
    match mcp_types::methods::request(method) {
        Some(spec) => std::borrow::Cow::Borrowed(spec.name),
        None => std::borrow::Cow::Owned(method.to_owned()),
    }
}

/// `version` as a context keeps it: the version table's own text for a known version.
pub(crate) fn version_text(version: &str) -> std::borrow::Cow<'static, str> {
    match mcp_types::version::ProtocolVersion::parse(version) {
        Some(known) => std::borrow::Cow::Borrowed(known.as_str()),
        None => std::borrow::Cow::Owned(version.to_owned()),
    }
}
