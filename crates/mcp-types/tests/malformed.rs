//! Malformed messages are rejected with an error that names the problem, carries the JSON-RPC
//! code the spec names, and echoes the request id whenever it could be read.

use mcp_types::jsonrpc::MessageErrorKind;
use mcp_types::{ClientRequest, JsonRpcMessage, RequestId};

fn reject(text: &str) -> mcp_types::MessageError {
    match JsonRpcMessage::from_str(text) {
        Ok(message) => panic!("accepted {text} as {message:?}"),
        Err(e) => e,
    }
}

#[test]
fn wrong_jsonrpc_version_is_an_invalid_request_naming_the_member() {
    let e = reject(r#"{"jsonrpc":"1.0","id":3,"method":"tools/list"}"#);
    assert_eq!(e.kind, MessageErrorKind::InvalidRequest);
    assert_eq!(e.code().0, -32600);
    assert_eq!(e.message, r#""jsonrpc" must be "2.0", found "1.0""#);
    assert_eq!(e.id, Some(RequestId::Number(3)));
    let e = reject(r#"{"id":"a","method":"tools/list"}"#);
    assert_eq!(e.message, r#"the "jsonrpc": "2.0" member is missing"#);
    assert_eq!(e.id, Some(RequestId::String("a".into())));
}

#[test]
fn null_request_id_is_rejected() {
    let e = reject(r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#);
    assert_eq!(e.code().0, -32600);
    assert_eq!(
        e.message,
        "the id of a 'tools/list' request must be a string or an integer, never null"
    );
    assert_eq!(e.id, None);
}

#[test]
fn ids_of_other_types_are_rejected() {
    for (id, kind) in [
        ("1.5", "a number"),
        ("true", "a boolean"),
        ("[1]", "an array"),
        ("{}", "an object"),
    ] {
        let e = reject(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
        assert_eq!(
            e.message,
            format!(r#""id" must be a string or an integer, found {kind}"#)
        );
    }
}

#[test]
fn a_response_with_both_result_and_error_is_rejected() {
    let e = reject(r#"{"jsonrpc":"2.0","id":9,"result":{},"error":{"code":-32603,"message":"x"}}"#);
    assert_eq!(e.code().0, -32600);
    assert_eq!(
        e.message,
        r#"a response must carry exactly one of "result" and "error", not both"#
    );
    assert_eq!(e.id, Some(RequestId::Number(9)));
}

#[test]
fn non_object_params_are_rejected() {
    for params in ["[1,2]", "\"x\"", "null", "3"] {
        let e = reject(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#
        ));
        assert_eq!(e.code().0, -32600);
        assert_eq!(
            e.message,
            r#""params" of 'tools/call' must be a JSON object"#
        );
        assert_eq!(e.id, Some(RequestId::Number(1)));
    }
}

#[test]
fn other_shapes_are_named() {
    assert_eq!(
        reject(r#"{"jsonrpc":"2.0","id":1}"#).message,
        r#"not a JSON-RPC message: it has no "method", "result" or "error""#
    );
    assert_eq!(
        reject(r#"{"jsonrpc":"2.0","id":1,"method":"x","result":{}}"#).message,
        r#"a message cannot carry both "method" and "result" or "error""#
    );
    assert_eq!(
        reject(r#"{"jsonrpc":"2.0","result":{}}"#).message,
        "a result response must carry the string or integer id of its request"
    );
    assert_eq!(
        reject(r#"{"jsonrpc":"2.0","id":1,"result":[]}"#).message,
        r#""result" must be a JSON object"#
    );
    assert_eq!(
        reject(r#"{"jsonrpc":"2.0","id":1,"method":7}"#).message,
        r#""method" must be a string"#
    );
    assert_eq!(
        reject("42").message,
        "a JSON-RPC message must be a JSON object, not a number"
    );
    assert!(
        reject(r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#)
            .message
            .starts_with(r#""error" must be an object with an integer "code""#)
    );
}

#[test]
fn bytes_that_are_not_json_are_parse_errors() {
    for text in ["{", "", "   ", "{\"jsonrpc\":", "[1,", "nope"] {
        let e = reject(text);
        assert_eq!(e.kind, MessageErrorKind::Parse, "{text:?}");
        assert_eq!(e.code().0, -32700);
        assert!(e.message.starts_with("Parse error"), "{}", e.message);
    }
}

#[test]
fn error_response_ids_keep_their_wire_form() {
    for text in [
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}"#,
        r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found","data":"ping"}}"#,
    ] {
        let message = JsonRpcMessage::from_str(text).unwrap();
        assert_eq!(message.to_string(), text);
    }
}

#[test]
fn params_of_the_wrong_shape_are_invalid_params_naming_the_method() {
    let JsonRpcMessage::Request(request) = JsonRpcMessage::from_str(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
    )
    .unwrap() else {
        panic!("not a request")
    };
    let e = ClientRequest::from_request(&request).unwrap_err();
    assert_eq!(e.code().0, -32602);
    assert!(
        e.to_string()
            .starts_with("Invalid params for 'tools/call': missing field `name`"),
        "{e}"
    );
    let JsonRpcMessage::Request(request) =
        JsonRpcMessage::from_str(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#).unwrap()
    else {
        panic!("not a request")
    };
    assert_eq!(
        ClientRequest::from_request(&request)
            .unwrap_err()
            .to_string(),
        "Invalid params: 'tools/call' requires a params object"
    );
    let JsonRpcMessage::Request(request) =
        JsonRpcMessage::from_str(r#"{"jsonrpc":"2.0","id":1,"method":"unknown/method"}"#).unwrap()
    else {
        panic!("not a request")
    };
    let e = ClientRequest::from_request(&request).unwrap_err();
    assert_eq!(
        (e.code().0, e.to_string()),
        (-32601, "Method not found: 'unknown/method'".to_owned())
    );
}

#[test]
fn unknown_fields_and_meta_entries_survive_a_round_trip() {
    let text = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1.0,"b":10000000000},"x-future":{"k":[1,2]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"x":1},"vendor":{}},"com.example/trace":"abc"}},"x-envelope":true}"#;
    let JsonRpcMessage::Request(request) = JsonRpcMessage::from_str(text).unwrap() else {
        panic!("not a request")
    };
    let typed = ClientRequest::from_request(&request).unwrap();
    let mut back = typed.to_request(request.id.clone()).unwrap();
    back.extra = request.extra.clone();
    let original: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(JsonRpcMessage::Request(back).to_value(), original);
}
