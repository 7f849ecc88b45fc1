//! The HTTP endpoint through its service, without a socket: an arbitrary method, headers and
//! body. The first byte picks the method; then `name: value` lines up to a blank line become
//! headers; the rest is the body. Nothing panics, every answer has a status, and its body
//! ends (SSE streams are read until the idle clock gives up on them).
#![no_main]

mod common;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use libfuzzer_sys::fuzz_target;
use mcp_transport_http::McpHttpService;

const METHODS: [&str; 6] = ["POST", "GET", "DELETE", "PUT", "OPTIONS", "PATCH"];

fuzz_target!(|data: &[u8]| {
    let Some((&method, rest)) = data.split_first() else {
        return;
    };
    let (head, body) = match rest.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&rest[..at], &rest[at + 2..]),
        None => (&rest[..0], rest),
    };
    let mut request = hyper::Request::builder()
        .method(METHODS[usize::from(method) % METHODS.len()])
        .uri("http://127.0.0.1/mcp");
    for line in head.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        let value = value.strip_prefix(b" ").unwrap_or(value);
        if let (Ok(name), Ok(value)) = (
            hyper::header::HeaderName::from_bytes(name),
            hyper::header::HeaderValue::from_bytes(value),
        ) {
            request = request.header(name, value);
        }
    }
    let Ok(request) = request.body(Full::new(Bytes::copy_from_slice(body))) else {
        return;
    };
    common::runtime().block_on(async {
        let endpoint = McpHttpService::new(common::shared_service().clone());
        let response = endpoint.handle(request).await;
        let status = response.status();
        assert!(status.as_u16() >= 200, "{status}");
        let mut body = response.into_body();
        let read = async {
            while let Some(frame) = body.frame().await {
                if frame.is_err() {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(600), read).await;
    });
});
