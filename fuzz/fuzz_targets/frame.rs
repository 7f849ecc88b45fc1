//! The one-pass request decoder against the ordinary one, on the same bytes: whenever the one
//! pass takes a message, `JsonRpcMessage::from_slice` must read the same request (id, method,
//! params' text byte for byte, extra members) and `ClientRequest::from_request` the same typed
//! params; and `ClientFrame::from_slice` must answer exactly as `from_slice` does, the same
//! message or the same error. The first byte picks how the rest is used: as a whole body, or
//! spliced into a request in one of several member orders (so most time goes inside the
//! params and the envelope around them stays plausible).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_types::frame::{ClientFrame, one_pass};
use mcp_types::{ClientRequest, JsonRpcMessage};

/// Envelopes with a hole (`@`) where the fuzzer's bytes go.
const SHAPES: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":@}"#,
    r#"{"method":"tools/call","params":@,"jsonrpc":"2.0","id":"a"}"#,
    r#"{ "jsonrpc" : "2.0", "method" : "tasks/get" , "params" : @ , "id" : 7 }"#,
    r#"{"jsonrpc":"2.0","method":"prompts/get","params":@,"x":{"y":[1]},"id":-1}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":@}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":@,"params":{"name":"echo"}}"#,
    r#"{"jsonrpc":"2.0","method":"tools/call",@}"#,
];

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let body = match SHAPES.get(usize::from(mode) % (SHAPES.len() + 1)) {
        None => rest.to_vec(),
        Some(shape) => {
            let (before, after) = shape.split_once('@').expect("a hole");
            [before.as_bytes(), rest, after.as_bytes()].concat()
        }
    };
    let slow = JsonRpcMessage::from_slice(&body);
    if let Some((request, typed)) = one_pass(&body) {
        let Ok(JsonRpcMessage::Request(expected)) = &slow else {
            panic!("the one pass took a message from_slice reads otherwise: {slow:?}");
        };
        assert_eq!(request.id, expected.id);
        assert_eq!(request.method, expected.method);
        assert_eq!(request.extra, expected.extra);
        assert_eq!(
            request.params.as_deref().map(|p| p.get()),
            expected.params.as_deref().map(|p| p.get())
        );
        assert_eq!(Ok(&typed), ClientRequest::from_request(expected).as_ref());
    }
    match (ClientFrame::from_slice(&body), slow) {
        (Ok(frame), Ok(message)) => assert_eq!(frame.message.to_string(), message.to_string()),
        (Err(a), Err(b)) => assert_eq!(a, b),
        (a, b) => panic!("ClientFrame::from_slice and from_slice disagree: {a:?} against {b:?}"),
    }
});
