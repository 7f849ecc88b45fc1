//! The 2026-07-28 side of a request: stateless, its client described by its `_meta`.

use std::sync::Arc;

use mcp_types::meta::Meta;
use mcp_types::version::Era;
use mcp_types::{ClientRequest, ErrorObject, JsonRpcRequest, ParamsError};
use serde_json::Value;

use crate::cancel::CancellationToken;
use crate::context::RequestContext;
use crate::sink::Sink;

use crate::TransportContext;
use crate::service::Inner;
use crate::service::dispatch::{discover, execute, extension_request, listen};
use crate::service::envelope::{
    bind_caller, check_meta_size, check_raw_envelope, check_version, envelope_keys_missing,
    envelope_missing, modern_method_served, probe_meta,
};
use crate::service::inner::{Served, params_error};

pub(super) async fn serve_modern(
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
                let mut ctx = modern_context(inner, request, meta, transport, sink, cancel);
                if let Err(e) = bind_caller(inner, transport, &mut ctx) {
                    return Some(Err(e));
                }
                return Some(Box::pin(extension_request(inner, method, request, ctx, None)).await);
            }
            // The method is checked before its params: a removed method (`initialize`,
            // `logging/setLevel`...) is -32601 whatever params it carries.
            let served = modern_method_served(&inner.server, &request.method);
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
    // A method the wire types know but the core does not serve may be an extension's (the
    // Tasks extension's `tasks/get`, `tasks/update`, `tasks/cancel`): its envelope is checked
    // above like any request's, then the extension answers it for the caller the context names.
    if !modern_method_served(&inner.server, method)
        && let Some(extension) = inner.server.extension_methods.get(method)
    {
        let mut ctx = modern_context(inner, request, meta.clone(), transport, sink, cancel);
        if let Err(e) = bind_caller(inner, transport, &mut ctx) {
            return Some(Err(e));
        }
        return Some(
            Box::pin(extension_request(
                inner,
                extension,
                request,
                ctx,
                Some(typed),
            ))
            .await,
        );
    }
    if !modern_method_served(&inner.server, method) {
        return Some(Err(ErrorObject::method_not_found(&request.method)));
    }
    let ctx = modern_context(inner, request, meta.clone(), transport, sink, cancel);
    match typed {
        ClientRequest::Discover(_) => Some(discover(inner, &ctx)),
        ClientRequest::SubscriptionsListen(params) => {
            let caller = super::dispatch::Listener {
                principal: transport.principal.as_ref(),
                scopes: transport.scopes.as_deref(),
            };
            Box::pin(listen(inner, &request.id, params, caller, sink, cancel)).await
        }
        other => Some(execute(inner, other, ctx, transport).await),
    }
}

/// The context of a 2026-07-28 request: what it knows of its client comes from its `_meta`.
pub(super) fn modern_context(
    inner: &Inner,
    request: &JsonRpcRequest,
    meta: Meta,
    transport: &TransportContext,
    sink: &Sink,
    cancel: &CancellationToken,
) -> RequestContext {
    RequestContext {
        id: request.id.clone(),
        method: crate::context::method_name(&request.method),
        era: Era::Modern,
        protocol_version: crate::context::version_text(
            meta.protocol_version.as_deref().unwrap_or_default(),
        ),
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
        sealing: crate::sealing::Sealing::of(inner.server.boundary.as_ref(), transport),
    }
}
