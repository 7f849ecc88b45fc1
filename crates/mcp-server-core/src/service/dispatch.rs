//! Dispatch: each method to what serves it (discovery, listen streams, extensions, lists, tool
//! calls through the high-level server), and the stamping of every result.

use mcp_types::version::SUPPORTED_VERSIONS;
use std::sync::Arc;

use mcp_state_seal::Principal;
use mcp_types::common::{EmptyResult, RequestParams};
use mcp_types::discover::DiscoverResult;
use mcp_types::meta::{self, Meta};
use mcp_types::methods::{self};
use mcp_types::resources::{ListResourcesResult, ResourceUriParams};
use mcp_types::subscriptions::{
    SubscriptionFilter, SubscriptionsAcknowledgedParams, SubscriptionsListenRequestParams,
};
use mcp_types::tools::ListToolsResult;
use mcp_types::version::Era;
use mcp_types::{
    ClientRequest, ErrorCode, ErrorObject, JsonObject, JsonRpcRequest, RequestId,
    ServerNotification,
};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::broadcast;

use crate::cancel::CancellationToken;
use crate::context::RequestContext;
use crate::extension::Method;
use crate::notify::ChangeEvent;
use crate::server::Handler;
use crate::sink::Sink;
use crate::stamp::{Stamp, Stamped};

use crate::TransportContext;
use crate::service::Inner;
use crate::service::boundary::{BindingParts, sealed_round};
use crate::service::envelope::caller_principal;
use crate::service::inner::{Served, to_raw};
use crate::service::reply::finish;
use crate::service::subscriptions::{covers, may_hear};

pub(super) fn discover(inner: &Inner, ctx: &RequestContext) -> Result<Box<RawValue>, ErrorObject> {
    let mut capabilities = inner.capabilities.clone();
    if inner.server.extensions.advertisement_varies() {
        inner
            .server
            .extensions
            .filter_advertised(&mut capabilities.extensions, ctx.client_capabilities());
    }
    let mut result = DiscoverResult {
        supported_versions: SUPPORTED_VERSIONS.iter().map(|v| (*v).to_owned()).collect(),
        capabilities,
        instructions: inner.server.instructions.clone(),
        ..DiscoverResult::default()
    };
    result.stamp_modern(&Stamp {
        server_info: &inner.server.info,
        cache: inner.server.discover_cache,
    });
    to_raw(&result)
}

/// Who listens: a resource's updates reach a listener only when it may read the resource
/// (its update filter, and the scopes the resource declares: security review X11).
pub(super) struct Listener<'a> {
    pub(super) principal: Option<&'a Principal>,
    pub(super) scopes: Option<&'a [String]>,
}

/// `subscriptions/listen`: acknowledge, then deliver the opted-in changes tagged with the
/// listen id until the client cancels or the server shuts down (then send the result).
pub(super) async fn listen(
    inner: &Arc<Inner>,
    id: &RequestId,
    params: SubscriptionsListenRequestParams,
    caller: Listener<'_>,
    sink: &Sink,
    cancel: &CancellationToken,
) -> Served {
    let Listener { principal, scopes } = caller;
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
                    && may_hear(server, principal, &uri)
                    && server.policy.permits(
                        methods::RESOURCES_READ,
                        server.layers_of(methods::RESOURCES_READ, Some(&uri)),
                        scopes,
                    ) =>
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
///
/// Plain code up to the handler; the future returned is the handler's (boxed as it is for a
/// raw method such as the Tasks extension's `tasks/get`), not one that also keeps the
/// decoded request and the context twice.
pub(super) fn extension_request<'a>(
    inner: &'a Inner,
    method: &'a crate::extension::ExtensionMethod,
    request: &'a JsonRpcRequest,
    ctx: RequestContext,
    typed: Option<ClientRequest>,
) -> Executing<'a> {
    if let Some(extension) = &method.requires
        && !extension.negotiated(ctx.client_capabilities())
    {
        return Box::pin(std::future::ready(Err(
            extension.not_declared(&request.method, ctx.era)
        )));
    }
    let handler = match &method.handler {
        Method::Object(handler) => handler,
        Method::Raw(raw) => {
            let identity = crate::extension::Identity {
                info: inner.server.info.clone(),
                meta: inner.server_info.clone(),
            };
            return raw(ctx, request.params.as_deref(), typed, identity);
        }
    };
    let mut params: JsonObject = match request.params.as_deref() {
        None => JsonObject::new(),
        Some(raw) => match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::Object(params)) => params,
            Ok(Value::Null) => JsonObject::new(),
            _ => {
                return Box::pin(std::future::ready(Err(ErrorObject::invalid_params(
                    format!("the params of '{}' must be an object", request.method),
                ))));
            }
        },
    };
    params.remove("_meta");
    let era = ctx.era;
    Box::pin(async move {
        let result = handler(ctx, params).await?;
        stamp_extension_result(inner, method, era, result)
    })
}

