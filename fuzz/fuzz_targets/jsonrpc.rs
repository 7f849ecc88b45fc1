//! JSON-RPC decoding of both eras: any bytes either fail to decode or decode to a message
//! whose encoding decodes to the same encoding (decode → encode → decode is stable), and the
//! typed views (client and server requests, notifications) never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_types::{
    ClientNotification, ClientRequest, JsonRpcMessage, ServerNotification, ServerRequest,
};

fuzz_target!(|data: &[u8]| {
    let Ok(message) = JsonRpcMessage::from_slice(data) else {
        return;
    };
    let encoded = message.to_string();
    let again = JsonRpcMessage::from_str(&encoded).expect("an encoded message decodes");
    assert_eq!(again.to_string(), encoded, "decode→encode→decode is stable");
    match &message {
        JsonRpcMessage::Request(request) => {
            let _ = ClientRequest::from_request(request);
            let _ = ServerRequest::from_request(request);
        }
        JsonRpcMessage::Notification(notification) => {
            let _ = ClientNotification::from_notification(notification);
            let _ = ServerNotification::from_notification(notification);
        }
        _ => {}
    }
});
