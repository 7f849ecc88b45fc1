//! What every room of the service shares: the versions served, the service's state and a
//! session's, and the route a request takes. What a transport hands in and gets back is in
//! [`crate::transport`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use mcp_types::capabilities::{ClientCapabilities, ServerCapabilities};
use mcp_types::lifecycle::Implementation;
use mcp_types::logging::LoggingLevel;
use mcp_types::{
    ErrorObject, JsonObject, JsonRpcError, JsonRpcMessage, JsonRpcResponse, ParamsError, RequestId,
};
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::cancel::CancellationToken;
use crate::notify::ChangeNotifier;
use crate::peer::Pending;
use crate::server::Server;
use crate::transport::TransportContext;

pub use mcp_types::version::{LEGACY_VERSIONS, MODERN_VERSIONS, SUPPORTED_VERSIONS};

pub(crate) struct Inner {
    pub(crate) server: Server,
    pub(super) capabilities: ServerCapabilities,
    pub(super) legacy_capabilities: ServerCapabilities,
    pub(super) notifier: ChangeNotifier,
    /// The `_meta` holding the server's identity, serialized once (`stamp::server_info_bytes`).
    pub(super) server_info: Arc<serde_json::value::RawValue>,
    /// Whether [`Service::join_fleet`](super::Service::join_fleet) ran.
    pub(super) fleet_joined: std::sync::atomic::AtomicBool,
}

/// The state a legacy (2025-11-25) session negotiated with `initialize`.
#[derive(Debug, Clone)]
pub(super) struct LegacyState {
    pub(super) protocol_version: String,
    pub(super) capabilities: Arc<ClientCapabilities>,
    pub(super) client_info: Option<Arc<Implementation>>,
    pub(super) log_level: Option<LoggingLevel>,
}

pub(crate) struct SessionState {
    pub(super) inner: Arc<Inner>,
    pub(super) transport: TransportContext,
    pub(super) outbound: mpsc::Sender<JsonRpcMessage>,
    pub(super) legacy: Mutex<Option<LegacyState>>,
    /// Kept apart from `legacy`, which is cloned per request: this set can be large.
    pub(super) subscriptions: Mutex<HashSet<String>>,
    pub(super) inflight: Mutex<HashMap<RequestId, Tracked>>,
    pub(super) pending: Arc<Pending>,
    pub(super) closed: CancellationToken,
    /// Told the session's record whenever `logging/setLevel` or a subscription changes it
    /// (a fleet's transport stores it).
    pub(super) changed: std::sync::OnceLock<ChangeHook>,
    /// Whether unsolicited notifications are delivered now (a fleet's transport: only while
    /// this instance holds the session's GET stream); always, when unset.
    pub(super) deliver: std::sync::OnceLock<DeliverGate>,
    /// When the connection opened (`mcp.server.session.duration`).
    #[cfg(feature = "otel")]
    pub(super) opened: std::time::Instant,
}

/// A 2025-11-25 session's duration is recorded when the last of its parts lets go of it.
#[cfg(feature = "otel")]
impl Drop for SessionState {
    fn drop(&mut self) {
        if let Some(legacy) = self.legacy.get_mut().ok().and_then(|l| l.take()) {
            crate::otel::record_session(
                self.opened,
                &legacy.protocol_version,
                self.transport.network_transport,
            );
        }
    }
}

/// See [`SessionState::changed`].
pub(crate) type ChangeHook = Box<dyn Fn(crate::fleet::SessionRecord) + Send + Sync>;
/// See [`SessionState::deliver`].
pub(crate) type DeliverGate = Box<dyn Fn() -> bool + Send + Sync>;

impl SessionState {
    /// The session's record, as a fleet's store keeps it (`None` before `initialize`).
    pub(super) fn record(&self) -> Option<crate::fleet::SessionRecord> {
        let legacy = self.legacy()?;
        let mut subscriptions: Vec<String> = self
            .subscriptions
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        subscriptions.sort();
        Some(crate::fleet::SessionRecord {
            protocol_version: legacy.protocol_version,
            capabilities: (*legacy.capabilities).clone(),
            client_info: legacy.client_info.map(|c| (*c).clone()),
            log_level: legacy.log_level,
            subscriptions,
            principal: self
                .transport
                .principal
                .as_ref()
                .map(crate::fleet::StoredPrincipal::from),
            ended: false,
            peer: self.transport.peer,
        })
    }

    /// Tells the change hook, if any, the session's record after a change.
    pub(super) fn record_changed(&self) {
        if let Some(hook) = self.changed.get()
            && let Some(record) = self.record()
        {
            hook(record);
        }
    }

    pub(super) fn legacy(&self) -> Option<LegacyState> {
        self.legacy.lock().ok().and_then(|l| l.clone())
    }

    pub(super) fn with_legacy<R>(&self, f: impl FnOnce(&mut LegacyState) -> R) -> Option<R> {
        self.legacy.lock().ok().and_then(|mut l| l.as_mut().map(f))
    }

    /// Tracks a request for cancellation; `false` when a request with this id is in flight.
    pub(super) fn track(&self, id: &RequestId, token: CancellationToken, stream: bool) -> bool {
        let Ok(mut inflight) = self.inflight.lock() else {
            return false;
        };
        match inflight.entry(id.clone()) {
            std::collections::hash_map::Entry::Occupied(_) => false,
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(Tracked { token, stream });
                true
            }
        }
    }

    pub(super) fn untrack(&self, id: &RequestId) {
        if let Ok(mut inflight) = self.inflight.lock() {
            inflight.remove(id);
        }
    }

    pub(super) fn cancel(&self, id: &RequestId) {
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
pub(super) struct Tracked {
    pub(super) token: CancellationToken,
    pub(super) stream: bool,
}

pub(super) enum Route {
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
    pub(super) fn session(&self) -> Option<&Arc<SessionState>> {
        match self {
            Route::Modern { session, .. } => session.as_ref(),
            Route::Legacy { session, .. } => Some(session),
        }
    }

    pub(super) fn transport(&self) -> &TransportContext {
        match self {
            Route::Modern { transport, .. } | Route::Legacy { transport, .. } => transport,
        }
    }

    pub(super) fn era(&self) -> mcp_types::version::Era {
        match self {
            Route::Modern { .. } => mcp_types::version::Era::Modern,
            Route::Legacy { .. } => mcp_types::version::Era::Legacy,
        }
    }
}

pub(super) type Served = Option<Result<Box<RawValue>, ErrorObject>>;

pub(super) fn respond(
    id: &RequestId,
    result: Result<Box<RawValue>, ErrorObject>,
) -> JsonRpcMessage {
    match result {
        Ok(result) => JsonRpcMessage::Response(JsonRpcResponse {
            id: id.clone(),
            result,
            extra: JsonObject::new(),
        }),
        Err(error) => JsonRpcMessage::Error(JsonRpcError::new(Some(id.clone()), error)),
    }
}

pub(super) fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, ErrorObject> {
    mcp_types::jsonrpc::to_raw(value).map_err(serialize_error)
}

/// A result that could not be serialized, as the error its request answers.
pub(super) fn serialize_error(e: serde_json::Error) -> ErrorObject {
    ErrorObject::internal(format!("the result could not be serialized: {e}"))
}

pub(super) fn params_error(e: ParamsError) -> ErrorObject {
    match e {
        ParamsError::UnknownMethod(method) => ErrorObject::method_not_found(&method),
        other => ErrorObject::invalid_params(other.to_string()),
    }
}
