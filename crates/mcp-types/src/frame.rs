//! One pass over a request as a server reads it.
//!
//! [`JsonRpcMessage::from_slice`] reads a message's envelope and keeps its params as raw JSON;
//! [`ClientRequest::from_request`] then reads that text again into the method's own type. A
//! server does both for every request, so the params are scanned twice: once to find where
//! they end, once to read them.
//!
//! [`ClientFrame::from_slice`] does the same work in one pass when the message is an ordinary
//! request: the params are read into their type straight from the message's bytes, and their
//! raw text (which a server still keeps, see [`JsonRpcRequest::params`]) is cut out of the
//! bytes by where its neighbours' keys begin, not scanned again. Anything unusual (an escaped
//! or repeated member name, `params` before `method`, an id that is not a string or an
//! integer, params that do not decode, `initialize`, a notification or a response) makes the
//! one pass step aside, and the message goes through `from_slice` and `from_request` as
//! before: every answer, refusal and error message stays byte for byte what it was. The
//! `frame` fuzz target runs both on the same bytes and fails on any difference.

use crate::intern::RAW_VALUE_TOKEN;
use crate::prelude::*;

use core::fmt;

use serde::Deserialize;
use serde::de::value::MapDeserializer;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::JsonObject;
use crate::jsonrpc::{JsonRpcMessage, JsonRpcRequest, MessageError, RequestId};
use crate::messages::ClientRequest;
use crate::methods;

/// A message as a server reads it, with the request's typed params when one pass read them.
#[derive(Debug, Clone)]
pub struct ClientFrame {
    /// The message, exactly as [`JsonRpcMessage::from_slice`] reads it.
    pub message: JsonRpcMessage,
    /// `Some` when one pass read the message: then `message` is a request and this is what
    /// [`ClientRequest::from_request`] reads from it. `None` when the message took the
    /// ordinary path (its params, if any, not read yet).
    pub typed: Option<ClientRequest>,
}

impl ClientFrame {
    /// Decodes one message from JSON bytes (one stdio line or one HTTP body): in one pass
    /// when it is an ordinary request, else as [`JsonRpcMessage::from_slice`] does, with the
    /// same errors.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, MessageError> {
        if let Some((request, typed)) = one_pass(bytes) {
            return Ok(ClientFrame {
                message: JsonRpcMessage::Request(request),
                typed: Some(typed),
            });
        }
        JsonRpcMessage::from_slice(bytes).map(|message| ClientFrame {
            message,
            typed: None,
        })
    }
}

/// The one-pass decoder alone: the request and its typed params, or `None` when it steps
/// aside (see the module's documentation). Whatever it returns equals what
/// [`JsonRpcMessage::from_slice`] and [`ClientRequest::from_request`] return for the same
/// bytes; public for the differential fuzz target and the tests that check that.
#[doc(hidden)]
pub fn one_pass(bytes: &[u8]) -> Option<(JsonRpcRequest, ClientRequest)> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let found = (&mut de).deserialize_map(OnePass { input: bytes }).ok()?;
    // Only whitespace may follow the object, as `from_slice` requires.
    de.end().ok()?;
    let (jsonrpc, id, typed) = (found.jsonrpc?, found.id?, found.typed?);
    if !jsonrpc {
        return None;
    }
    let params = params_text(bytes, found.params_key?, found.after_params)?;
    let request = JsonRpcRequest {
        id,
        method: typed.method().to_owned(),
        params: Some(raw_value(params)?),
        extra: found.extra,
    };
    Some((request, typed))
}

/// What the one pass found. Each known member is read at most once; a second one, or a
/// `result` or `error`, ends the pass.
#[derive(Default)]
struct Found<'de> {
    /// Whether `"jsonrpc"` was the string `"2.0"`.
    jsonrpc: Option<bool>,
    id: Option<RequestId>,
    method: Option<&'de str>,
    typed: Option<ClientRequest>,
    /// Where the `params` key's text starts in the input (after its opening quote).
    params_key: Option<usize>,
    /// Where the key after `params` starts, if one follows.
    after_params: Option<usize>,
    extra: JsonObject,
}

