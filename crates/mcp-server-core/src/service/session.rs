//! A session: a connection's view of the service (stdio, an in-memory pipe or one legacy HTTP
//! session), with the 2025-11-25 handshake and the requests it tracks.

use mcp_types::version::LEGACY_VERSIONS;
use std::fmt;
use std::sync::Arc;

use mcp_types::frame::ClientFrame;
use mcp_types::lifecycle::{InitializeRequestParams, InitializeResult};
use mcp_types::logging::LoggingLevel;
use mcp_types::meta::{self};
use mcp_types::methods::{self};
use mcp_types::notifications::CancelledParams;
use mcp_types::version::ProtocolVersion;
use mcp_types::{
    ClientNotification, ClientRequest, ErrorObject, JsonObject, JsonRpcMessage, JsonRpcRequest,
};
use serde_json::value::RawValue;

use crate::limits::SessionLimits;
use crate::trace::RequestSpan;

use crate::service::envelope::probe_meta;
use crate::service::inner::{LegacyState, params_error, respond, to_raw};
use crate::service::legacy::spawn_change_forwarder;
use crate::service::{Route, SessionState, spawn_request};
use crate::{ResponseStream, TransportContext};

/// One connection: a stdio process, a socket, an in-memory pipe, or a legacy HTTP session.
pub struct Session {
    pub(super) state: Arc<SessionState>,
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

    /// The session's record as a fleet's store keeps it (`None` before `initialize`).
    pub fn record(&self) -> Option<crate::fleet::SessionRecord> {
        self.state.record()
    }

    /// Takes on a stored record (see [`Service::restore`](super::Service::restore)): the
    /// first time, as if its `initialize` had run here; after that, its log level and
    /// subscriptions (what another instance may have changed since).
    pub fn restore(&self, record: &crate::fleet::SessionRecord) {
        let first = {
            let Ok(mut legacy) = self.state.legacy.lock() else {
                return;
            };
            let first = legacy.is_none();
            match legacy.as_mut() {
                Some(kept) => kept.log_level = record.log_level,
                None => {
                    *legacy = Some(LegacyState {
                        protocol_version: record.protocol_version.clone(),
                        capabilities: Arc::new(record.capabilities.clone()),
                        client_info: record.client_info.clone().map(Arc::new),
                        log_level: record.log_level,
                    })
                }
            }
            first
        };
        if let Ok(mut subscriptions) = self.state.subscriptions.lock() {
            let max = self.state.inner.server.limits.max_subscriptions;
            *subscriptions = record.subscriptions.iter().take(max).cloned().collect();
        }
        if first {
            spawn_change_forwarder(&self.state);
        }
    }

    /// Calls `hook` with the session's record whenever a request changes it
    /// (`logging/setLevel`, `resources/subscribe`, `resources/unsubscribe`). Set once; a
    /// second hook is ignored.
    pub fn on_record_change(
        &self,
        hook: impl Fn(crate::fleet::SessionRecord) + Send + Sync + 'static,
    ) {
        let _ = self.state.changed.set(Box::new(hook));
    }

    /// Delivers the session's unsolicited notifications (list changes, resource updates)
    /// only while `gate` says so, dropping them otherwise: a fleet instance delivers them
    /// only while it holds the session's GET stream, so that the one instance that does
    /// sends each once. Set once; without it every notification is queued for the session.
    pub fn deliver_unsolicited_when(&self, gate: impl Fn() -> bool + Send + Sync + 'static) {
        let _ = self.state.deliver.set(Box::new(gate));
    }

    /// The limits this session runs under.
    pub fn limits(&self) -> &SessionLimits {
        &self.state.inner.server.limits
    }

    /// Feeds one raw message (a stdio line, an HTTP body). Bytes that are not a valid message
    /// get the JSON-RPC error the spec names.
    pub fn handle_bytes(&self, bytes: &[u8]) -> Option<ResponseStream> {
        // An ordinary request is read in one pass, its params typed from the bytes.
        match ClientFrame::from_slice(bytes) {
            Ok(ClientFrame {
                message: JsonRpcMessage::Request(request),
                typed: Some(typed),
            }) => {
                Some(self.handle_request(request, Some(typed), self.state.transport.clone(), true))
            }
            Ok(frame) => self.handle(frame.message),
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
                Some(self.handle_request(request, None, transport, back_channel))
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

    /// Serves a request; `typed` is its params when the frame's one pass already read them.
    pub(super) fn handle_request(
        &self,
        request: JsonRpcRequest,
        typed: Option<ClientRequest>,
        transport: TransportContext,
        back_channel: bool,
    ) -> ResponseStream {
        if request.method == methods::INITIALIZE {
            let network = transport
                .network_transport
                .or(self.state.transport.network_transport);
            return ResponseStream::ready(self.handshake(&request, network));
        }
        let typed = match typed {
            Some(typed) => Ok(typed),
            None => ClientRequest::from_request(&request),
        };
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

    /// Answers `initialize` in its request span (named and parented like every other
    /// request's, at the version the client asked for).
    fn handshake(&self, request: &JsonRpcRequest, network: Option<&'static str>) -> JsonRpcMessage {
        let cap = self.state.inner.server.limits.max_initialize_params;
        let typed = if request
            .params
            .as_deref()
            .is_some_and(|p| p.get().len() > cap)
        {
            Err(ErrorObject::invalid_params(format!(
                "initialize params exceed {cap} bytes; send a smaller clientInfo and capabilities"
            )))
        } else {
            ClientRequest::from_request(request).map_err(params_error)
        };
        let asked = match &typed {
            Ok(ClientRequest::Initialize(p)) => Some(p.protocol_version.as_str()),
            _ => None,
        };
        let traced = RequestSpan::open(
            request,
            typed.as_ref().ok(),
            asked,
            network,
            &self.state.inner.server,
        );
        let result = traced.span.in_scope(|| self.initialize(typed));
        traced.finish(Some(result.as_ref().map(|raw| raw.get())));
        respond(&request.id, result)
    }

    pub(super) fn initialize(
        &self,
        typed: Result<ClientRequest, ErrorObject>,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let params: InitializeRequestParams = match typed {
            Ok(ClientRequest::Initialize(p)) => p,
            Ok(_) => {
                return Err(ErrorObject::internal(
                    "initialize decoded as another method",
                ));
            }
            Err(e) => return Err(e),
        };
        let version = if LEGACY_VERSIONS.contains(&params.protocol_version.as_str()) {
            params.protocol_version.clone()
        } else {
            ProtocolVersion::LATEST_LEGACY.as_str().to_owned()
        };
        let declared = Arc::new(params.capabilities);
        let first = {
            let Ok(mut legacy) = self.state.legacy.lock() else {
                return Err(ErrorObject::internal("session state is unavailable"));
            };
            let first = legacy.is_none();
            *legacy = Some(LegacyState {
                protocol_version: version.clone(),
                capabilities: declared.clone(),
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
        let mut capabilities = inner.legacy_capabilities.clone();
        if inner.server.extensions.advertisement_varies() {
            inner
                .server
                .extensions
                .filter_advertised(&mut capabilities.extensions, &declared);
        }
        to_raw(&InitializeResult {
            protocol_version: version,
            capabilities,
            server_info: (*inner.server.info).clone(),
            instructions: inner.server.instructions.clone(),
            meta: None,
            extra: JsonObject::new(),
        })
    }
}
