//! In-memory cost of a 2026-07-28 `tools/call` of an `echo` tool written with `#[mcp::tool]`:
//!
//! - `dispatch/echo`: a decoded request through `Service::handle_modern` (envelope, version and
//!   params checks, the tool, the result) to the response message;
//! - `dispatch/confirm_flow`: the two legs of a multi-round call (call, `input_required` with a
//!   sealed `requestState`, retry with the answer, result), to compare with one plain call;
//! - `http_endpoint/echo`: the same call as an HTTP request through the endpoint's tower service
//!   (headers, body, response body), without a socket;
//! - `policy/*`: `dispatch/echo` with one layer of `mcp::policy` on the tool (`none` is the
//!   same server without any), to read each layer's cost per call.
//!
//! No network, one current-thread runtime.

use std::hint::black_box;

use bytes::Bytes;
use criterion::Criterion;
use http_body_util::{BodyExt, Full};
use mcp::types::jsonrpc::{JsonRpcMessage, JsonRpcRequest};
use mcp::{ElicitationResult, McpServer, Resolution, Service, TransportContext};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Echo the text back.
#[mcp::tool]
async fn echo(text: String) -> String {
    text
}

/// The answer to the confirmation question.
#[derive(Clone, Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

/// Always asks.
#[mcp::resolver]
async fn confirm(text: &str) -> Resolution<Confirm> {
    Resolution::elicit(format!("Echo {} character(s)?", text.len()))
}

/// Echo the text back after the client confirms.
#[mcp::tool]
async fn confirm_echo(
    text: String,
    #[resolve(confirm)] answer: ElicitationResult<Confirm>,
) -> String {
    match answer {
        ElicitationResult::Accepted(Confirm { ok: true }) => text,
        _ => String::new(),
    }
}

const TEXT: &str = "echo #1042 from loadgen: the quick brown fox";

fn call(tool: &str, retry: Option<(&Value, &Value)>) -> Value {
    let mut params = json!({
        "name": tool,
        "arguments": {"text": TEXT},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0.0.0"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
        }
    });
    if let Some((responses, state)) = retry {
        params["inputResponses"] = responses.clone();
        params["requestState"] = state.clone();
    }
    json!({"jsonrpc": "2.0", "id": 1042, "method": "tools/call", "params": params})
}

fn request(message: &Value) -> JsonRpcRequest {
    match JsonRpcMessage::from_value(message).unwrap() {
        JsonRpcMessage::Request(request) => request,
        other => panic!("not a request: {other:?}"),
    }
}

async fn answer(service: &Service, request: JsonRpcRequest) -> Value {
    let messages = service
        .handle_modern(request, TransportContext::default())
        .collect()
        .await;
    let last = messages.last().expect("a response");
    serde_json::to_value(last).unwrap()
}

fn dispatch(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let service = McpServer::new("bench")
        .tool(echo)
        .tool(confirm_echo)
        .into_service()
        .unwrap();
    let plain = request(&call("echo", None));
    let first_leg = request(&call("confirm_echo", None));
    // The state is sealed per call: take one real round to learn the answer's keys.
    let round = runtime.block_on(answer(&service, first_leg.clone()));
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    let responses: serde_json::Map<String, Value> = round["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .map(|key| {
            (
                key.clone(),
                json!({"action": "accept", "content": {"ok": true}}),
            )
        })
        .collect();
    let responses = Value::Object(responses);
    let done = runtime.block_on(answer(
        &service,
        request(&call(
            "confirm_echo",
            Some((&responses, &round["result"]["requestState"])),
        )),
    ));
    assert_eq!(done["result"]["content"][0]["text"], TEXT, "{done}");

    let mut group = c.benchmark_group("dispatch");
    group.bench_function("echo", |b| {
        b.iter(|| {
            let reply = runtime.block_on(async {
                service
                    .handle_modern(black_box(plain.clone()), TransportContext::default())
                    .collect()
                    .await
            });
            black_box(reply)
        })
    });
    group.bench_function("confirm_flow", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let round = answer(&service, black_box(first_leg.clone())).await;
                let retry = request(&call(
                    "confirm_echo",
                    Some((&responses, &round["result"]["requestState"])),
                ));
                black_box(answer(&service, retry).await)
            })
        })
    });
    group.finish();

    let endpoint = mcp::http::endpoint(service.clone()).unwrap();
    let body = Bytes::from(serde_json::to_vec(&call("echo", None)).unwrap());
    let http_request = || {
        hyper::Request::post("/mcp")
            .header("host", "127.0.0.1:8080")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "echo")
            .body(Full::new(body.clone()))
            .unwrap()
    };
    let reply = runtime.block_on(async {
        let response = endpoint.handle(http_request()).await;
        assert_eq!(response.status(), 200);
        response.into_body().collect().await.unwrap().to_bytes()
    });
    let reply: Value = serde_json::from_slice(&reply).unwrap();
    assert_eq!(reply["result"]["content"][0]["text"], TEXT, "{reply}");
    let mut group = c.benchmark_group("http_endpoint");
    group.bench_function("echo", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let response = endpoint.handle(black_box(http_request())).await;
                black_box(response.into_body().collect().await.unwrap().to_bytes())
            })
        })
    });
    group.finish();
}