struct OnePass<'a> {
    input: &'a [u8],
}

/// Any reason to step aside; its text is never shown (the ordinary path then reads the
/// message and says what is wrong with it, if anything).
fn aside<E: serde::de::Error>() -> E {
    E::custom("not for the one pass")
}

impl<'de> Visitor<'de> for OnePass<'de> {
    type Value = Found<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC request object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found<'de>, A::Error> {
        let mut found = Found::default();
        // A key that is not borrowed from the input (it has an escape) is refused here.
        while let Some(key) = map.next_key::<&'de str>()? {
            let at = offset_in(self.input, key).ok_or_else(aside)?;
            if found.typed.is_some() && found.after_params.is_none() {
                found.after_params = Some(at);
            }
            match key {
                "jsonrpc" if found.jsonrpc.is_none() => {
                    let version = map.next_value::<&'de str>()?;
                    found.jsonrpc = Some(version == "2.0");
                }
                "id" if found.id.is_none() => {
                    let id = map.next_value::<Value>()?;
                    found.id = Some(RequestId::from_value(&id).ok_or_else(aside)?);
                }
                "method" if found.method.is_none() => {
                    found.method = Some(map.next_value::<&'de str>()?);
                }
                "params" if found.params_key.is_none() => {
                    found.params_key = Some(at);
                    // `initialize` is read under its own size cap, before its params are.
                    let method = found
                        .method
                        .filter(|m| *m != methods::INITIALIZE)
                        .ok_or_else(aside)?;
                    let typed = ClientRequest::next_params(method, &mut map)?;
                    found.typed = Some(typed.ok_or_else(aside)?);
                }
                "jsonrpc" | "id" | "method" | "params" | "result" | "error" => {
                    return Err(aside());
                }
                other => {
                    let value = map.next_value::<Value>()?;
                    found.extra.insert(other.to_owned(), value);
                }
            }
        }
        Ok(found)
    }
}

/// Where `text`, borrowed from `input`, starts in it.
fn offset_in(input: &[u8], text: &str) -> Option<usize> {
    let at = (text.as_ptr() as usize).checked_sub(input.as_ptr() as usize)?;
    (at.checked_add(text.len())? <= input.len()).then_some(at)
}

fn is_json_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\n' | b'\t' | b'\r')
}

/// The text of the params value: from after the `params` key's colon to before the comma
/// that precedes the next key (or before the object's closing brace), without the whitespace
/// around it, exactly what a `RawValue` of it would hold. `None` unless it is an object and
/// valid UTF-8 (a member the params' type ignores was skipped, not checked).
fn params_text(input: &[u8], key: usize, next: Option<usize>) -> Option<&str> {
    // After `params"`, whitespace, `:` and whitespace.
    let mut start = key + "params\"".len();
    while input.get(start).copied().is_some_and(is_json_space) {
        start += 1;
    }
    if input.get(start) != Some(&b':') {
        return None;
    }
    start += 1;
    while input.get(start).copied().is_some_and(is_json_space) {
        start += 1;
    }
    let mut end = match next {
        // Before the next key's opening quote, whitespace and a comma.
        Some(next) => {
            let mut end = next.checked_sub(1)?;
            while end > start && is_json_space(input[end - 1]) {
                end -= 1;
            }
            if end == start || input[end - 1] != b',' {
                return None;
            }
            end - 1
        }
        // Before the object's closing brace, the input's last byte but whitespace.
        None => {
            let mut end = input.len();
            while end > start && is_json_space(input[end - 1]) {
                end -= 1;
            }
            if end == start || input[end - 1] != b'}' {
                return None;
            }
            end - 1
        }
    };
    while end > start && is_json_space(input[end - 1]) {
        end -= 1;
    }
    let text = input.get(start..end)?;
    if text.first() != Some(&b'{') || text.last() != Some(&b'}') {
        return None;
    }
    core::str::from_utf8(text).ok()
}

