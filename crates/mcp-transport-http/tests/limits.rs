//! The HTTP server's limits and bindings, each with its refusal: the session cap, sessions only
//! after a successful `initialize`, sessions bound to their principal, modern requests checked
//! whatever session id they carry, `Mcp-Param-*` validation, JSON-only legacy clients without a
//! back-channel, the reopenable GET stream, shutdown with open streams, body deadline,
//! connection and in-flight caps, CORS, Origin and Host values that are not text.

mod common;

use common::start;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, StatusCode};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use mcp_server_core::Service;
use mcp_server_core::registry::{Accepted, McpServer, Resolution, Resolver, ToolDef};
use mcp_server_core::seal::Principal;
use mcp_transport_http::{
    AuthError, McpHttpService, ProtectedResource, TokenVerifier, VerifiedToken,
};
use mcp_types::JsonObject;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;

const RESOURCE: &str = "http://127.0.0.1/mcp";

#[derive(Clone, Deserialize, JsonSchema)]
struct Region {
    region: String,
}

fn service(started: Arc<Notify>) -> Service {
    let ask = Resolver::new("region", |_| async {
        Resolution::<Region>::elicit("Which region?")
    });
    let provision = ToolDef::new("provision")
        .resolve::<Accepted<Region>>("region", ask)
        .handler_resolved(|_c, _a: JsonObject, mut r| async move {
            let Accepted(Region { region }) = r.take::<Accepted<Region>>("region")?;
            Ok::<_, String>(region)
        });
    let who = ToolDef::new("whoami").handler(|ctx, _a: JsonObject| async move {
        ctx.principal()
            .map(|p| p.client_id.clone())
            .unwrap_or_else(|| "anonymous".into())
    });
    let hold = ToolDef::new("hold").handler(move |ctx, _a: JsonObject| {
        let started = started.clone();
        async move {
            started.notify_one();
            ctx.cancellation().cancelled().await;
            "released"
        }
    });
    let mut schema = JsonObject::new();
    schema.insert("type".into(), json!("object"));
    schema.insert(
        "properties".into(),
        json!({"region": {"type": "string", "x-mcp-header": "Region"},
               "count": {"type": "integer", "x-mcp-header": "Count"}}),
    );
    let routed = ToolDef::new("routed")
        .input_schema(schema)
        .handler(|_c, a: JsonObject| async move { Value::Object(a).to_string() });
    McpServer::new("Limits")
        .tool(provision)
        .tool(who)
        .tool(hold)
        .tool(routed)
        .into_service()
        .unwrap()
}

async fn send(
    method: hyper::Method,
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, hyper::HeaderMap, String) {
    let client = HyperClient::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut builder = Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json");
    if !headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("accept"))
    {
        builder = builder.header("accept", "application/json, text/event-stream");
    }
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
    let body = tokio::time::timeout(Duration::from_secs(10), body.collect())
        .await
        .expect("the answer did not end")
        .unwrap()
        .to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

async fn post(
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, hyper::HeaderMap, String) {
    send(hyper::Method::POST, url, headers, body).await
}

fn initialize(client_info: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}}, "clientInfo": client_info}})
    .to_string()
}

fn client_info() -> Value {
    json!({"name": "raw", "version": "1"})
}

async fn open_session(url: &str, headers: &[(&str, &str)]) -> String {
    let (status, h, body) = post(url, headers, &initialize(client_info())).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    h["mcp-session-id"].to_str().unwrap().to_owned()
}

fn body_json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

fn call(tool: &str, arguments: Value, modern: bool) -> String {
    let mut params = json!({"name": tool, "arguments": arguments});
    if modern {
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}});
    }
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}).to_string()
}

