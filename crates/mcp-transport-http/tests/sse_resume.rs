//! The client transport on a 2025-11-25 session against a scripted server (axum): a POST SSE
//! stream closed before the answer is resumed with GET and `Last-Event-ID` after the `retry`
//! delay (SEP-1699), the standalone GET stream delivers server-initiated requests, and
//! `notifications/initialized` is posted before the session's next request.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use http_body_util::BodyExt;
use mcp_client::{Client, Mode};
use mcp_transport_http::HttpTransport;
use mcp_types::elicitation::{ElicitResult, ElicitValue};
use serde_json::{Value, json};
use tokio::net::TcpListener;

const SESSION: &str = "session-1";

/// What the scripted server saw.
#[derive(Default)]
struct Seen {
    /// The JSON-RPC method (or `response` for an answer) of every POST, in order.
    posts: Vec<String>,
    /// The raw bodies of POSTed answers to server-initiated requests.
    answers: Vec<String>,
    /// Every GET's headers and when it arrived.
    gets: Vec<(HeaderMap, Instant)>,
    /// When the tools/call stream was closed without its answer.
    closed_at: Option<Instant>,
    /// The JSON-RPC id of the pending tools/call.
    pending: Option<Value>,
    /// Every POST's method and every GET (`GET`), in arrival order.
    order: Vec<String>,
}

struct Mock {
    seen: Mutex<Seen>,
    /// Whether the first GET without `Last-Event-ID` carries a server request (else 405).
    standalone: bool,
}

fn sse(body: String) -> Response {
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("mcp-session-id", SESSION)
        .body(Body::from(body))
        .unwrap()
}

fn status(code: StatusCode) -> Response {
    Response::builder()
        .status(code)
        .body(Body::empty())
        .unwrap()
}

async fn mcp(State(mock): State<Arc<Mock>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if parts.method == Method::GET {
        let mut seen = mock.seen.lock().unwrap();
        seen.gets.push((parts.headers.clone(), Instant::now()));
        seen.order.push("GET".into());
        if parts.headers.contains_key("last-event-id") {
            let id = seen.pending.take().unwrap_or(Value::Null);
            let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "resumed"}]}});
            return sse(format!("id: e2\ndata: {answer}\n\n"));
        }
        if mock.standalone && seen.gets.len() == 1 {
            let ask = json!({"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create", "params": {
                "mode": "form", "message": "Region?", "requestedSchema": {"type": "object",
                "properties": {"region": {"type": "string"}}, "required": ["region"]}}});
            return sse(format!("id: g1\ndata: {ask}\n\n"));
        }
        return status(StatusCode::METHOD_NOT_ALLOWED);
    }
    let bytes = body.collect().await.unwrap().to_bytes();
    let message: Value = serde_json::from_slice(&bytes).unwrap();
    let mut seen = mock.seen.lock().unwrap();
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        seen.posts.push("response".into());
        seen.answers
            .push(String::from_utf8_lossy(&bytes).into_owned());
        return status(StatusCode::ACCEPTED);
    };
    seen.posts.push(method.to_owned());
    seen.order.push(method.to_owned());
    let id = message["id"].clone();
    match method {
        "initialize" => {
            let result = json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}}, "serverInfo": {"name": "scripted", "version": "1"}}});
            sse(format!("data: {result}\n\n"))
        }
        "notifications/initialized" => status(StatusCode::ACCEPTED),
        "tools/call" => {
            // A priming event with an id and a retry, then the stream ends unanswered.
            seen.pending = Some(id);
            seen.closed_at = Some(Instant::now());
            sse("id: e1\nretry: 200\ndata: \n\n".into())
        }
        _ => {
            let result = json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}});
            sse(format!("data: {result}\n\n"))
        }
    }
}

async fn start(standalone: bool) -> (String, Arc<Mock>, tokio::task::JoinHandle<()>) {
    let mock = Arc::new(Mock {
        seen: Mutex::new(Seen::default()),
        standalone,
    });
    let app = axum::Router::new()
        .route("/mcp", axum::routing::any(mcp))
        .with_state(mock.clone());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://127.0.0.1:{port}/mcp"), mock, server)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn a_closed_post_stream_is_resumed_with_get_and_last_event_id_after_the_retry_delay() {
    let (url, mock, server) = start(false).await;
    let client = Client::builder()
        .mode(Mode::Legacy)
        .request_timeout(Duration::from_secs(10))
        .connect(HttpTransport::new(&url).unwrap())
        .await
        .unwrap();
    let result = client
        .call_tool("test_reconnection", json!({}))
        .await
        .unwrap();
    assert_eq!(result.content[0].as_text(), Some("resumed"));
    {
        let seen = mock.seen.lock().unwrap();
        assert_eq!(
            seen.posts[..3],
            ["initialize", "notifications/initialized", "tools/call"]
        );
        let (headers, at) = seen
            .gets
            .iter()
            .find(|(h, _)| h.contains_key("last-event-id"))
            .expect("a resumption GET");
        assert_eq!(header(headers, "last-event-id"), Some("e1"));
        assert_eq!(header(headers, "mcp-session-id"), Some(SESSION));
        assert_eq!(header(headers, "mcp-protocol-version"), Some("2025-11-25"));
        assert_eq!(header(headers, "accept"), Some("text/event-stream"));
        let waited = at.duration_since(seen.closed_at.unwrap());
        assert!(waited >= Duration::from_millis(200), "{waited:?}");
    }
    client.close().await;
    server.abort();
}

#[tokio::test]
async fn the_standalone_get_stream_delivers_server_requests_and_the_answer_is_posted() {
    let (url, mock, server) = start(true).await;
    let client = Client::builder()
        .mode(Mode::Legacy)
        .elicitation(|_info, _params| async {
            Ok(ElicitResult::accept(BTreeMap::from([(
                "region".to_owned(),
                ElicitValue::String("eu-west-1".into()),
            )])))
        })
        .connect(HttpTransport::new(&url).unwrap())
        .await
        .unwrap();
    // The stream is open before the session's first request.
    client.list_tools(None).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while mock.seen.lock().unwrap().answers.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the server request was never answered"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    {
        let seen = mock.seen.lock().unwrap();
        assert_eq!(
            seen.order[..3],
            ["initialize", "notifications/initialized", "GET"]
        );
        assert!(seen.order.contains(&"tools/list".to_owned()));
        let (first_get, _) = &seen.gets[0];
        assert_eq!(header(first_get, "mcp-session-id"), Some(SESSION));
        assert_eq!(header(first_get, "last-event-id"), None);
        assert_eq!(
            seen.answers,
            [
                r#"{"jsonrpc":"2.0","id":"srv-1","result":{"action":"accept","content":{"region":"eu-west-1"}}}"#
            ]
        );
    }
    client.close().await;
    server.abort();
}