/// `text` (one JSON object, just read in full) as a `RawValue`, without reading it again: a
/// copy into one allocation of its length. `Box<RawValue>` is read here from a one-member map
/// under serde_json's private name, which is how serde_json hands it a raw text. Should a
/// serde_json release stop doing so, the text comes out otherwise (or not at all) and is read
/// the ordinary way instead: one scan more, the same value.
fn raw_value(text: &str) -> Option<Box<RawValue>> {
    let member = core::iter::once((RAW_VALUE_TOKEN, text));
    let map = MapDeserializer::<_, serde::de::value::Error>::new(member);
    match Box::<RawValue>::deserialize(map) {
        Ok(raw) if raw.get() == text => Some(raw),
        _ => RawValue::from_string(text.to_owned()).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request `cargo xtask bench` sends.
    const BENCH: &str = r#"{"jsonrpc":"2.0","id":1042,"method":"tools/call","params":{"name":"echo","arguments":{"text":"echo #1042 from loadgen: the quick brown fox"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"loadgen","version":"0.0.0"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}"#;

    /// Both paths on the same bytes: equal messages and typed params, or equal errors.
    /// Returns whether the one pass took the message.
    fn agree(text: &str) -> bool {
        let bytes = text.as_bytes();
        let slow = JsonRpcMessage::from_slice(bytes);
        let fast = one_pass(bytes);
        if let Some((request, typed)) = &fast {
            let Ok(JsonRpcMessage::Request(expected)) = &slow else {
                panic!("the one pass took what from_slice refused: {text}");
            };
            assert_eq!(request.id, expected.id, "{text}");
            assert_eq!(request.method, expected.method, "{text}");
            assert_eq!(request.extra, expected.extra, "{text}");
            assert_eq!(
                request.params.as_deref().map(RawValue::get),
                expected.params.as_deref().map(RawValue::get),
                "{text}"
            );
            assert_eq!(Ok(typed), ClientRequest::from_request(expected).as_ref());
        }
        match (ClientFrame::from_slice(bytes), slow) {
            (Ok(frame), Ok(message)) => {
                assert_eq!(frame.message.to_string(), message.to_string(), "{text}");
                assert_eq!(frame.typed.is_some(), fast.is_some());
            }
            (Err(a), Err(b)) => assert_eq!(a, b, "{text}"),
            (a, b) => panic!("the paths disagree on {text}: {a:?} against {b:?}"),
        }
        fast.is_some()
    }

    #[test]
    fn ordinary_requests_take_one_pass() {
        let params = r#"{"name":"echo","arguments":{"text":"a } , \" \\ {"},"requestState":null}"#;
        for text in [
            BENCH.to_owned(),
            // The TypeScript SDK's order: the request spread first.
            format!(r#"{{"method":"tools/call","params":{params},"jsonrpc":"2.0","id":1}}"#),
            format!(r#"{{"jsonrpc":"2.0","method":"tools/call","params":{params},"x":[1],"id":"a"}}"#),
            format!(
                " \r\n{{ \"jsonrpc\" : \"2.0\" ,\t\"id\"\n:\n-7 , \"method\":\"tools/call\" ,\r\n \"params\" \t:\n {params} \n,\"id2\":null }} \n"
            ),
            format!(r#"{{"jsonrpc":"2.0","id":9223372036854775807,"method":"tools/call","params":{params}}}"#),
            r#"{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"t1"}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"p","arguments":{"a":"b"}}}"#.to_owned(),
        ] {
            assert!(agree(&text), "not taken: {text}");
        }
        let (request, _) = one_pass(BENCH.as_bytes()).expect("taken");
        assert!(
            request
                .params
                .expect("params")
                .get()
                .starts_with(r#"{"name":"echo","#)
        );
    }

    #[test]
    fn anything_unusual_takes_the_ordinary_path_with_its_answer() {
        let params = r#"{"name":"echo"}"#;
        let call = |id: &str| {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#)
        };
        for text in [
            // Escaped member names.
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","par\u0061ms":{params}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"metho\u0064":"tools/call","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params},"\u0078":1}}"#),
            // Repeated members: the last one wins on the ordinary path.
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params},"params":{{"name":"b"}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"1.0","jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#),
            // Params before the method.
            format!(r#"{{"jsonrpc":"2.0","id":1,"params":{params},"method":"tools/call"}}"#),
            // Envelope rules.
            format!(r#"{{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{params}}}"#),
            format!(r#"{{"id":1,"method":"tools/call","params":{params}}}"#),
            format!(r#"{{"jsonrpc":2.0,"id":1,"method":"tools/call","params":{params}}}"#),
            call("null"),
            call("1.5"),
            call("1.0"),
            call("9223372036854775808"),
            call("[1]"),
            format!(r#"{{"jsonrpc":"2.0","method":"tools/call","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params},"result":{{}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params},"error":null}}"#),
            // Params that are not an object, or absent.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_owned(),
            // Params of the wrong shape: the error names a place in the params' own text.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":3}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":"x"}}"#.to_owned(),
            // Methods that are not for it.
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"x/unknown","params":{}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_owned(),
            // Bytes that are not one JSON object.
            format!("\x0C{}", call("1")),
            format!("\u{FEFF}{}", call("1")),
            format!("[{}]", call("1")),
            format!("{} x", call("1")),
            String::new(),
            "{".to_owned(),
        ] {
            assert!(!agree(&text), "taken: {text}");
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_take_the_ordinary_path() {
        // A string that is not UTF-8 in the params: their typed read fails, and the old
        // decoder gives its own error (the check of the params' text as a whole is below).
        let mut bytes =
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"k":"?"}}}"#
                .to_vec();
        let at = bytes.iter().position(|b| *b == b'?').expect("marker");
        bytes[at] = 0xFF;
        assert!(one_pass(&bytes).is_none());
        assert_eq!(
            ClientFrame::from_slice(&bytes).map(|f| f.message.to_string()),
            JsonRpcMessage::from_slice(&bytes).map(|m| m.to_string())
        );
    }

    /// The check of the params' text as a whole, on its own: no params type skips a member
    /// unread today (each keeps its unknown members as values, read and checked), so only
    /// this reaches it.
    #[test]
    fn the_params_text_is_none_when_its_bytes_are_not_utf8() {
        let text = br#"{"params" : {"zz":"?","n":1} ,"id":1}"#;
        // Each key is where its name begins, after its opening quote.
        let key = 2;
        let next = text
            .windows(4)
            .position(|w| w == br#""id""#)
            .map(|at| at + 1);
        assert_eq!(&text[key..key + 7], br#"params""#);
        assert_eq!(params_text(text, key, next), Some(r#"{"zz":"?","n":1}"#));
        let mut bad = text.to_vec();
        let at = bad.iter().position(|b| *b == b'?').expect("marker");
        bad[at] = 0xFF;
        assert_eq!(params_text(&bad, key, next), None);
    }

    #[test]
    fn depth_is_counted_from_the_message_on_the_one_pass() {
        for depth in [100, 126, 127, 128, 200] {
            let nested = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            agree(&format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"a","arguments":{{"k":{nested}}}}}}}"#
            ));
        }
    }

    #[test]
    fn the_params_text_becomes_a_raw_value_as_it_is() {
        for text in [
            r#"{}"#,
            r#"{"a":[1, 2 ,{"b":"\u00e9\n"}]}"#,
            "{ \"x\" :\t1 }",
        ] {
            let member = core::iter::once((RAW_VALUE_TOKEN, text));
            let map = MapDeserializer::<_, serde::de::value::Error>::new(member);
            // Taken as it is, not by the fallback that reads it again.
            assert_eq!(
                Box::<RawValue>::deserialize(map).expect("taken").get(),
                text
            );
            assert_eq!(raw_value(text).expect("a value").get(), text);
        }
    }
}