#[tokio::test]
async fn sessions_beyond_the_cap_get_503_and_a_failed_initialize_keeps_none() {
    let server = start(McpHttpService::new(service(Arc::default())).max_sessions(2)).await;
    // A refused handshake (no clientInfo) answers its error and opens no session.
    for _ in 0..3 {
        let bad = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}}})
        .to_string();
        let (status, headers, body) = post(&server.url, &[], &bad).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body_json(&body)["error"]["code"], -32602, "{body}");
        assert!(headers.get("mcp-session-id").is_none());
    }
    // What is kept from initialize is capped.
    let padded = json!({"name": "x", "version": "1", "pad": "y".repeat(20_000)});
    let (_, headers, body) = post(&server.url, &[], &initialize(padded)).await;
    assert_eq!(
        body_json(&body)["error"],
        json!({"code": -32602, "message": "initialize params exceed 16384 bytes; send a smaller clientInfo and capabilities"})
    );
    assert!(headers.get("mcp-session-id").is_none());
    open_session(&server.url, &[]).await;
    open_session(&server.url, &[]).await;
    let (status, headers, body) = post(&server.url, &[], &initialize(client_info())).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "Too many sessions; try again later"
        )
    );
    assert_eq!(headers["retry-after"], "1");
    server.shutdown().await;
}