/// `dispatch/echo` with each shipped layer alone on the tool, and all of them.
fn policy(c: &mut Criterion) {
    use mcp::policy::{Audit, ConcurrencyLimit, Rate, RateLimit, RequireScopes, Timeout};
    use std::time::Duration;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let plain = request(&call("echo", None));
    let caller = TransportContext {
        principal: Some(mcp::seal::Principal::new("bench").subject("alice")),
        scopes: Some(vec!["echo".to_owned()].into()),
        ..TransportContext::default()
    };
    let rate = || RateLimit::per_principal("echo", Rate::new(u32::MAX, Duration::from_secs(1)));
    let servers: Vec<(&str, McpServer)> = vec![
        ("none", McpServer::new("bench").tool(echo)),
        (
            "timeout",
            McpServer::new("bench")
                .tool(echo)
                .tool_layer("echo", Timeout::new(Duration::from_secs(30))),
        ),
        (
            "concurrency",
            McpServer::new("bench")
                .tool(echo)
                .tool_layer("echo", ConcurrencyLimit::new(1024)),
        ),
        (
            "rate_limit",
            McpServer::new("bench")
                .tool(echo)
                .tool_layer("echo", rate()),
        ),
        (
            "audit",
            McpServer::new("bench").tool(echo).tool_layer(
                "echo",
                Audit::new(|r| {
                    black_box(r.duration);
                }),
            ),
        ),
        (
            "scopes",
            McpServer::new("bench")
                .tool(echo)
                .tool_layer("echo", RequireScopes::new(["echo"])),
        ),
        (
            "all_five",
            McpServer::new("bench")
                .tool(echo)
                .layer(Audit::new(|r| {
                    black_box(r.duration);
                }))
                .method_layer("tools/call", Timeout::new(Duration::from_secs(30)))
                .tool_layer("echo", RequireScopes::new(["echo"]))
                .tool_layer("echo", ConcurrencyLimit::new(1024))
                .tool_layer("echo", rate()),
        ),
    ];
    let mut group = c.benchmark_group("policy");
    for (name, server) in servers {
        let service = server.into_service().unwrap();
        let reply = runtime.block_on(async {
            service
                .handle_modern(plain.clone(), caller.clone())
                .collect()
                .await
        });
        let reply = serde_json::to_value(reply.last().unwrap()).unwrap();
        assert_eq!(
            reply["result"]["content"][0]["text"], TEXT,
            "{name}: {reply}"
        );
        group.bench_function(name, |b| {
            b.iter(|| {
                let reply = runtime.block_on(async {
                    service
                        .handle_modern(black_box(plain.clone()), caller.clone())
                        .collect()
                        .await
                });
                black_box(reply)
            })
        });
    }
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    dispatch(&mut criterion);
    policy(&mut criterion);
    criterion.final_summary();
}
