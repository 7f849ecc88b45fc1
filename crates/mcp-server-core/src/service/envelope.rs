//! The checks a 2026-07-28 request passes before anything runs: the `_meta` envelope, its
//! version and size, and whether the server serves the method.

use mcp_state_seal::{Principal, PrincipalSource};
use mcp_types::meta::{self, Meta};
use mcp_types::methods::{self, Direction, Kind};
use mcp_types::version::MODERN_VERSIONS;
use mcp_types::version::ProtocolVersion;
use mcp_types::{ErrorObject, JsonObject, JsonRpcRequest};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::context::RequestContext;
use crate::server::Server;

use crate::TransportContext;
use crate::service::Inner;

pub(super) fn probe_meta(params: Option<&RawValue>) -> Option<JsonObject> {
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
pub(super) fn check_raw_envelope(params: Option<&RawValue>) -> Result<(), ErrorObject> {
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

pub(super) fn envelope_missing() -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "params._meta must be an object carrying the required '{}' and '{}' envelope keys",
        meta::PROTOCOL_VERSION,
        meta::CLIENT_CAPABILITIES
    ))
}

pub(super) fn envelope_keys_missing(missing: &[&str]) -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "params._meta is missing the required envelope key(s): {}",
        missing.join(", ")
    ))
}

pub(super) fn check_version(version: &str) -> Result<(), ErrorObject> {
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
pub(super) fn method_served(server: &Server, method: &str) -> bool {
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
pub(super) fn modern_method_served(server: &Server, method: &str) -> bool {
    methods::exists(
        ProtocolVersion::V2026_07_28,
        method,
        Kind::Request,
        Direction::ClientToServer,
    ) && method_served(server, method)
}

/// A request's `_meta` (its client capabilities and identity on 2026-07-28) is kept for as long
/// as the request runs, a task's for the task's whole life, so it is capped like the
/// `initialize` params a legacy session keeps (review W1). Params no longer than the cap cannot
/// hold a larger `_meta`, so an ordinary request costs one comparison.
pub(super) fn check_meta_size(
    request: &JsonRpcRequest,
    meta: &Meta,
    limit: usize,
) -> Result<(), ErrorObject> {
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

/// Names the caller of an extension's request in its context: the transport's principal is
/// already there; without one, the sealing boundary's binding ([`caller_principal`]).
pub(super) fn bind_caller(
    inner: &Inner,
    transport: &TransportContext,
    ctx: &mut RequestContext,
) -> Result<(), ErrorObject> {
    if ctx.principal.is_none() {
        ctx.principal = caller_principal(inner, &ctx.method, transport)?;
    }
    Ok(())
}

/// Who an extension's request (`tasks/*` among them) comes from: the authenticated principal,
/// else the one the sealing boundary's principal binding resolves (a deployment whose
/// authentication ends at a gateway), the same identity a task was created under (review W19).
/// A binding that fails refuses the request: per-caller state (a task) is never served to a
/// caller nobody could name.
pub(super) fn caller_principal(
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
        tracing::debug!(reason = %e.reason(), "principal binding failed for an extension request");
        ErrorObject::new(
            mcp_types::ErrorCode::INVALID_REQUEST,
            "The caller of this request could not be determined",
        )
    })
}