#[tokio::test]
async fn idle_sessions_make_room_under_the_cap() {
    let endpoint = McpHttpService::new(service(Arc::default()))
        .max_sessions(1)
        .session_idle_timeout(Duration::from_millis(50));
    let server = start(endpoint).await;
    let first = open_session(&server.url, &[]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = open_session(&server.url, &[]).await;
    assert_ne!(first, second);
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string();
    let (status, _, _) = post(&server.url, &[("mcp-session-id", first.as_str())], &ping).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.shutdown().await;
}

/// The sweep runs on a timer: a session nobody names again is closed once idle, and the call
/// it had in flight is cancelled (its stream ends), with no other request carrying a session
/// id to trigger it. Before the timer, idle sessions went only when some request named one.
#[tokio::test]
async fn an_idle_session_is_swept_on_a_timer_without_any_request_naming_it() {
    let started = Arc::new(Notify::new());
    let endpoint = McpHttpService::new(service(started.clone()))
        .session_idle_timeout(Duration::from_millis(50));
    let server = start(endpoint).await;
    let session = open_session(&server.url, &[]).await;
    let url = server.url.clone();
    let id = session.clone();
    let held = tokio::spawn(async move {
        let session = id;
        let headers = [
            ("mcp-session-id", session.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        post(&url, &headers, &call("hold", json!({}), false)).await
    });
    started.notified().await;
    let (_, _, body) = tokio::time::timeout(Duration::from_secs(10), held)
        .await
        .expect("the idle session was never swept: its call is still held")
        .unwrap();
    assert!(
        !body.contains("released"),
        "the call was answered, not cancelled: {body}"
    );
    // Only now does a request name the session: it is gone.
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string();
    let (status, _, _) = post(&server.url, &[("mcp-session-id", session.as_str())], &ping).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.shutdown().await;
}

struct Users;

impl TokenVerifier for Users {
    fn verify(&self, token: &str) -> mcp_client::BoxFuture<'_, Result<VerifiedToken, AuthError>> {
        let user = |client: &str| {
            VerifiedToken::new(Principal::new(client))
                .audience(RESOURCE)
                .scopes("mcp")
        };
        let result = match token {
            "alice-token" => Ok(user("client-a")),
            "bob-token" => Ok(user("client-b")),
            "proof-token" => Err(AuthError::InvalidDpopProof(
                "jti cache at redis://10.0.0.4 is down".into(),
            )),
            "scoped-token" => Err(AuthError::InsufficientScope("mcp.admin".into())),
            "chatty-scope-token" => Err(AuthError::InsufficientScope(
                "see http://10.0.0.3/\"policy\"".into(),
            )),
            _ => Err(AuthError::InvalidToken(
                "introspection at http://10.0.0.3 failed".into(),
            )),
        };
        Box::pin(async move { result })
    }
}

#[tokio::test]
async fn a_session_answers_only_the_principal_that_opened_it() {
    let endpoint = McpHttpService::new(service(Arc::default())).bearer_auth(
        Users,
        ProtectedResource::new(RESOURCE).authorization_server("https://issuer.example"),
    );
    let server = start(endpoint).await;
    let alice = [("authorization", "Bearer alice-token")];
    let session = open_session(&server.url, &alice).await;
    let as_user = |token: &'static str| {
        [
            ("authorization", token),
            ("mcp-session-id", session.as_str()),
        ]
    };
    let (status, _, body) = post(
        &server.url,
        &as_user("Bearer alice-token"),
        &call("whoami", json!({}), false),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body_json(&body)["result"]["content"][0]["text"], "client-a");
    let bob = as_user("Bearer bob-token");
    let (status, _, body) = post(&server.url, &bob, &call("whoami", json!({}), false)).await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::NOT_FOUND, "Session not found")
    );
    // Nor may bob answer alice's questions, take her stream or end her session.
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"action": "accept"}}).to_string();
    let (status, _, _) = post(&server.url, &bob, &answer).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = send(hyper::Method::DELETE, &server.url, &bob, "").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = send(
        hyper::Method::DELETE,
        &server.url,
        &as_user("Bearer alice-token"),
        "",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // A verifier's reasons stay in the server's log.
    let (status, headers, _) = post(&server.url, &[("authorization", "Bearer forged")], "{}").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let challenge = headers["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.ends_with(
            "error=\"invalid_token\", error_description=\"the access token is not valid\""
        ),
        "{challenge}"
    );
    // Every kind of refusal, not only invalid_token (review W21): a DPoP refusal gets a fixed
    // text, and a scope list only when it is one.
    let challenge_for = |token: &'static str| {
        let url = server.url.clone();
        async move {
            let header = format!("Bearer {token}");
            let (status, headers, _) =
                post(&url, &[("authorization", header.as_str())], "{}").await;
            (
                status,
                headers["www-authenticate"].to_str().unwrap().to_owned(),
            )
        }
    };
    let (status, challenge) = challenge_for("proof-token").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        challenge.ends_with(
            "error=\"invalid_dpop_proof\", error_description=\"the DPoP proof was refused\""
        ),
        "{challenge}"
    );
    let (status, challenge) = challenge_for("scoped-token").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        challenge.ends_with("error=\"insufficient_scope\", scope=\"mcp.admin\""),
        "{challenge}"
    );
    let (status, challenge) = challenge_for("chatty-scope-token").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        challenge.ends_with("error=\"insufficient_scope\", scope=\"\""),
        "{challenge}"
    );
    assert!(!challenge.contains("10.0.0"), "{challenge}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_modern_request_is_checked_the_same_with_a_session_id() {
    let server = start(McpHttpService::new(service(Arc::default()))).await;
    let session = open_session(&server.url, &[]).await;
    for with_session in [false, true] {
        let mut headers = vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "provision"),
        ];
        if with_session {
            headers.push(("mcp-session-id", session.as_str()));
        }
        let (status, _, body) = post(&server.url, &headers, &call("whoami", json!({}), true)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{with_session}: {body}");
        assert_eq!(
            body_json(&body)["error"],
            json!({"code": -32020, "message": "mcp-name header does not match the request body's 'name' parameter"}),
            "{with_session}"
        );
        headers.retain(|(n, _)| *n != "mcp-protocol-version");
        let (status, _, body) = post(&server.url, &headers, &call("whoami", json!({}), true)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{with_session}: {body}");
        assert_eq!(body_json(&body)["error"]["code"], -32020);
    }
    server.shutdown().await;
}

