//! The 2025-11-25 side of a request: its context, subscriptions, and the list-changed and
//! resource-updated notifications forwarded to a legacy session.

use std::sync::Arc;

use mcp_types::common::EmptyResult;
use mcp_types::meta::Meta;
use mcp_types::methods::{self, Direction, Kind};
use mcp_types::resources::ResourceUriParams;
use mcp_types::version::{Era, ProtocolVersion};
use mcp_types::{
    ClientRequest, ErrorObject, JsonObject, JsonRpcMessage, JsonRpcRequest, ParamsError,
    ServerNotification,
};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};

use crate::cancel::CancellationToken;
use crate::context::RequestContext;
use crate::notify::ChangeEvent;
use crate::peer::ClientRequester;
use crate::sink::Sink;

use crate::TransportContext;
use crate::service::dispatch::{execute, extension_request};
use crate::service::envelope::{check_meta_size, method_served, probe_meta};
use crate::service::inner::{LegacyState, Served, params_error, to_raw};
use crate::service::subscriptions::{covers, may_hear, subscribe};
use crate::service::{Inner, SessionState};

/// Forwards change events to a legacy session as unsolicited notifications.
pub(super) fn spawn_change_forwarder(state: &Arc<SessionState>) {
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
            if state.deliver.get().is_some_and(|deliver| !deliver()) {
                continue;
            }
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

/// The context of a 2025-11-25 request: what it knows of its client comes from the session's
/// `initialize`, the request's own `_meta` adds its progress token.
pub(super) fn legacy_context(
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
        method: crate::context::method_name(&request.method),
        era: Era::Legacy,
        protocol_version: crate::context::version_text(&legacy.protocol_version),
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
        peer: call.back_channel.then(|| ClientRequester {
            pending: call.session.pending.clone(),
            timeout: inner.server.request_timeout,
        }),
        notifier: inner.notifier.clone(),
        task: Default::default(),
        sealing: crate::sealing::Sealing::of(inner.server.boundary.as_ref(), call.transport),
        state: inner.server.state.clone(),
    }
}

/// Who a legacy request came from: its session, its own transport context, and whether the
/// client can receive server-to-client requests while it waits.
pub(super) struct LegacyCall<'a> {
    pub(super) session: &'a Arc<SessionState>,
    pub(super) transport: &'a TransportContext,
    pub(super) back_channel: bool,
}

pub(super) async fn serve_legacy(
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
            return Some(extension_request(inner, method, request, ctx, None).await);
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
            // An unchanged level changes no record (nothing to store or announce).
            let changed = session
                .with_legacy(|l| l.log_level.replace(params.level) != Some(params.level))
                .unwrap_or(false);
            if changed {
                session.record_changed();
            }
            empty()
        }
        ClientRequest::Subscribe(params) => Box::pin(subscribe(inner, session, ctx, params)).await,
        ClientRequest::Unsubscribe(params) => {
            let removed = session
                .subscriptions
                .lock()
                .is_ok_and(|mut s| s.remove(&params.uri));
            if removed {
                session.record_changed();
            }
            match &inner.server.handlers.unsubscribe {
                Some(handler) => handler(ctx, params).await.and_then(|()| empty()),
                None => empty(),
            }
        }
        other => execute(inner, other, ctx, call.transport).await,
    })
}
