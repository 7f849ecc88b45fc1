//! Full requests through `Service` in memory, both eras: up to eight newline-separated
//! messages on one session (so an `initialize` can open a 2025-11-25 session first). Every
//! answer is a valid message, and a request's stream, when it ends, ends with the answer to
//! that request's id.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use mcp_server_core::TransportContext;
use mcp_types::JsonRpcMessage;

fuzz_target!(|data: &[u8]| {
    let service = common::shared_service();
    common::runtime().block_on(async {
        let (session, _outbound) = service.connect(TransportContext::default());
        for line in data.split(|&b| b == b'\n').take(8) {
            let request_id = match JsonRpcMessage::from_slice(line) {
                Ok(JsonRpcMessage::Request(r)) => Some(r.id),
                _ => None,
            };
            let Some(stream) = session.handle_bytes(line) else {
                continue;
            };
            let Ok(messages) =
                tokio::time::timeout(std::time::Duration::from_secs(600), stream.collect()).await
            else {
                continue;
            };
            for message in &messages {
                let text = message.to_string();
                JsonRpcMessage::from_str(&text).expect("every answer is a valid message");
            }
            if let Some(id) = request_id {
                let last = messages.last().expect("a request gets an answer");
                assert!(
                    matches!(last, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)),
                    "{last}"
                );
                assert_eq!(last.id(), Some(&id), "{last}");
            }
        }
        session.close();
    });
});