#[tokio::test]
async fn mcp_param_headers_must_mirror_their_arguments() {
    let server = start(McpHttpService::new(service(Arc::default()))).await;
    let args = json!({"region": "us-east", "count": 42});
    type Headers<'a> = &'a [(&'a str, &'a str)];
    let cases: [(Headers<'_>, Option<&str>); 8] = [
        (
            &[("mcp-param-region", "us-east"), ("mcp-param-count", "42")],
            None,
        ),
        (
            &[
                ("Mcp-Param-Region", "  us-east "),
                ("mcp-param-count", "42.0"),
            ],
            None,
        ),
        (
            &[
                ("mcp-param-region", "=?base64?dXMtZWFzdA==?="),
                ("mcp-param-count", "42"),
            ],
            None,
        ),
        (
            &[("mcp-param-region", "eu-west"), ("mcp-param-count", "42")],
            Some("mcp-param-region header does not match the request body's 'region' argument"),
        ),
        (
            &[("mcp-param-count", "42")],
            Some("the Mcp-Param-Region header is required: the body has the 'region' argument"),
        ),
        (
            &[
                ("mcp-param-region", "=?base64?dXMtZWFzdA?="),
                ("mcp-param-count", "42"),
            ],
            Some("mcp-param-region header: invalid base64 (Invalid padding)"),
        ),
        (
            &[
                ("mcp-param-region", "=?base64?dXMtZWFzdA=="),
                ("mcp-param-count", "42"),
            ],
            Some("mcp-param-region header does not match the request body's 'region' argument"),
        ),
        (
            &[("mcp-param-region", "us-east"), ("mcp-param-count", "41")],
            Some("mcp-param-count header does not match the request body's 'count' argument"),
        ),
    ];
    for (extra, refusal) in cases {
        let mut headers = vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "routed"),
        ];
        headers.extend_from_slice(extra);
        let (status, _, body) =
            post(&server.url, &headers, &call("routed", args.clone(), true)).await;
        match refusal {
            None => assert_eq!(status, StatusCode::OK, "{extra:?}: {body}"),
            Some(message) => {
                assert_eq!(status, StatusCode::BAD_REQUEST, "{extra:?}: {body}");
                assert_eq!(
                    body_json(&body)["error"],
                    json!({"code": -32020, "message": message}),
                    "{extra:?}"
                );
            }
        }
    }
    // A null or absent argument needs no header.
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "routed"),
    ];
    let (status, _, body) = post(
        &server.url,
        &headers,
        &call("routed", json!({"region": null}), true),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_legacy_client_without_sse_fails_an_elicitation_at_once() {
    let server = start(McpHttpService::new(service(Arc::default()))).await;
    let session = open_session(&server.url, &[]).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("accept", "application/json"),
    ];
    // `send` gives up after 10 s: before, this waited the 300 s request timeout.
    let (status, _, body) = post(&server.url, &headers, &call("provision", json!({}), false)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body_json(&body)["error"],
        json!({"code": -32600, "message": "Cannot send 'elicitation/create': this transport context has no back-channel for server-initiated requests."})
    );
    server.shutdown().await;
}

/// Opens a session's GET stream; answers its status and the connection holding it.
async fn open_stream(port: u16, session: &str) -> (String, TcpStream) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let request = format!(
        "GET /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\naccept: text/event-stream\r\nmcp-session-id: {session}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut head))
        .await
        .unwrap()
        .unwrap();
    let head = String::from_utf8_lossy(&head[..n]).into_owned();
    (head.lines().next().unwrap_or("").to_owned(), stream)
}

