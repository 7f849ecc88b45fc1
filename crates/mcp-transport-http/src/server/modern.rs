//! The 2026-07-28 route: a stateless POST handed to the service after its headers are checked
//! against its body in the digest's order (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`,
//! `Mcp-Param-*`), answered as JSON, or as a request-scoped SSE stream when notifications come
//! first.

use hyper::header::HeaderMap;
use hyper::{Response, StatusCode};
use mcp_server_core::{MODERN_VERSIONS, ResponseStream, Service, TransportContext};
use mcp_types::messages::ClientRequest;
use mcp_types::{ErrorObject, JsonRpcMessage, ParamsError};
use serde_json::Value;

use super::body::McpBody;
use super::reply::{accepted, json, sse_response, status_for};
use super::request::{header_str, names};
use crate::headers;
use crate::probe::Probe;

/// Hands a 2026-07-28 request to the service, with its params if `route` decoded them.
pub(crate) fn handle_modern(
    service: &Service,
    request: mcp_types::JsonRpcRequest,
    typed: Option<Result<ClientRequest, ParamsError>>,
    transport: TransportContext,
) -> ResponseStream {
    match typed {
        Some(typed) => service.handle_modern_decoded(request, typed, transport),
        None => service.handle_modern(request, transport),
    }
}

/// The 2026-07-28 header checks, in the digest's order: `MCP-Protocol-Version` present
/// and equal to the envelope's, then (for a version this server speaks) `Mcp-Method`,
/// `Mcp-Name` and the tool's `Mcp-Param-*` headers against the body.
pub(crate) fn check_modern_headers(
    service: &Service,
    headers: &HeaderMap,
    request: &mcp_types::JsonRpcRequest,
    probe: &Probe<'_>,
    meta_version: &str,
    version_header: Option<&str>,
) -> Result<(), ErrorObject> {
    match version_header {
        None => {
            return Err(ErrorObject::header_mismatch(
                "the MCP-Protocol-Version header is required",
            ));
        }
        Some(header) if header != meta_version => {
            return Err(ErrorObject::header_mismatch(
                "mcp-protocol-version header does not match the request envelope's protocol version",
            ));
        }
        Some(_) => {}
    }
    if !MODERN_VERSIONS.contains(&meta_version) {
        // The service answers the unsupported version.
        return Ok(());
    }
    check_routing_headers(headers, &request.method, probe)
        .and_then(|()| check_param_headers(service, headers, request, probe))
        .map_err(ErrorObject::header_mismatch)
}

/// `Mcp-Param-{Name}` against the argument it mirrors, for tools that annotate arguments
/// with `x-mcp-header`: present when the argument is, equal to it once decoded (integers
/// numerically).
fn check_param_headers(
    service: &Service,
    headers: &HeaderMap,
    request: &mcp_types::JsonRpcRequest,
    probe: &Probe<'_>,
) -> Result<(), String> {
    if request.method != mcp_types::methods::TOOLS_CALL {
        return Ok(());
    }
    let Some(mirrored) = probe
        .named("name")
        .and_then(|name| service.param_headers(name))
    else {
        return Ok(());
    };
    let arguments = crate::probe::arguments(request.params.as_deref());
    for param in mirrored {
        let header_name = format!("{}{}", headers::PARAM_PREFIX, param.name);
        let raw = header_str(headers, header_name.as_str())?;
        let argument = param.argument();
        let Some(value) = param.value_in(&arguments) else {
            continue;
        };
        let Some(raw) = raw else {
            return Err(format!(
                "the Mcp-Param-{} header is required: the body has the '{argument}' argument",
                param.name
            ));
        };
        let decoded = headers::decode_value(raw)
            .map_err(|e| format!("mcp-param-{} header: {e}", param.name.to_ascii_lowercase()))?;
        if !mirrors(&decoded, value) {
            return Err(format!(
                "mcp-param-{} header does not match the request body's '{argument}' argument",
                param.name.to_ascii_lowercase()
            ));
        }
    }
    Ok(())
}

