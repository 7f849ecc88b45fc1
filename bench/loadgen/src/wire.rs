//! The 2026-07-28 wire as the load generator speaks it: request bodies with the per-request
//! `_meta` envelope, and the checks every answer must pass.

use std::borrow::Cow;
use std::fmt::Display;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The protocol revision every request is sent at.
pub const VERSION: &str = "2026-07-28";

/// The `tools/call` body for `tool(text)`, with `inputResponses`/`requestState` on a retry.
///
/// Written through typed structs rather than a `json!` tree: the load generator shares two
/// cores with the server, and every microsecond it spends per request is taken from the
/// server it measures (see docs/performance.md, "The load generator's own cost").
pub fn call_body(id: u64, tool: &str, text: &str, retry: Option<&Retry>) -> Vec<u8> {
    let message = CallMessage {
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: CallParams {
            name: tool,
            arguments: Text { text },
            meta: request_meta(),
            input_responses: retry.map(|r| &r.responses),
            request_state: retry.and_then(|r| r.state.as_deref()),
        },
    };
    serde_json::to_vec(&message).unwrap_or_default()
}

#[derive(Serialize)]
struct CallMessage<'a> {
    jsonrpc: &'static str,
    id: u64,
    method: &'static str,
    params: CallParams<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CallParams<'a> {
    name: &'a str,
    arguments: Text<'a>,
    #[serde(rename = "_meta")]
    meta: RequestMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_responses: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_state: Option<&'a str>,
}

#[derive(Serialize)]
struct Text<'a> {
    text: &'a str,
}

#[derive(Serialize)]
struct RequestMeta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: &'static str,
    #[serde(rename = "io.modelcontextprotocol/clientInfo")]
    client_info: ClientInfo,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: Capabilities,
}

#[derive(Serialize)]
struct ClientInfo {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct Capabilities {
    elicitation: Empty,
}

#[derive(Serialize)]
struct Empty {}

/// The per-request `_meta` envelope as a JSON value, for the requests written as `json!` trees
/// (the scaling runs' listen requests, where the load generator's own cost does not matter).
pub fn meta() -> Value {
    serde_json::to_value(request_meta()).unwrap_or_default()
}

fn request_meta() -> RequestMeta {
    RequestMeta {
        protocol_version: VERSION,
        client_info: ClientInfo {
            name: "loadgen",
            version: "0.0.0",
        },
        client_capabilities: Capabilities {
            elicitation: Empty {},
        },
    }
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

/// The members of a JSON-RPC response the checks read; the rest is skipped unparsed.
#[derive(Deserialize)]
struct Reply<'a> {
    #[serde(borrow, default)]
    jsonrpc: Cow<'a, str>,
    #[serde(default)]
    id: Option<u64>,
    #[serde(borrow, default)]
    result: Option<ReplyResult<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReplyResult<'a> {
    #[serde(borrow, default)]
    result_type: Option<Cow<'a, str>>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(borrow, default)]
    content: Vec<Block<'a>>,
    #[serde(default)]
    input_requests: Option<Map<String, Value>>,
    #[serde(borrow, default)]
    request_state: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
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
    if content_type.starts_with("text/event-stream") {
        let message = find_in_sse(body, id)?;
        check_message(&message, id, text, allow_input)
    } else if content_type.starts_with("application/json") {
        let reply: Reply<'_> =
            serde_json::from_slice(body).map_err(|e| format!("response is not JSON: {e}"))?;
        check_reply(reply, id, text, allow_input, &Lossy(body))
    } else {
        Err(format!("unexpected content-type {content_type:?}"))
    }
}

/// Checks one parsed JSON-RPC response (see [`check`]).
pub fn check_message(
    message: &Value,
    id: u64,
    text: &str,
    allow_input: bool,
) -> Result<Answer, String> {
    let reply = Reply::deserialize(message).map_err(|e| format!("{e}: {message}"))?;
    check_reply(reply, id, text, allow_input, message)
}

/// A body shown in an error message, decoded only if one is written: a correct answer pays
/// no UTF-8 scan for it.
struct Lossy<'a>(&'a [u8]);

impl Display for Lossy<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.0))
    }
}

fn check_reply(
    reply: Reply<'_>,
    id: u64,
    text: &str,
    allow_input: bool,
    raw: &dyn Display,
) -> Result<Answer, String> {
    if reply.id != Some(id) {
        return Err(format!("response id {:?} is not {id}: {raw}", reply.id));
    }
    if reply.jsonrpc != "2.0" {
        return Err("response without jsonrpc 2.0".into());
    }
    let Some(result) = reply.result else {
        return Err(format!("no result: {raw}"));
    };
    match result.result_type.as_deref() {
        None | Some("complete") => {
            if result.is_error == Some(true) {
                return Err(format!("tool error: {raw}"));
            }
            let echoed = result.content.first().and_then(|b| b.text.as_deref());
            if echoed != Some(text) {
                return Err(format!("echoed {echoed:?}, sent {text:?}"));
            }
            Ok(Answer::Complete)
        }
        Some("input_required") if allow_input => {
            let requests = result
                .input_requests
                .ok_or("input_required without inputRequests")?;
            let mut responses = Map::new();
            for (key, request) in requests {
                if request["method"] != "elicitation/create" {
                    return Err(format!("unexpected input request {request}"));
                }
                responses.insert(key, json!({"action": "accept", "content": {"ok": true}}));
            }
            let state = result.request_state.map(Cow::into_owned);
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

    /// The typed body is the `json!` tree the load generator sent before, member for member.
    #[test]
    fn call_bodies_are_the_json_they_were() {
        let plain: Value = serde_json::from_slice(&call_body(7, "echo", "a \"b\"", None)).unwrap();
        assert_eq!(
            plain,
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                "name": "echo",
                "arguments": {"text": "a \"b\""},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": VERSION,
                    "io.modelcontextprotocol/clientInfo": {"name": "loadgen", "version": "0.0.0"},
                    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
                }
            }})
        );
        let mut responses = Map::new();
        responses.insert("c".into(), json!({"action": "accept"}));
        let retry = Retry {
            responses,
            state: Some("s.1".into()),
        };
        let again: Value =
            serde_json::from_slice(&call_body(8, "confirm_echo", "t", Some(&retry))).unwrap();
        assert_eq!(
            again["params"]["inputResponses"],
            json!({"c": {"action": "accept"}})
        );
        assert_eq!(again["params"]["requestState"], "s.1");
    }

    #[test]
    fn a_tool_error_and_a_missing_result_fail() {
        let error = br#"{"jsonrpc":"2.0","id":3,"result":{"isError":true,"content":[{"type":"text","text":"hi"}]}}"#;
        let e = check("application/json", error, 3, "hi", false).unwrap_err();
        assert!(e.starts_with("tool error: "), "{e}");
        let none = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"no"}}"#;
        let e = check("application/json", none, 3, "hi", false).unwrap_err();
        assert!(e.starts_with("no result: "), "{e}");
        let old = br#"{"jsonrpc":"1.0","id":3,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
        assert_eq!(
            check("application/json", old, 3, "hi", false).unwrap_err(),
            "response without jsonrpc 2.0"
        );
    }

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