#[tokio::test]
async fn the_get_stream_reopens_after_it_drops_and_shutdown_ends_it() {
    let server = start(McpHttpService::new(service(Arc::default()))).await;
    let session = open_session(&server.url, &[]).await;
    let (status, first) = open_stream(server.port, &session).await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    let (status, _) = open_stream(server.port, &session).await;
    assert_eq!(status, "HTTP/1.1 409 Conflict");
    drop(first);
    // The server sees the closed connection at its next write or read; try a few times.
    let mut reopened = None;
    for _ in 0..100 {
        let (status, stream) = open_stream(server.port, &session).await;
        if status == "HTTP/1.1 200 OK" {
            reopened = Some(stream);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _open = reopened.expect("the GET stream could not be reopened");
    // An open GET stream does not hold graceful shutdown for the whole grace period.
    server.shutdown().await;
}

async fn raw(port: u16, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_408() {
    let endpoint =
        McpHttpService::new(service(Arc::default())).body_timeout(Duration::from_millis(200));
    let server = start(endpoint).await;
    let port = server.port;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\naccept: application/json\r\nconnection: close\r\ncontent-length: 100\r\n\r\n{{"
    );
    let answer = raw(port, head.as_bytes()).await;
    assert!(
        answer.starts_with("HTTP/1.1 408 Request Timeout"),
        "{answer}"
    );
    assert!(
        answer.ends_with("The request body did not arrive in time"),
        "{answer}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn requests_and_connections_beyond_their_caps_get_503() {
    let started = Arc::new(Notify::new());
    let endpoint = McpHttpService::new(service(started.clone())).max_in_flight(1);
    let server = start(endpoint).await;
    let url = server.url.clone();
    let held = tokio::spawn(async move {
        let client = HyperClient::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
        let request = Request::post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "hold")
            .body(Full::new(Bytes::from(call("hold", json!({}), true))))
            .unwrap();
        client.request(request).await
    });
    started.notified().await;
    let (status, headers, body) = post(&server.url, &[], &initialize(client_info())).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "Too many requests in flight; retry shortly"
        )
    );
    assert_eq!(headers["retry-after"], "1");
    held.abort();
    server.shutdown().await;

    let server = start(McpHttpService::new(service(Arc::default())).max_connections(1)).await;
    let port = server.port;
    let mut first = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    // The first connection is served (and so holds the only slot).
    first
        .write_all(format!("GET /other HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = [0u8; 64];
    let n = first.read(&mut head).await.unwrap();
    assert!(head[..n].starts_with(b"HTTP/1.1 404"));
    let answer = raw(port, b"GET /mcp HTTP/1.1\r\n\r\n").await;
    assert!(
        answer.starts_with("HTTP/1.1 503 Service Unavailable"),
        "{answer}"
    );
    assert!(answer.ends_with("Too many connections"), "{answer}");
    drop(first);
    server.shutdown().await;
}

#[tokio::test]
async fn configured_origins_get_cors_and_other_values_are_refused() {
    let endpoint =
        McpHttpService::new(service(Arc::default())).allowed_origins(["https://app.example"]);
    let server = start(endpoint).await;
    let (status, headers, _) = send(
        hyper::Method::OPTIONS,
        &server.url,
        &[
            ("origin", "https://app.example"),
            ("access-control-request-method", "POST"),
            (
                "access-control-request-headers",
                "content-type, mcp-protocol-version, mcp-param-region",
            ),
        ],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(
        headers["access-control-allow-origin"],
        "https://app.example"
    );
    assert_eq!(headers["access-control-allow-methods"], "POST, GET, DELETE");
    assert_eq!(
        headers["access-control-allow-headers"],
        "content-type, mcp-protocol-version, mcp-param-region"
    );
    let (status, headers, _) = post(
        &server.url,
        &[("origin", "https://app.example")],
        &initialize(client_info()),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        headers["access-control-allow-origin"],
        "https://app.example"
    );
    assert_eq!(
        headers["access-control-expose-headers"],
        "Mcp-Session-Id, WWW-Authenticate"
    );
    let port = server.port;
    // An Origin that is not text is not let through unchecked.
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\naccept: application/json\r\nconnection: close\r\ncontent-length: 2\r\norigin: https://app.ex"
    )
    .into_bytes();
    request.extend_from_slice(b"\xe4mple\r\n\r\n{}");
    let answer = raw(port, &request).await;
    assert!(answer.starts_with("HTTP/1.1 403 Forbidden"), "{answer}");
    assert!(answer.ends_with("Invalid Origin header"), "{answer}");
    let answer = raw(
        port,
        b"POST /mcp HTTP/1.1\r\nconnection: close\r\ncontent-type: application/json\r\naccept: application/json\r\ncontent-length: 2\r\n\r\n{}",
    )
    .await;
    assert!(
        answer.starts_with("HTTP/1.1 421 Misdirected Request"),
        "{answer}"
    );
    assert!(answer.ends_with("Missing Host header"), "{answer}");
    server.shutdown().await;
}

/// POSTs `tools/call provision` (which elicits) on a legacy session over SSE, reads until the
/// first `data:` event (the elicitation), and hangs up: the handler goes on, detached, waiting
/// for an answer that never comes (review W2).
async fn call_and_hang_up(port: u16, session: &str, id: u32) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "provision", "arguments": {}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-session-id: {session}\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("elicitation/create") {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "no elicitation within 10 s: {}",
                    String::from_utf8_lossy(&seen)
                )
            })
            .unwrap();
        assert!(
            n > 0,
            "the stream ended: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&chunk[..n]);
    }
    assert!(seen.starts_with(b"HTTP/1.1 200 OK"));
}

/// Review W2: a 2025-11-25 client that reads the first SSE event and hangs up leaves its
/// handler running (a disconnect is not a cancellation), and that handler still counts
/// against the server's in-flight cap until it ends: the loop cannot pile up handlers.
#[tokio::test]
async fn detached_legacy_requests_still_count_against_the_in_flight_cap() {
    let endpoint = McpHttpService::new(service(Arc::default())).max_in_flight(3);
    let server = start(endpoint).await;
    let session = open_session(&server.url, &[]).await;
    for id in 0..3 {
        call_and_hang_up(server.port, &session, id).await;
    }
    let headers = [("mcp-session-id", session.as_str())];
    let (status, _, body) = post(&server.url, &headers, &call("whoami", json!({}), false)).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "Too many requests in flight; retry shortly"
        )
    );
    // Closing the session cancels its detached handlers, and their permits come back.
    let (status, _, _) = send(hyper::Method::DELETE, &server.url, &headers, "").await;
    assert_eq!(status, StatusCode::OK);
    let fresh = open_session(&server.url, &[]).await;
    let headers = [("mcp-session-id", fresh.as_str())];
    let (status, _, body) = post(&server.url, &headers, &call("whoami", json!({}), false)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    server.shutdown().await;
}

