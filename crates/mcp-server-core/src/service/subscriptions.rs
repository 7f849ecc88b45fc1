//! 2025-11-25 resource subscriptions: `resources/subscribe`, and who may hear an update.

use crate::server::Server;
use mcp_state_seal::Principal;
use std::sync::Arc;

use mcp_types::ErrorObject;
use mcp_types::common::EmptyResult;
use mcp_types::resources::ResourceUriParams;
use serde_json::value::RawValue;

use crate::context::RequestContext;

use crate::service::inner::to_raw;
use crate::service::{Inner, SessionState};

/// Whether the server's update filter lets `principal` hear that `uri` changed.
pub(super) fn may_hear(server: &Server, principal: Option<&Principal>, uri: &str) -> bool {
    server
        .update_filter
        .as_ref()
        .is_none_or(|filter| filter(principal, uri))
}

/// Whether a subscription to `subscribed` covers an update of `uri` (itself or a sub-resource).
pub(super) fn covers(subscribed: &str, uri: &str) -> bool {
    uri == subscribed
        || uri
            .strip_prefix(subscribed)
            .is_some_and(|rest| subscribed.ends_with('/') || rest.starts_with('/'))
}

/// Legacy `resources/subscribe`: within the session's limits, and recorded only once the
/// handler accepted it.
pub(super) async fn subscribe(
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
    let added = subscriptions.insert(uri);
    drop(subscriptions);
    if added {
        session.record_changed();
    }
    to_raw(&EmptyResult::default())
}
