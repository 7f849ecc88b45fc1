//! The headers a client request carries: `Mcp-Session-Id` and `MCP-Protocol-Version` of a
//! 2025-11-25 session, or a 2026-07-28 request's `Mcp-Method`, `Mcp-Name` and the
//! `Mcp-Param-*` its tool's `x-mcp-header` annotations ask for; and the annotations recorded
//! from a `tools/list` (which drops tools whose annotations are invalid) and the version an
//! `initialize` answer names, as answers are delivered to the client's reader.

use hyper::header::HeaderName;
use mcp_types::param_header::ParamHeader;
use mcp_types::{JsonObject, JsonRpcMessage, JsonRpcResponse, methods};
use serde_json::Value;
use tokio::sync::mpsc;

use super::state::State;
use crate::headers;
use crate::probe::ParamsProbe;

/// The MCP headers of `message`, from what the transport knows of its session and tools.
pub(super) fn request_headers(
    state: &State,
    message: &JsonRpcMessage,
) -> Vec<(HeaderName, String)> {
    let mut out = Vec::new();
    let session = state.session_id.lock().ok().and_then(|s| s.clone());
    if let Some(session) = &session {
        out.push((
            HeaderName::from_static(headers::SESSION_ID),
            session.clone(),
        ));
    }
    let JsonRpcMessage::Request(request) = message else {
        if let Some(v) = state.legacy_version.lock().ok().and_then(|v| v.clone()) {
            out.push((HeaderName::from_static(headers::PROTOCOL_VERSION), v));
        }
        return out;
    };
    // The params were serialised a moment ago; only the parts the headers repeat are read back.
    let params = request.params.as_deref();
    let probe = ParamsProbe::read(params);
    match probe.protocol_version() {
        Some(version) => {
            out.push((
                HeaderName::from_static(headers::PROTOCOL_VERSION),
                version.to_owned(),
            ));
            out.push((
                HeaderName::from_static(headers::METHOD),
                request.method.clone(),
            ));
            let name = methods::name_param(&request.method).and_then(|field| probe.named(field));
            if let Some(name) = name.and_then(Value::as_str) {
                out.push((
                    HeaderName::from_static(headers::NAME),
                    headers::encode_value(name),
                ));
            }
            if request.method == methods::TOOLS_CALL
                && let Some(tool) = probe.name.as_ref().and_then(Value::as_str)
            {
                let annotations = state
                    .tool_headers
                    .lock()
                    .ok()
                    .and_then(|t| t.get(tool).cloned())
                    .unwrap_or_default();
                let arguments = if annotations.is_empty() {
                    JsonObject::new()
                } else {
                    crate::probe::arguments(params)
                };
                for param in annotations {
                    let value = param.value_in(&arguments);
                    let rendered = match value {
                        Some(Value::String(s)) => Some(headers::encode_value(s)),
                        Some(Value::Bool(b)) => Some(b.to_string()),
                        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(n.to_string()),
                        _ => None,
                    };
                    if let (Some(rendered), Ok(name)) = (
                        rendered,
                        HeaderName::from_bytes(
                            format!("{}{}", headers::PARAM_PREFIX, param.name).as_bytes(),
                        ),
                    ) {
                        out.push((name, rendered));
                    }
                }
            }
        }
        None if request.method != methods::INITIALIZE => {
            if let Some(v) = state.legacy_version.lock().ok().and_then(|v| v.clone()) {
                out.push((HeaderName::from_static(headers::PROTOCOL_VERSION), v));
            }
        }
        None => {}
    }
    out
}

/// Drops tools with invalid `x-mcp-header` annotations from a `tools/list` result and records
/// the valid ones.
pub(super) fn filter_tools(state: &State, result: &mut Value) {
    let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
        return;
    };
    tools.retain(|tool| {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
        let no_schema = JsonObject::new();
        let schema = tool.get("inputSchema").and_then(Value::as_object);
        match ParamHeader::read_all(schema.unwrap_or(&no_schema)) {
            Ok(params) => {
                if let Ok(mut t) = state.tool_headers.lock() {
                    t.insert(name, params);
                }
                true
            }
            Err(why) => {
                tracing::warn!(tool = %name, %why, "dropping a tool with an invalid x-mcp-header annotation");
                false
            }
        }
    });
}

/// Hands `message`, the answer to (or part of) a `method` request, to the client's reader: a
/// `tools/list` result without its invalid tools, and an `initialize` result's version noted
/// for the session's later headers.
pub(super) async fn deliver(
    state: &State,
    tx: &mpsc::Sender<JsonRpcMessage>,
    method: &str,
    message: JsonRpcMessage,
) {
    let message = match (method, message) {
        (methods::TOOLS_LIST, JsonRpcMessage::Response(response)) => {
            let mut result: Value =
                serde_json::from_str(response.result.get()).unwrap_or(Value::Null);
            filter_tools(state, &mut result);
            match JsonRpcResponse::new(response.id.clone(), &result) {
                Ok(filtered) => JsonRpcMessage::Response(filtered),
                Err(_) => JsonRpcMessage::Response(response),
            }
        }
        (methods::INITIALIZE, JsonRpcMessage::Response(response)) => {
            if let Some(version) = serde_json::from_str::<Value>(response.result.get())
                .ok()
                .and_then(|r| {
                    r.get("protocolVersion")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                && let Ok(mut v) = state.legacy_version.lock()
            {
                *v = Some(version);
            }
            JsonRpcMessage::Response(response)
        }
        (_, other) => other,
    };
    // Waits while the client's reader is behind (the queue is bounded: INCOMING_QUEUE): the
    // server's stream waits with it instead of piling up here. An error: the reader is gone.
    let _ = tx.send(message).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::client::state::{DEFAULT_MAX_MESSAGE, DEFAULT_MAX_RETRY, Limits};

    #[test]
    fn filtered_tools_lose_only_the_invalid_ones() {
        let state = State::new(Limits {
            max_message: DEFAULT_MAX_MESSAGE,
            max_retry: DEFAULT_MAX_RETRY,
        });
        let mut result = json!({"tools": [
            {"name": "valid_tool", "inputSchema": {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "Region"}}}},
            {"name": "invalid_empty_header", "inputSchema": {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": ""}}}}]});
        filter_tools(&state, &mut result);
        assert_eq!(result["tools"].as_array().unwrap().len(), 1);
    }
}