/// Review W2: one legacy session runs at most `SessionLimits::max_in_flight` requests at once
/// (as `docs/limits.md` says), detached ones included; another session is not affected, and
/// the session's answers to its own elicitations are never refused by that cap.
#[tokio::test]
async fn one_legacy_session_runs_at_most_its_max_in_flight() {
    let mut limits = mcp_server_core::SessionLimits::default();
    limits.max_in_flight = 2;
    let ask = Resolver::new("region", |_| async {
        Resolution::<Region>::elicit("Which region?")
    });
    let provision = ToolDef::new("provision")
        .resolve::<Accepted<Region>>("region", ask)
        .handler_resolved(|_c, _a: JsonObject, mut r| async move {
            let Accepted(Region { region }) = r.take::<Accepted<Region>>("region")?;
            Ok::<_, String>(region)
        });
    let service = McpServer::new("Limits")
        .tool(provision)
        .tool(ToolDef::new("whoami").handler(|_c, _a: JsonObject| async { "anonymous" }))
        .session_limits(limits)
        .into_service()
        .unwrap();
    let server = start(McpHttpService::new(service)).await;
    let session = open_session(&server.url, &[]).await;
    for id in 0..2 {
        call_and_hang_up(server.port, &session, id).await;
    }
    let headers = [("mcp-session-id", session.as_str())];
    let (status, _, body) = post(&server.url, &headers, &call("whoami", json!({}), false)).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "Too many requests in flight on this session (at most 2); retry shortly"
        )
    );
    // Notifications and responses are not requests: the cap does not refuse them.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let (status, _, body) = post(&server.url, &headers, &note).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let other = open_session(&server.url, &[]).await;
    let headers = [("mcp-session-id", other.as_str())];
    let (status, _, body) = post(&server.url, &headers, &call("whoami", json!({}), false)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    server.shutdown().await;
}