/// An extension's result as its era has it (see [`extension_request`]).
fn stamp_extension_result(
    inner: &Inner,
    method: &crate::extension::ExtensionMethod,
    era: Era,
    mut result: JsonObject,
) -> Result<Box<RawValue>, ErrorObject> {
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

pub(super) async fn list<P: Default, R: Stamped + Serialize + Default>(
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

/// [`list`] with `bind` applied to the handler's page before it is stamped: the extensions'
/// fields and hidings for this request's client.
async fn list_with<P: Default, R: Stamped + Serialize + Default>(
    inner: &Inner,
    handler: Option<&Handler<P, R>>,
    ctx: RequestContext,
    params: Option<P>,
    bind: impl FnOnce(&mut R),
) -> Result<Box<RawValue>, ErrorObject> {
    let era = ctx.era;
    let mut result = match handler {
        Some(handler) => handler(ctx, params.unwrap_or_default()).await?,
        None => R::default(),
    };
    bind(&mut result);
    finish(inner, era, result)
}

/// The future of one method's work.
pub(super) type Executing<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Box<RawValue>, ErrorObject>> + Send + 'a>,
>;

/// Runs a decoded request's method. Each method's future is boxed on its own, so the request's
/// future holds a pointer instead of room for the largest of them (and a second copy of the
/// request and its context, which an `async fn` matching here would keep).
pub(super) fn execute<'a>(
    inner: &'a Arc<Inner>,
    typed: ClientRequest,
    ctx: RequestContext,
    transport: &'a TransportContext,
) -> Executing<'a> {
    let h = &inner.server.handlers;
    match typed {
        ClientRequest::ListTools(p)
            if inner.server.extensions.bind_lists()
                || inner.server.policy.hides_unauthorized_tools() =>
        {
            Box::pin(async move {
                let caps = ctx.client_capabilities.clone();
                list_with(
                    inner,
                    h.list_tools.as_ref(),
                    ctx,
                    p,
                    |r: &mut ListToolsResult| {
                        if inner.server.extensions.bind_lists() {
                            inner.server.extensions.apply_to_tools(&caps, &mut r.tools);
                        }
                        hide_unauthorized(inner, transport, r);
                    },
                )
                .await
            })
        }
        ClientRequest::ListResources(p) if inner.server.extensions.bind_lists() => {
            Box::pin(async move {
                let caps = ctx.client_capabilities.clone();
                list_with(
                    inner,
                    h.list_resources.as_ref(),
                    ctx,
                    p,
                    |r: &mut ListResourcesResult| {
                        inner
                            .server
                            .extensions
                            .apply_to_resources(&caps, &mut r.resources)
                    },
                )
                .await
            })
        }
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
        ClientRequest::CallTool(p) => call_tool(inner, p, ctx, transport),
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
            sealed_round(
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
            sealed_round(
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

/// `tools/call`: admitted as a task when the tool and the client agree, then through
/// `sealed_round` (state verified, handler run, an outgoing round checked and sealed).
///
/// Everything before the handler is plain code here; the one future made is `sealed_round`'s,
/// boxed as it is (wrapped only for a call launched as a task), so the params and the context
/// are stored once in it, not once per `async fn` they pass through.
pub(super) fn call_tool<'a>(
    inner: &'a Arc<Inner>,
    mut p: mcp_types::tools::CallToolRequestParams,
    mut ctx: RequestContext,
    transport: &'a TransportContext,
) -> Executing<'a> {
    // The one lookup of the tool by its name: its task support and its handler.
    let tool = inner.server.tools.named(&p.name);
    let launch = if ctx.era == Era::Modern {
        // The 2025-11-25 opt-in `params.task` means nothing on 2026-07-28.
        p.task = None;
        // A task belongs to the caller the sealing boundary would bind state to (review W19);
        // a binding that cannot name the caller refuses the task, not a plain call.
        let owner = match inner.server.tasks {
            Some(_) => caller_principal(inner, methods::TOOLS_CALL, transport),
            None => Ok(None),
        };
        let admitted = crate::tasks::TaskEngine::admit(
            inner.server.tasks.as_ref(),
            tool.map(|t| t.task).unwrap_or_default(),
            &p.name,
            ctx.client_capabilities(),
            owner.as_ref().ok().and_then(Option::as_ref),
            transport.peer,
        );
        let launch = match admitted {
            Ok(launch) => launch,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        if launch.is_some()
            && let Err(e) = owner
        {
            return Box::pin(std::future::ready(Err(e)));
        }
        launch
    } else {
        None
    };
    if let Some(launch) = &launch {
        ctx.task = crate::tasks::TaskCtx::Launchable(launch.clone());
    }
    // The binding a state is opened or sealed against: its arguments are a copy, made only
    // when a state can be (a `requestState` came in, or the tool may ask).
    let may_seal = p.request_state.is_some() || !tool.is_some_and(|t| t.never_asks);
    let binding = (inner.server.boundary.is_some() && may_seal).then(|| BindingParts {
        method: methods::TOOLS_CALL,
        target: p.name.clone(),
        arguments: Some(Value::Object(p.arguments.clone().unwrap_or_default())),
    });
    let served = sealed_round(
        inner,
        tool.and_then(|t| t.handler.as_ref())
            .or(inner.server.handlers.call_tool.as_ref()),
        p,
        ctx,
        transport,
        binding,
        |p| ErrorObject::invalid_params(format!("Unknown tool: {}", p.name)),
    );
    match launch {
        None => Box::pin(served),
        Some(launch) => Box::pin(async move {
            let served = served.await;
            match launch.take_created() {
                Some(created) => finish(inner, Era::Modern, created),
                None => served,
            }
        }),
    }
}

/// Leaves out the tools the caller's scopes do not reach, when the server says so. The page
/// then differs by caller: it is never `public` to shared caches.
fn hide_unauthorized(inner: &Inner, transport: &TransportContext, page: &mut ListToolsResult) {
    let policy = &inner.server.policy;
    if policy.hides_unauthorized_tools() {
        let granted = transport.scopes.as_deref();
        page.tools.retain(|tool| {
            let own = inner
                .server
                .layers_of(methods::TOOLS_CALL, Some(&tool.name));
            policy.permits(methods::TOOLS_CALL, own, granted)
        });
        page.cache_scope = Some(mcp_types::common::CacheScope::Private);
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
