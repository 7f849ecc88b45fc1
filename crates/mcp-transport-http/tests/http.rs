//! Streamable HTTP end to end over real loopback sockets: both eras through `Client`, JSON and
//! SSE answers, every validation error with its status and code, legacy elicitation on the
//! POST's SSE stream, cancellation by closing the stream, the body limit, Origin checks,
//! bearer auth with two users whose state cannot be swapped, axum mounting, and a fleet of two
//! instances sharing keys.

mod common;

use common::start;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, StatusCode};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use mcp_client::{Client, Mode};
use mcp_server_core::Service;
use mcp_server_core::registry::{Accepted, McpServer, Resolution, Resolver, ToolDef};
use mcp_server_core::seal::{Principal, RequestStateSecurity};
use mcp_transport_http::{
    AuthError, HttpTransport, McpHttpService, ProtectedResource, TokenVerifier, VerifiedToken,
};
use mcp_types::JsonObject;
use mcp_types::elicitation::{ElicitResult, ElicitValue};
use mcp_types::logging::LoggingLevel;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::net::TcpListener;

static SLOW_DROPPED: AtomicBool = AtomicBool::new(false);

struct DropFlag;

impl Drop for DropFlag {
    fn drop(&mut self) {
        SLOW_DROPPED.store(true, Ordering::SeqCst);
    }
}

#[derive(Clone, Deserialize, JsonSchema)]
struct Region {
    region: String,
}

fn provisioner(security: Option<RequestStateSecurity>) -> Service {
    let ask = Resolver::new("region", |_| async {
        Resolution::<Region>::elicit("Which region should the database live in?")
    });
    let provision = ToolDef::new("provision")
        .resolve::<Accepted<Region>>("region", ask)
        .handler_resolved(|_c, args: JsonObject, mut r| async move {
            let Accepted(Region { region }) = r.take::<Accepted<Region>>("region")?;
            Ok::<_, String>(format!(
                "Provisioned '{}' in {region}.",
                args.get("name").and_then(Value::as_str).unwrap_or("db")
            ))
        });
    let slow = ToolDef::new("slow").handler(|ctx, _a: JsonObject| async move {
        // Flips SLOW_DROPPED when the handler's future is dropped (the call was cancelled).
        let _guard = DropFlag;
        ctx.progress(1.0, Some(2.0), Some("half")).await;
        ctx.log(LoggingLevel::Info, None, json!("working")).await;
        ctx.cancellation().cancelled().await;
        "never"
    });
    let count = ToolDef::new("count").handler(|ctx, _a: JsonObject| async move {
        for i in 0..3 {
            ctx.progress(f64::from(i), Some(3.0), None).await;
        }
        "counted"
    });
    let who = ToolDef::new("whoami").handler(|ctx, _a: JsonObject| async move {
        ctx.principal()
            .map(|p| p.client_id.clone())
            .unwrap_or_else(|| "anonymous".into())
    });
    let mut server = McpServer::new("Provisioner")
        .logging(true)
        .tool(provision)
        .tool(slow)
        .tool(count)
        .tool(who);
    if let Some(security) = security {
        server = server.request_state_security(security);
    }
    server.into_service().unwrap()
}

fn elicit_client() -> mcp_client::ClientBuilder {
    Client::builder().elicitation(|_i, _p| async {
        Ok(ElicitResult::accept(BTreeMap::from([(
            "region".to_owned(),
            ElicitValue::String("eu-west-1".into()),
        )])))
    })
}

#[tokio::test]
async fn the_provision_flow_completes_over_http_in_both_eras() {
    let server = start(McpHttpService::new(provisioner(None))).await;
    for (mode, version) in [(Mode::Auto, "2026-07-28"), (Mode::Legacy, "2025-11-25")] {
        let client = elicit_client()
            .mode(mode)
            .connect(HttpTransport::new(&server.url).unwrap())
            .await
            .unwrap();
        assert_eq!(client.protocol_version().as_deref(), Some(version));
        let result = client
            .call_tool("provision", json!({"name": "orders"}))
            .await
            .unwrap();
        assert_eq!(
            result.content[0].as_text(),
            Some("Provisioned 'orders' in eu-west-1.")
        );
        let progress = client
            .call_tool_with(
                "count",
                json!({}),
                mcp_client::CallOptions {
                    progress: true,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(progress.content[0].as_text(), Some("counted"));
        client.close().await;
    }
    server.shutdown().await;
}

/// A raw POST: status, headers and body.
async fn post(
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, hyper::HeaderMap, String) {
    let client = HyperClient::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut builder = Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let response = client
        .request(
            builder
                .body(Full::new(Bytes::from(body.to_owned())))
                .unwrap(),
        )
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

fn envelope(version: &str) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}})
}