/// Review W23: a second `Origin` or `Host` is refused, not ignored (only the first was
/// checked before), and origins and hosts compare without regard to case.
#[tokio::test]
async fn repeated_origin_or_host_headers_are_refused_and_case_does_not_matter() {
    let endpoint =
        McpHttpService::new(service(Arc::default())).allowed_origins(["https://app.example"]);
    let server = start(endpoint).await;
    let port = server.port;
    let body = initialize(client_info());
    let request = |extra: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\nconnection: close\r\n{extra}\
             content-length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let two_origins = request("origin: https://app.example\r\norigin: https://evil.example\r\n");
    let answer = raw(port, two_origins.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 403 Forbidden"), "{answer}");
    assert!(answer.ends_with("Invalid Origin header"), "{answer}");
    let two_hosts = request("host: evil.example\r\n");
    let answer = raw(port, two_hosts.as_bytes()).await;
    assert!(
        answer.starts_with("HTTP/1.1 421 Misdirected Request"),
        "{answer}"
    );
    assert!(answer.ends_with("Invalid Host header"), "{answer}");
    let shouting = request("origin: HTTPS://APP.EXAMPLE\r\n");
    let answer = raw(port, shouting.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    server.shutdown().await;
}

/// Review W25: a client sending its body slowly no longer holds a place under
/// `max_in_flight` while it does (the place is taken once the body is read), and a body that
/// falls behind the minimum rate is refused long before the body timeout.
#[tokio::test]
async fn slow_bodies_hold_no_in_flight_place_and_fall_behind_the_minimum_rate() {
    let endpoint = McpHttpService::new(service(Arc::default())).max_in_flight(1);
    let server = start(endpoint).await;
    let port = server.port;
    let mut slow = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
         accept: application/json\r\ncontent-length: 100000\r\n\r\n{{"
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    // The only in-flight place is free for a client that sends its body at once.
    let (status, _, body) = post(&server.url, &[], &initialize(client_info())).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The slow one has sent 1 byte of 100,000: behind 8 KiB/s once the 2 s grace passed.
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 408 Request Timeout"),
        "{answer}"
    );
    assert!(
        answer.ends_with("The request body did not arrive in time"),
        "{answer}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    server.shutdown().await;
}

/// Opens a 2026-07-28 `subscriptions/listen` stream; answers the status line and the
/// connection once the acknowledgement (or a refusal) arrived.
async fn open_listen(port: u16, id: u32) -> (String, String, TcpStream) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: subscriptions/listen\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&seen).into_owned();
        let done = text.contains("acknowledged")
            || (text.contains("\r\n\r\n") && !text.starts_with("HTTP/1.1 200"))
                && text.contains("retry shortly")
            || text.contains("close one first");
        if done {
            let status = text.lines().next().unwrap_or("").to_owned();
            return (status, text, stream);
        }
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .unwrap_or_else(|_| panic!("no acknowledgement within 10 s: {text}"))
            .unwrap();
        assert!(n > 0, "the stream ended: {text}");
        seen.extend_from_slice(&chunk[..n]);
    }
}

/// Review W4: listen streams live long, so they have their own budget instead of holding
/// places of `max_in_flight`, and one client (here one peer address) gets only its share.
#[tokio::test]
async fn listen_streams_have_their_own_budget_and_each_client_its_share() {
    let service = mcp_server_core::Server::new("watch")
        .change_notifications(true)
        .into_service();
    let endpoint = McpHttpService::new(service)
        .max_in_flight(1)
        .listen_streams_per_client(2);
    let server = start(endpoint).await;
    let (first, _, _a) = open_listen(server.port, 1).await;
    let (second, _, _b) = open_listen(server.port, 2).await;
    assert_eq!(
        (first.as_str(), second.as_str()),
        ("HTTP/1.1 200 OK", "HTTP/1.1 200 OK")
    );
    let (third, text, _c) = open_listen(server.port, 3).await;
    assert_eq!(third, "HTTP/1.1 503 Service Unavailable", "{text}");
    assert!(
        text.ends_with("Too many listen streams for this client (at most 2); close one first"),
        "{text}"
    );
    // Two open streams, and the one in-flight place is still free.
    let (status, _, body) = post(&server.url, &[], &initialize(client_info())).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    server.shutdown().await;
}

/// Review W6: one client cannot hold the whole session pool: at its share, its next
/// `initialize` closes its own least recently used session, and another client still gets in.
#[tokio::test]
async fn one_client_at_its_session_share_makes_room_from_its_own_sessions() {
    let endpoint = McpHttpService::new(service(Arc::default()))
        .bearer_auth(
            Users,
            ProtectedResource::new(RESOURCE).authorization_server("https://issuer.example"),
        )
        .max_sessions(3)
        .sessions_per_client(2);
    let server = start(endpoint).await;
    let alice = [("authorization", "Bearer alice-token")];
    let first = open_session(&server.url, &alice).await;
    let second = open_session(&server.url, &alice).await;
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string();
    let ping_as = |session: String| {
        let url = server.url.clone();
        let ping = ping.clone();
        async move {
            let headers = [
                ("authorization", "Bearer alice-token"),
                ("mcp-session-id", session.as_str()),
            ];
            post(&url, &headers, &ping).await.0
        }
    };
    // Touch the first, so the second is the least recently used.
    assert_eq!(ping_as(first.clone()).await, StatusCode::OK);
    let third = open_session(&server.url, &alice).await;
    assert_eq!(ping_as(second).await, StatusCode::NOT_FOUND);
    assert_eq!(ping_as(first).await, StatusCode::OK);
    assert_eq!(ping_as(third).await, StatusCode::OK);
    // Alice holds 2 of the 3: bob gets the last one.
    let bob = [("authorization", "Bearer bob-token")];
    open_session(&server.url, &bob).await;
    server.shutdown().await;
}

/// Security review X3: behind a proxy every connection comes from the proxy. Told to trust
/// it, the server counts the client the proxy names in `X-Forwarded-For`, so one user's
/// `initialize` loop closes that user's own sessions, not another user's; the part of the
/// header a client wrote itself is not believed. Not told, every user is the proxy (the
/// behaviour the review reproduced): the other user's session is closed.
#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_session_share() {
    let proxy: mcp_transport_http::ProxyRange = "127.0.0.1".parse().unwrap();
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string();
    for trusted in [true, false] {
        let mut endpoint = McpHttpService::new(service(Arc::default())).sessions_per_client(2);
        if trusted {
            endpoint = endpoint.trusted_proxies([proxy]);
        }
        let server = start(endpoint).await;
        let bob = [("x-forwarded-for", "198.51.100.9")];
        let bobs = open_session(&server.url, &bob).await;
        // Alice opens 5 sessions, each time claiming to be Bob further left in the header.
        let alice = [("x-forwarded-for", "198.51.100.9, 203.0.113.5")];
        for _ in 0..5 {
            open_session(&server.url, &alice).await;
        }
        let headers = [
            ("x-forwarded-for", "198.51.100.9"),
            ("mcp-session-id", bobs.as_str()),
        ];
        let (status, _, body) = post(&server.url, &headers, &ping).await;
        let expected = if trusted {
            StatusCode::OK
        } else {
            StatusCode::NOT_FOUND
        };
        assert_eq!(status, expected, "trusted proxy: {trusted}: {body}");
        server.shutdown().await;
    }
}
