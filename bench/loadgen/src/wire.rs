//! The 2026-07-28 wire as the load generator speaks it: request bodies with the per-request
//! `_meta` envelope, and the checks every answer must pass.

use serde_json::{Map, Value, json};

/// The protocol revision every request is sent at.
pub const VERSION: &str = "2026-07-28";

/// The `tools/call` body for `tool(text)`, with `inputResponses`/`requestState` on a retry.
pub fn call_body(id: u64, tool: &str, text: &str, retry: Option<&Retry>) -> Vec<u8> {
    let mut params = json!({
        "name": tool,
        "arguments": {"text": text},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "loadgen", "version": "0.0.0"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
        }
    });
    if let Some(retry) = retry {
        params["inputResponses"] = Value::Object(retry.responses.clone());
        if let Some(state) = &retry.state {
            params["requestState"] = Value::String(state.clone());
        }
    }
    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    serde_json::to_vec(&message).unwrap_or_default()
}

/// What the second leg of a multi-round call sends back.
#[derive(Debug)]
pub struct Retry {
    /// One accepted confirmation per key of `inputRequests`.
    pub responses: Map<String, Value>,
    /// `requestState`, echoed verbatim when the server sent one.
    pub state: Option<String>,
}

/// What a checked answer was.
#[derive(Debug)]
pub enum Answer {
    /// A complete result that echoed the text.
    Complete,
    /// An `InputRequiredResult`: the retry to send.
    InputRequired(Retry),
}

/// Finds the response to `id` in a body (JSON, or SSE whose `data:` lines hold messages) and
/// checks it: same id, and either a complete result whose first content block is `text`, or
/// (when `allow_input` is set) an `InputRequiredResult` asking for elicitations only.
pub fn check(
    content_type: &str,
    body: &[u8],
    id: u64,
    text: &str,
    allow_input: bool,
) -> Result<Answer, String> {
    let message = if content_type.starts_with("text/event-stream") {
        find_in_sse(body, id)?
    } else if content_type.starts_with("application/json") {
        serde_json::from_slice(body).map_err(|e| format!("response is not JSON: {e}"))?
    } else {
        return Err(format!("unexpected content-type {content_type:?}"));
    };
    check_message(&message, id, text, allow_input)
}

/// Checks one parsed JSON-RPC response (see [`check`]).
pub fn check_message(
    message: &Value,
    id: u64,
    text: &str,
    allow_input: bool,
) -> Result<Answer, String> {
    if message["id"].as_u64() != Some(id) {
        return Err(format!("response id {} is not {id}", message["id"]));
    }
    if message["jsonrpc"] != "2.0" {
        return Err("response without jsonrpc 2.0".into());
    }
    let result = &message["result"];
    if !result.is_object() {
        return Err(format!("no result: {message}"));
    }
    match result["resultType"].as_str() {
        None | Some("complete") => {
            if result["isError"] == true {
                return Err(format!("tool error: {result}"));
            }
            let echoed = result["content"][0]["text"].as_str();
            if echoed != Some(text) {
                return Err(format!("echoed {echoed:?}, sent {text:?}"));
            }
            Ok(Answer::Complete)
        }
        Some("input_required") if allow_input => {
            let requests = result["inputRequests"]
                .as_object()
                .ok_or("input_required without inputRequests")?;
            let mut responses = Map::new();
            for (key, request) in requests {
                if request["method"] != "elicitation/create" {
                    return Err(format!("unexpected input request {request}"));
                }
                responses.insert(
                    key.clone(),
                    json!({"action": "accept", "content": {"ok": true}}),
                );
            }
            let state = result["requestState"].as_str().map(str::to_owned);
            Ok(Answer::InputRequired(Retry { responses, state }))
        }
        Some(other) => Err(format!("unexpected resultType {other:?}")),
    }
}

fn find_in_sse(body: &[u8], id: u64) -> Result<Value, String> {
    let text = std::str::from_utf8(body).map_err(|_| "SSE body is not UTF-8")?;
    // Events are separated by blank lines; an event's data is its `data:` lines joined by \n.
    let mut data = String::new();
    for line in text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)) {
        if line.is_empty() {
            if let Some(found) = parse_event(&data, id) {
                return Ok(found);
            }
            data.clear();
        } else if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        }
    }
    parse_event(&data, id).ok_or_else(|| format!("no response with id {id} in the SSE stream"))
}

fn parse_event(data: &str, id: u64) -> Option<Value> {
    if data.is_empty() {
        return None;
    }
    let message: Value = serde_json::from_str(data).ok()?;
    (message["id"].as_u64() == Some(id)).then_some(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_echo_is_checked() {
        let body =
            br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
        assert!(matches!(
            check("application/json", body, 3, "hi", false),
            Ok(Answer::Complete)
        ));
        assert!(check("application/json", body, 4, "hi", false).is_err());
        assert!(check("application/json", body, 3, "ho", false).is_err());
    }

    #[test]
    fn sse_finds_the_response_after_notifications() {
        let body = b"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\r\n\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"resultType\":\"complete\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}\r\n\r\n";
        assert!(matches!(
            check("text/event-stream", body, 9, "x", false),
            Ok(Answer::Complete)
        ));
    }

    #[test]
    fn input_required_builds_the_retry() {
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"c":{"method":"elicitation/create","params":{}}},"requestState":"s.1"}}"#;
        let Ok(Answer::InputRequired(retry)) = check("application/json", body, 1, "t", true) else {
            panic!("not an input_required answer");
        };
        assert_eq!(retry.state.as_deref(), Some("s.1"));
        let next: Value =
            serde_json::from_slice(&call_body(2, "confirm_echo", "t", Some(&retry))).unwrap();
        assert_eq!(next["params"]["requestState"], "s.1");
        assert_eq!(next["params"]["inputResponses"]["c"]["action"], "accept");
        assert!(check("application/json", body, 1, "t", false).is_err());
    }
}
