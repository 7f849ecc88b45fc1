//! Decode and encode of a 2026-07-28 `tools/call` request and of its result, as a server and a
//! client see them: bytes to a typed message and back. The request is the one `cargo xtask
//! bench` sends (an `echo` call with the per-request `_meta` envelope).

use std::hint::black_box;

use criterion::Criterion;
use mcp_types::jsonrpc::{JsonRpcMessage, JsonRpcResponse, RequestId};
use mcp_types::messages::{ClientRequest, ServerResult};
use mcp_types::mrtr::{Outcome, ResultType};
use mcp_types::tools::CallToolResult;

const REQUEST: &str = r#"{"jsonrpc":"2.0","id":1042,"method":"tools/call","params":{"name":"echo","arguments":{"text":"echo #1042 from loadgen: the quick brown fox"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"loadgen","version":"0.0.0"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}"#;

fn result() -> CallToolResult {
    CallToolResult {
        result_type: Some(ResultType::Complete),
        ..CallToolResult::text("echo #1042 from loadgen: the quick brown fox")
    }
}

fn encode_result(result: &CallToolResult) -> Vec<u8> {
    let outcome = ServerResult::CallTool(Outcome::Complete(result.clone()));
    let response = JsonRpcResponse::new(RequestId::Number(1042), &outcome).unwrap();
    serde_json::to_vec(&JsonRpcMessage::Response(response)).unwrap()
}

fn tools_call(c: &mut Criterion) {
    let mut group = c.benchmark_group("tools_call");
    group.bench_function("decode_request", |b| {
        b.iter(|| {
            let JsonRpcMessage::Request(request) =
                JsonRpcMessage::from_slice(black_box(REQUEST.as_bytes())).unwrap()
            else {
                unreachable!("a request")
            };
            black_box(ClientRequest::from_request(&request).unwrap())
        })
    });
    let JsonRpcMessage::Request(request) = JsonRpcMessage::from_str(REQUEST).unwrap() else {
        unreachable!("a request")
    };
    let typed = ClientRequest::from_request(&request).unwrap();
    group.bench_function("encode_request", |b| {
        b.iter(|| {
            let request = black_box(&typed)
                .to_request(RequestId::Number(1042))
                .unwrap();
            black_box(serde_json::to_vec(&JsonRpcMessage::Request(request)).unwrap())
        })
    });
    let result = result();
    group.bench_function("encode_result", |b| {
        b.iter(|| black_box(encode_result(black_box(&result))))
    });
    let bytes = encode_result(&result);
    group.bench_function("decode_result", |b| {
        b.iter(|| {
            let JsonRpcMessage::Response(response) =
                JsonRpcMessage::from_slice(black_box(&bytes)).unwrap()
            else {
                unreachable!("a response")
            };
            black_box(ServerResult::decode("tools/call", &response.result).unwrap())
        })
    });
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    tools_call(&mut criterion);
    criterion.final_summary();
}