fn modern_headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(name) = name {
        h.push(("mcp-name", name));
    }
    h
}

fn body_json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[tokio::test]
async fn every_validation_error_has_its_status_and_code() {
    let server = start(McpHttpService::new(provisioner(None))).await;
    let url = &server.url;
    let list = |meta: Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}})
            .to_string()
    };

    // Missing `_meta` keys: 400 -32602.
    let (status, _, body) = post(
        url,
        &modern_headers("tools/list", None),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).to_string(),
    )
    .await;
    assert_eq!(
        (status, body_json(&body)["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32602))
    );
    // Header version differs from the envelope: 400 -32020, before the version check.
    let (status, _, body) = post(
        url,
        &modern_headers("tools/list", None),
        &list(envelope("v999.0.0")),
    )
    .await;
    assert_eq!(
        (status, body_json(&body)["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32020))
    );
    // Unsupported version in both: 400 -32022 with supported/requested.
    let (status, _, body) = post(
        url,
        &[
            ("mcp-protocol-version", "v999.0.0"),
            ("mcp-method", "tools/list"),
        ],
        &list(envelope("v999.0.0")),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body_json(&body)["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "v999.0.0"})
    );
    // Mcp-Method missing or different: 400 -32020.
    let (status, _, body) = post(
        url,
        &[("mcp-protocol-version", "2026-07-28")],
        &list(envelope("2026-07-28")),
    )
    .await;
    assert_eq!(
        (status, body_json(&body)["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32020))
    );
    let (status, _, body) = post(
        url,
        &modern_headers("TOOLS/LIST", None),
        &list(envelope("2026-07-28")),
    )
    .await;
    assert_eq!(
        body_json(&body)["error"]["message"],
        "mcp-method header does not match the request body's method"
    );
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // Mcp-Name missing or different on tools/call; base64 values decoded.
    let call = |name: &str| {
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "_meta": envelope("2026-07-28")}}).to_string()
    };
    let (status, _, _) = post(url, &modern_headers("tools/call", None), &call("whoami")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _, body) = post(
        url,
        &modern_headers("tools/call", Some("someone_else")),
        &call("whoami"),
    )
    .await;
    assert_eq!(
        (status, body_json(&body)["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32020))
    );
    let (status, _, body) = post(
        url,
        &modern_headers("tools/call", Some("=?base64?d2hvYW1p?=")),
        &call("whoami"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body_json(&body)["result"]["content"][0]["text"],
        "anonymous"
    );
    // Unknown and removed methods: 404 -32601.
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": envelope("2026-07-28")}}).to_string();
    let (status, _, body) = post(url, &modern_headers("ping", None), &ping).await;
    assert_eq!(
        (status, body_json(&body)["error"]["code"].clone()),
        (StatusCode::NOT_FOUND, json!(-32601))
    );
    // Removed methods carrying only the envelope (no params of their own): still 404 -32601,
    // not a params error for the missing `protocolVersion`/`level`/`uri`.
    for method in [
        "initialize",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        let request = json!({"jsonrpc": "2.0", "id": 500, "method": method, "params": {"_meta": envelope("2026-07-28")}}).to_string();
        let (status, _, body) = post(url, &modern_headers(method, None), &request).await;
        assert_eq!(
            (status, body.as_str()),
            (
                StatusCode::NOT_FOUND,
                format!(r#"{{"jsonrpc":"2.0","id":500,"error":{{"code":-32601,"message":"Method not found","data":"{method}"}}}}"#).as_str()
            ),
            "{method}"
        );
    }
    // Parse error and batch: 400 with an id-less error.
    let (status, _, body) = post(url, &modern_headers("tools/list", None), "{").await;
    assert_eq!(
        (
            status,
            body_json(&body)["error"]["code"].clone(),
            body_json(&body)["id"].clone()
        ),
        (StatusCode::BAD_REQUEST, json!(-32700), Value::Null)
    );
    let (status, _, body) = post(url, &modern_headers("tools/list", None), "[]").await;
    assert_eq!(
        (status, body_json(&body)["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32600))
    );
    // A notification: 202.
    let (status, _, body) = post(
        url,
        &[],
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
            .to_string(),
    )
    .await;
    assert_eq!((status, body.as_str()), (StatusCode::ACCEPTED, ""));
    // Unknown tool: -32602 maps to 400, as the Python SDK maps it.
    let (status, _, body) = post(
        url,
        &modern_headers("tools/call", Some("nope")),
        &call("nope"),
    )
    .await;
    assert_eq!(
        (status, body_json(&body)["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32602))
    );
    // GET and DELETE without a session: 405 with Allow.
    let client = HyperClient::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    for method in ["GET", "DELETE"] {
        let response = client
            .request(
                Request::builder()
                    .method(method)
                    .uri(url)
                    .body(Full::new(Bytes::new()))
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(response.headers()["allow"], "POST");
    }
    // Origin and body limit.
    let (status, _, _) = post(
        url,
        &[("origin", "https://evil.example")],
        &list(envelope("2026-07-28")),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = post(
        url,
        &[("origin", "http://localhost:5173")]
            .iter()
            .chain(modern_headers("tools/list", None).iter())
            .copied()
            .collect::<Vec<_>>(),
        &list(envelope("2026-07-28")),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(5 * 1024 * 1024)
    );
    let (status, _, _) = post(url, &modern_headers("tools/list", None), &huge).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    server.shutdown().await;
}

#[tokio::test]
async fn notifications_switch_the_answer_to_sse_and_closing_the_stream_cancels() {
    let server = start(McpHttpService::new(provisioner(None))).await;
    let mut meta = envelope("2026-07-28");
    meta["progressToken"] = json!("p");
    let count = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "count", "_meta": meta}}).to_string();
    let (status, headers, body) = post(
        &server.url,
        &modern_headers("tools/call", Some("count")),
        &count,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/event-stream");
    let events: Vec<Value> = body
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("event: message\ndata: "))
        .map(body_json)
        .collect();
    assert_eq!(events.len(), 4);
    assert_eq!(events[0]["method"], "notifications/progress");
    assert_eq!(events[3]["result"]["content"][0]["text"], "counted");

    // A slow call: read its first event, then drop the connection; the handler is cancelled.
    let mut meta = envelope("2026-07-28");
    meta["progressToken"] = json!("s");
    let slow = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "slow", "_meta": meta}}).to_string();
    let client = HyperClient::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut request = Request::post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (n, v) in modern_headers("tools/call", Some("slow")) {
        request = request.header(n, v);
    }
    let response = client
        .request(request.body(Full::new(Bytes::from(slow))).unwrap())
        .await
        .unwrap();
    let mut body = response.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("notifications/progress"));
    assert!(!SLOW_DROPPED.load(Ordering::SeqCst));
    drop(body);
    drop(client);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !SLOW_DROPPED.load(Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "closing the stream did not cancel the handler"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_legacy_session_gets_its_elicitation_on_the_posts_sse_stream() {
    let server = start(McpHttpService::new(provisioner(None))).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}}, "clientInfo": {"name": "raw", "version": "1"}}}).to_string();
    let (status, headers, body) = post(&server.url, &[], &init).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    assert_eq!(session.len(), 32);
    let h = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let (status, _, _) = post(
        &server.url,
        &h,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    // The call's POST streams the elicitation request; the answer is a separate POST.
    let url = server.url.clone();
    let session2 = session.clone();
    let call = tokio::spawn(async move {
        let h = [
            ("mcp-session-id", session2.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        post(&url, &h, &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "provision", "arguments": {"name": "legacy"}}}).to_string()).await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"action": "accept", "content": {"region": "us-east-2"}}}).to_string();
    let (status, _, _) = post(&server.url, &h, &answer).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, headers, body) = call.await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/event-stream");
    // Resumable: a priming event (id, retry, no data), then every event with its id.
    assert!(
        body.starts_with("id: p1.0\nretry: 1000\ndata: \n\n"),
        "{body}"
    );
    let events: Vec<Value> = body
        .split("\n\n")
        .enumerate()
        .filter_map(|(i, e)| e.strip_prefix(&format!("id: p1.{i}\nevent: message\ndata: ")))
        .map(body_json)
        .collect();
    assert_eq!(events.len(), 2, "{body}");
    assert_eq!(events[0]["method"], "elicitation/create");
    assert_eq!(
        events[1]["result"]["content"][0]["text"],
        "Provisioned 'legacy' in us-east-2."
    );
    // An idle session expires. A second of idleness allowed: the ping right after initialize
    // is inside it on a loaded machine too (audit section 4: 100 ms was not).
    let short =
        start(McpHttpService::new(provisioner(None)).session_idle_timeout(Duration::from_secs(1)))
            .await;
    let (_, headers, _) = post(&short.url, &[], &init).await;
    let idle = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}).to_string();
    let (status, _, _) = post(&short.url, &[("mcp-session-id", idle.as_str())], &ping).await;
    assert_eq!(status, StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let (status, _, _) = post(&short.url, &[("mcp-session-id", idle.as_str())], &ping).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    short.shutdown().await;
    // An unknown session is 404; DELETE ends the session.
    let (status, _, _) = post(
        &server.url,
        &[("mcp-session-id", "nope")],
        &json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let client = HyperClient::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let delete = Request::delete(&server.url)
        .header("mcp-session-id", &session)
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert_eq!(
        client.request(delete).await.unwrap().status(),
        StatusCode::OK
    );
    let (status, _, _) = post(
        &server.url,
        &h,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.shutdown().await;
}

/// The resource the protected test server is.
const RESOURCE: &str = "http://127.0.0.1/mcp";

/// Tokens `alice-token` and `bob-token` for this resource, `elsewhere-token` for another one,
/// `narrow-token` without the `mcp` scope; anything else is refused.
struct TestVerifier;

impl TokenVerifier for TestVerifier {
    fn verify(
        &self,
        token: &str,
    ) -> mcp_transport_http::BoxFuture<'_, Result<VerifiedToken, AuthError>> {
        let user = |client: &str, subject: &str| {
            VerifiedToken::new(
                Principal::new(client)
                    .issuer("https://issuer.example")
                    .subject(subject),
            )
        };
        let result = match token {
            "alice-token" => Ok(user("client-a", "alice").audience(RESOURCE).scopes("mcp")),
            "bob-token" => Ok(user("client-b", "bob")
                .audience(RESOURCE)
                .scopes("mcp other")),
            "elsewhere-token" => Ok(user("client-a", "alice")
                .audience("http://127.0.0.1/other")
                .scopes("mcp")),
            "narrow-token" => Ok(user("client-a", "alice").audience(RESOURCE).scopes("other")),
            _ => Err(AuthError::InvalidToken("unknown token".into())),
        };
        Box::pin(async move { result })
    }
}

#[tokio::test]
async fn two_users_cannot_swap_request_state() {
    let endpoint = McpHttpService::new(provisioner(None)).bearer_auth(
        TestVerifier,
        ProtectedResource::new(RESOURCE)
            .authorization_server("https://issuer.example")
            .scopes_supported(["mcp", "other"])
            .required_scopes(["mcp"]),
    );
    let server = start(endpoint).await;
    let metadata = "http://127.0.0.1/.well-known/oauth-protected-resource/mcp";
    let (status, headers, _) = post(&server.url, &modern_headers("tools/list", None), "{}").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        headers["www-authenticate"],
        format!("Bearer resource_metadata=\"{metadata}\", scope=\"mcp\"")
    );
    for (token, status, challenge) in [
        (
            "Bearer wrong",
            StatusCode::UNAUTHORIZED,
            format!(
                "Bearer resource_metadata=\"{metadata}\", error=\"invalid_token\", error_description=\"the access token is not valid\""
            ),
        ),
        (
            "Bearer elsewhere-token",
            StatusCode::UNAUTHORIZED,
            format!(
                "Bearer resource_metadata=\"{metadata}\", error=\"invalid_token\", error_description=\"the token was not issued for this resource\""
            ),
        ),
        (
            "Bearer narrow-token",
            StatusCode::FORBIDDEN,
            format!(
                "Bearer resource_metadata=\"{metadata}\", error=\"insufficient_scope\", scope=\"mcp\""
            ),
        ),
        (
            "Basic YWxpY2U6cGFzcw==",
            StatusCode::UNAUTHORIZED,
            format!("Bearer resource_metadata=\"{metadata}\", scope=\"mcp\""),
        ),
    ] {
        let (got, headers, body) = post(&server.url, &[("authorization", token)], "{}").await;
        assert_eq!(
            (got, headers["www-authenticate"].to_str().unwrap()),
            (status, challenge.as_str()),
            "{token}"
        );
        assert!(!body.contains("-token"), "no token in the body: {body}");
    }
    // The metadata document, without a token.
    let port = server
        .url
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let document = HyperClient::builder(TokioExecutor::new())
        .build_http::<Full<Bytes>>()
        .request(
            Request::get(format!(
                "http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
            ))
            .body(Full::new(Bytes::new()))
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(document.status(), StatusCode::OK);
    let document = document.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        serde_json::from_slice::<Value>(&document).unwrap(),
        json!({"resource": RESOURCE, "authorization_servers": ["https://issuer.example"],
               "bearer_methods_supported": ["header"], "scopes_supported": ["mcp", "other"]})
    );

    let call = |state: Option<&str>| {
        let mut params = json!({"name": "provision", "arguments": {"name": "db"}, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
        if let Some(state) = state {
            params["requestState"] = json!(state);
            params["inputResponses"] =
                json!({"region": {"action": "accept", "content": {"region": "eu"}}});
        }
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string()
    };
    let auth = |token: &'static str| {
        let mut h = modern_headers("tools/call", Some("provision"));
        h.push(("authorization", token));
        h
    };
    let (_, _, body) = post(&server.url, &auth("Bearer alice-token"), &call(None)).await;
    let alice_state = body_json(&body)["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _, body) = post(
        &server.url,
        &auth("Bearer bob-token"),
        &call(Some(&alice_state)),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        body_json(&body)["error"]["message"],
        "Invalid or expired requestState"
    );
    let (_, _, body) = post(
        &server.url,
        &auth("Bearer alice-token"),
        &call(Some(&alice_state)),
    )
    .await;
    assert_eq!(
        body_json(&body)["result"]["content"][0]["text"],
        "Provisioned 'db' in eu."
    );
    // The principal reaches handlers.
    let client = Client::builder()
        .connect(
            HttpTransport::new(&server.url)
                .unwrap()
                .bearer("bob-token")
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        client.call_tool("whoami", json!({})).await.unwrap().content[0].as_text(),
        Some("client-b")
    );
    server.shutdown().await;
}

#[tokio::test]
async fn the_endpoint_mounts_in_an_axum_router_next_to_another_route() {
    let endpoint = McpHttpService::new(provisioner(None));
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .route_service("/mcp", endpoint);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let client = HyperClient::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let health = client
        .request(
            Request::get(format!("http://127.0.0.1:{port}/health"))
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(health.into_body().collect().await.unwrap().to_bytes(), "ok");
    let mcp = elicit_client()
        .connect(HttpTransport::new(&format!("http://127.0.0.1:{port}/mcp")).unwrap())
        .await
        .unwrap();
    assert_eq!(
        mcp.call_tool("provision", json!({"name": "axum"}))
            .await
            .unwrap()
            .content[0]
            .as_text(),
        Some("Provisioned 'axum' in eu-west-1.")
    );
    server.abort();
}

#[tokio::test]
async fn a_fleet_sharing_keys_completes_rounds_across_instances_and_other_keys_fail() {
    const NEW: &str = "fleet-key-new-0123456789abcdef0123";
    const OLD: &str = "fleet-key-old-0123456789abcdef0123";
    let fleet = |keys: &[&str]| {
        provisioner(Some(
            RequestStateSecurity::keys(keys.iter().copied())
                .unwrap()
                .audience("fleet"),
        ))
    };
    let a = start(McpHttpService::new(fleet(&[NEW, OLD]))).await;
    let b = start(McpHttpService::new(fleet(&[OLD, NEW]))).await;
    let stranger = start(McpHttpService::new(fleet(&[
        "another-fleet-key-0123456789abcdefg",
    ])))
    .await;
    let first = |url: String| async move {
        let params = json!({"name": "provision", "arguments": {"name": "orders"}, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
        let (_, _, body) = post(
            &url,
            &modern_headers("tools/call", Some("provision")),
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
                .to_string(),
        )
        .await;
        body_json(&body)["result"]["requestState"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let retry = |url: String, state: String| async move {
        let params = json!({"name": "provision", "arguments": {"name": "orders"}, "requestState": state,
            "inputResponses": {"region": {"action": "accept", "content": {"region": "eu"}}},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
        let (_, _, body) = post(
            &url,
            &modern_headers("tools/call", Some("provision")),
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
                .to_string(),
        )
        .await;
        body_json(&body)
    };
    // Round 1 on instance A, round 2 on instance B (and the reverse).
    let done = retry(b.url.clone(), first(a.url.clone()).await).await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "Provisioned 'orders' in eu."
    );
    let done = retry(a.url.clone(), first(b.url.clone()).await).await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "Provisioned 'orders' in eu."
    );
    let refused = retry(stranger.url.clone(), first(a.url.clone()).await).await;
    assert_eq!(
        refused["error"],
        json!({"code": -32602, "message": "Invalid or expired requestState", "data": {"reason": "invalid_request_state"}})
    );
    assert_ne!(a.port, b.port);
    a.shutdown().await;
    b.shutdown().await;
    stranger.shutdown().await;
}

#[tokio::test]
async fn a_server_that_is_not_there_is_a_transport_error_not_a_server_error() {
    // Bind, learn a free port, and close it again: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let transport = HttpTransport::new(&format!("http://127.0.0.1:{port}/mcp")).unwrap();
    // A pinned client does not probe, so connecting succeeds and the first request fails.
    let client = Client::builder()
        .mode(Mode::Pinned("2026-07-28".into()))
        .connect(transport)
        .await
        .unwrap();
    // The list is safe to repeat: the client tried a few times before giving up.
    match client.list_tools(None).await.unwrap_err() {
        mcp_client::ClientError::Transport(why) => {
            assert!(why.starts_with("HTTP request failed: "), "{why}");
            assert!(
                why.ends_with("; the client gave up after sending it 4 times"),
                "{why}"
            );
        }
        other => panic!("expected a transport error, got {other:?}"),
    }
}

/// A seen-store that accepts every state and logs the claims and their done marks.
struct LoggingStore(std::sync::Arc<std::sync::Mutex<Vec<&'static str>>>);

impl mcp_server_core::seal::SeenStore for LoggingStore {
    fn first_use<'a>(&'a self, _jti: &'a str, _exp: f64) -> mcp_server_core::BoxFuture<'a, bool> {
        self.0.lock().unwrap().push("claim");
        Box::pin(async { true })
    }

    fn finished<'a>(&'a self, _jti: &'a str, _exp: f64) -> mcp_server_core::BoxFuture<'a, ()> {
        self.0.lock().unwrap().push("finished");
        Box::pin(async {})
    }
}

#[tokio::test]
async fn over_http_a_claimed_state_is_marked_done_once_the_response_was_written() {
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let security = RequestStateSecurity::keys(["replay-key-0123456789abcdef0123456"])
        .unwrap()
        .replay_guard(LoggingStore(log.clone()));
    let server = start(McpHttpService::new(provisioner(Some(security)))).await;
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    let params = json!({"name": "provision", "arguments": {"name": "orders"}, "_meta": meta});
    let (_, _, body) = post(
        &server.url,
        &modern_headers("tools/call", Some("provision")),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string(),
    )
    .await;
    let state = body_json(&body)["result"]["requestState"].clone();
    assert!(log.lock().unwrap().is_empty(), "no state, no claim");
    let params = json!({"name": "provision", "arguments": {"name": "orders"}, "requestState": state,
        "inputResponses": {"region": {"action": "accept", "content": {"region": "eu"}}}, "_meta": meta});
    let (status, _, body) = post(
        &server.url,
        &modern_headers("tools/call", Some("provision")),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body_json(&body)["result"]["content"][0]["text"],
        "Provisioned 'orders' in eu."
    );
    // The done mark runs on its own task once the body was dropped: wait for it, bounded.
    for _ in 0..500 {
        if log.lock().unwrap().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*log.lock().unwrap(), ["claim", "finished"]);
    server.shutdown().await;
}
