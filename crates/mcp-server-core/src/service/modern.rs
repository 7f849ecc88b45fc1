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
use crate::service::dispatch::{
    Executing, call_tool, discover, execute, extension_request, listen,
};
use crate::service::envelope::{
    bind_caller, check_meta_size, check_raw_envelope, check_version, envelope_keys_missing,
    envelope_missing, modern_method_served, probe_meta,
};
use crate::service::inner::{Served, params_error};

/// What is left of a 2026-07-28 request once its envelope was checked: its answer, when no
/// handler had to run, or the one future that runs it.
pub(super) enum Modern<'a> {
    /// Answered (or refused) without a handler.
    Ready(Served),
    /// A method served by [`execute`], or an extension's.
    Execute(Executing<'a>),
    /// A listen stream.
    Other(std::pin::Pin<Box<dyn std::future::Future<Output = Served> + Send + 'a>>),
}

impl Modern<'_> {
    /// The request's answer.
    pub(super) async fn answer(self) -> Served {
        match self {
            Modern::Ready(served) => served,
            Modern::Execute(executing) => Some(executing.await),
            Modern::Other(other) => other.await,
        }
    }
}

/// A 2026-07-28 request up to its handler: every check of its envelope is plain code, and the
/// only future made is the handler's own (an `async fn` here kept the decoded request twice in
/// a future that every request moved).
pub(super) fn serve_modern<'a>(
    inner: &'a Arc<Inner>,
    request: &'a JsonRpcRequest,
    typed: Result<ClientRequest, ParamsError>,
    transport: &'a TransportContext,
    sink: &'a Sink,
    cancel: &'a CancellationToken,
) -> Modern<'a> {
    let refuse = |e: ErrorObject| Modern::Ready(Some(Err(e)));
    let typed = match typed {
        Ok(typed) => typed,
        Err(e) => {
            if let Err(envelope) = check_raw_envelope(request.params.as_deref()) {
                return refuse(envelope);
            }
            if let Some(method) = inner.server.extension_methods.get(&request.method) {
                let meta: Meta = probe_meta(request.params.as_deref())
                    .and_then(|m| serde_json::from_value(Value::Object(m)).ok())
                    .unwrap_or_default();
                if let Err(e) =
                    check_meta_size(request, &meta, inner.server.limits.max_initialize_params)
                {
                    return refuse(e);
                }
                let mut ctx = modern_context(inner, request, meta, transport, sink, cancel);
                if let Err(e) = bind_caller(inner, transport, &mut ctx) {
                    return refuse(e);
                }
                return Modern::Execute(extension_request(inner, method, request, ctx, None));
            }
            // The method is checked before its params: a removed method (`initialize`,
            // `logging/setLevel`...) is -32601 whatever params it carries.
            let served = modern_method_served(&inner.server, &request.method);
            if !served {
                return refuse(ErrorObject::method_not_found(&request.method));
            }
            return refuse(params_error(e));
        }
    };
    let Some(meta) = typed.meta() else {
        return refuse(envelope_missing());
    };
    let missing = meta.missing_envelope_keys();
    if !missing.is_empty() {
        return refuse(envelope_keys_missing(&missing));
    }
    if let Err(e) = check_version(meta.protocol_version.as_deref().unwrap_or_default()) {
        return refuse(e);
    }
    if let Err(e) = check_meta_size(request, meta, inner.server.limits.max_initialize_params) {
        return refuse(e);
    }
    let method = typed.method();
    // A method the wire types know but the core does not serve may be an extension's (the
    // Tasks extension's `tasks/get`, `tasks/update`, `tasks/cancel`): its envelope is checked
    // above like any request's, then the extension answers it for the caller the context names.
    // Asked once: the method table is scanned by name.
    let served = modern_method_served(&inner.server, method);
    if !served && let Some(extension) = inner.server.extension_methods.get(method) {
        let mut ctx = modern_context(inner, request, meta.clone(), transport, sink, cancel);
        if let Err(e) = bind_caller(inner, transport, &mut ctx) {
            return refuse(e);
        }
        return Modern::Execute(extension_request(
            inner,
            extension,
            request,
            ctx,
            Some(typed),
        ));
    }
    if !served {
        return refuse(ErrorObject::method_not_found(&request.method));
    }
    let ctx = modern_context(inner, request, meta.clone(), transport, sink, cancel);
    match typed {
        ClientRequest::Discover(_) => Modern::Ready(Some(discover(inner, &ctx))),
        ClientRequest::SubscriptionsListen(params) => {
            let caller = super::dispatch::Listener {
                principal: transport.principal.as_ref(),
                scopes: transport.scopes.as_deref(),
            };
            Modern::Other(Box::pin(listen(
                inner,
                &request.id,
                params,
                caller,
                sink,
                cancel,
            )))
        }
        // The hot method goes straight to its own function (one move less of the request).
        ClientRequest::CallTool(params) => {
            Modern::Execute(call_tool(inner, params, ctx, transport))
        }
        other => Modern::Execute(execute(inner, other, ctx, transport)),
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
        state: inner.server.state.clone(),
    }
}