/// `Mcp-Method` and `Mcp-Name` against the body (values case-sensitive, names not).
fn check_routing_headers(
    headers: &HeaderMap,
    method: &str,
    probe: &Probe<'_>,
) -> Result<(), String> {
    match header_str(headers, &names::METHOD)? {
        None => return Err("the Mcp-Method header is required".to_owned()),
        Some(m) if m != method => {
            return Err("mcp-method header does not match the request body's method".to_owned());
        }
        Some(_) => {}
    }
    // Which parameter Mcp-Name repeats is a column of the method table.
    let Some(field) = mcp_types::methods::name_param(method) else {
        return Ok(());
    };
    let Some(expected) = probe.named(field) else {
        return Ok(());
    };
    match header_str(headers, &names::NAME)? {
        None => Err("the Mcp-Name header is required".to_owned()),
        Some(raw) => {
            let value = headers::decode_value(raw).map_err(|e| format!("mcp-name header: {e}"))?;
            if value == expected {
                Ok(())
            } else {
                Err(format!(
                    "mcp-name header does not match the request body's '{field}' parameter"
                ))
            }
        }
    }
}

/// Whether a decoded `Mcp-Param-*` value mirrors the argument: strings exactly, booleans as
/// `true`/`false`, integers exactly (`42.0` is `42` only where a double holds every integer,
/// up to 2^53: review W16, an intermediary must not see another id than the tool acts on),
/// other numbers as doubles.
fn mirrors(header: &str, value: &Value) -> bool {
    match value {
        Value::String(s) => header == s,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        Value::Number(n) => {
            let integer = n.as_i64().map(i128::from).or(n.as_u64().map(i128::from));
            let double = header.parse::<f64>().ok().filter(|h| h.is_finite());
            match integer {
                Some(v) => match header.parse::<i128>() {
                    Ok(h) => h == v,
                    Err(_) => double.is_some_and(|h| {
                        const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
                        h.fract() == 0.0 && h.abs() <= EXACT && h as i128 == v
                    }),
                },
                None => double.is_some_and(|h| n.as_f64() == Some(h)),
            }
        }
        _ => false,
    }
}

/// A 2026-07-28 request's answer: JSON when the response comes first, SSE when
/// notifications precede it (and the client accepts SSE; otherwise they are dropped).
pub(crate) async fn respond(mut stream: ResponseStream, sse: bool) -> Response<McpBody> {
    loop {
        let Some(first) = stream.next().await else {
            // Cancelled before answering: nothing more may be sent for it.
            return accepted();
        };
        match &first {
            JsonRpcMessage::Notification(_) | JsonRpcMessage::Request(_) if sse => {
                return sse_response(McpBody::sse(Some(first), stream));
            }
            JsonRpcMessage::Notification(_) | JsonRpcMessage::Request(_) => continue,
            JsonRpcMessage::Error(e) => return json(status_for(e.error.code), &first),
            JsonRpcMessage::Response(_) => return json(StatusCode::OK, &first),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Review W16: past 2^53 two integers a double cannot tell apart are different arguments.
    #[test]
    fn a_param_header_mirrors_an_integer_exactly() {
        let big = serde_json::json!(9_007_199_254_740_993_u64);
        assert!(mirrors("9007199254740993", &big));
        assert!(!mirrors("9007199254740992", &big));
        assert!(!mirrors("9007199254740992.0", &big));
        assert!(mirrors("-5", &serde_json::json!(-5)));
        assert!(mirrors("42.0", &serde_json::json!(42)));
        assert!(!mirrors("42.5", &serde_json::json!(42)));
        assert!(mirrors("0.5", &serde_json::json!(0.5)));
        assert!(!mirrors("NaN", &serde_json::json!(0.5)));
    }
}
