//! SSE resumption of 2025-11-25 sessions through the event store: a POST stream that broke is
//! resumed by a GET naming the last event id (what was missed, then the rest, then the end),
//! the session's GET stream replays what its broken predecessor sent, and ids the history does
//! not hold are refused.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, StatusCode};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use mcp_server_core::Service;
use mcp_server_core::registry::{McpServer, ToolDef};
use mcp_transport_http::McpHttpService;
use mcp_types::JsonObject;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// `steps` reports progress, waits for the gate, then answers; `announce` changes the tool
/// list (an unsolicited notification for the session's GET stream).
fn service(gate: Arc<Semaphore>) -> Service {
    let steps = ToolDef::new("steps").handler(move |ctx, _a: JsonObject| {
        let gate = gate.clone();
        async move {
            ctx.progress(1.0, Some(2.0), Some("first half")).await;
            let _permit = gate.acquire().await;
            "all steps done"
        }
    });
    let announce = ToolDef::new("announce").handler(|ctx, _a: JsonObject| async move {
        ctx.notifier().tools_list_changed();
        "announced"
    });
    McpServer::new("Resume")
        .tool(steps)
        .tool(announce)
        .into_service()
        .unwrap()
}

async fn start(endpoint: McpHttpService) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(endpoint.serve_with_shutdown(listener, "/mcp", std::future::pending()));
    url
}

type Client = HyperClient<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

fn client() -> Client {
    HyperClient::builder(TokioExecutor::new()).build_http()
}

fn request(
    method: hyper::Method,
    url: &str,
    headers: &[(&str, &str)],
    body: String,
) -> Request<Full<Bytes>> {
    let mut builder = Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Full::new(Bytes::from(body))).unwrap()
}

async fn open_session(url: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let response = client()
        .request(request(hyper::Method::POST, url, &[], init))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

/// Reads the SSE body until its text contains `until` (or it ends), within 10 s.
async fn read_until(body: &mut hyper::body::Incoming, until: &str) -> String {
    let mut text = String::new();
    while !text.contains(until) {
        let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
            .await
            .unwrap_or_else(|_| panic!("no {until:?} in {text:?}"));
        match frame {
            Some(frame) => {
                if let Ok(data) = frame.unwrap().into_data() {
                    text.push_str(&String::from_utf8_lossy(&data));
                }
            }
            None => break,
        }
    }
    text
}

/// The whole SSE body, which must end within 10 s.
async fn read_to_end(body: hyper::body::Incoming) -> String {
    let bytes = tokio::time::timeout(Duration::from_secs(10), body.collect())
        .await
        .expect("the stream did not end")
        .unwrap()
        .to_bytes();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn call(id: u64, tool: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool, "arguments": {}, "_meta": {"progressToken": "t"}}})
    .to_string()
}

#[tokio::test]
async fn a_broken_post_stream_resumes_with_last_event_id_and_gets_the_answer() {
    let gate = Arc::new(Semaphore::new(0));
    let url = start(McpHttpService::new(service(gate.clone()))).await;
    let session = open_session(&url).await;
    let headers = [("mcp-session-id", session.as_str())];

    let first = client();
    let response = first
        .request(request(
            hyper::Method::POST,
            &url,
            &headers,
            call(2, "steps"),
        ))
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();
    let seen = read_until(&mut body, "first half").await;
    assert!(
        seen.starts_with("id: p1.0\nretry: 1000\ndata: \n\n"),
        "{seen:?}"
    );
    assert!(
        seen.contains("id: p1.1\nevent: message\ndata: {"),
        "{seen:?}"
    );
    // The connection breaks before the answer; the request is not cancelled by it.
    drop(body);
    drop(first);
    gate.add_permits(1);

    let resumed = client()
        .request(request(
            hyper::Method::GET,
            &url,
            &[
                ("mcp-session-id", session.as_str()),
                ("last-event-id", "p1.1"),
            ],
            String::new(),
        ))
        .await
        .unwrap();
    assert_eq!(resumed.status(), StatusCode::OK);
    assert_eq!(resumed.headers()["content-type"], "text/event-stream");
    let rest = read_to_end(resumed.into_body()).await;
    let answer = rest
        .strip_prefix("id: p1.2\nevent: message\ndata: ")
        .unwrap_or_else(|| panic!("{rest:?}"));
    let answer: serde_json::Value = serde_json::from_str(answer.trim_end()).unwrap();
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["content"][0]["text"], "all steps done");

    // Resuming again from the start replays everything after the priming event.
    let again = client()
        .request(request(
            hyper::Method::GET,
            &url,
            &[
                ("mcp-session-id", session.as_str()),
                ("last-event-id", "p1.0"),
            ],
            String::new(),
        ))
        .await
        .unwrap();
    let replay = read_to_end(again.into_body()).await;
    assert!(replay.starts_with("id: p1.1\n"), "{replay:?}");
    assert!(replay.contains("id: p1.2\n"), "{replay:?}");
}

#[tokio::test]
async fn ids_the_history_does_not_hold_are_refused() {
    let url = start(McpHttpService::new(service(Arc::new(Semaphore::new(0))))).await;
    let session = open_session(&url).await;
    for (id, status, text) in [
        (
            "banana",
            StatusCode::BAD_REQUEST,
            "Last-Event-ID is not an event id this server sent",
        ),
        (
            "p.1",
            StatusCode::BAD_REQUEST,
            "Last-Event-ID is not an event id this server sent",
        ),
        (
            "p9.0",
            StatusCode::GONE,
            "The events after Last-Event-ID are no longer kept",
        ),
        (
            "g.5",
            StatusCode::GONE,
            "The events after Last-Event-ID are no longer kept",
        ),
    ] {
        let response = client()
            .request(request(
                hyper::Method::GET,
                &url,
                &[("mcp-session-id", session.as_str()), ("last-event-id", id)],
                String::new(),
            ))
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{id}");
        assert_eq!(read_to_end(response.into_body()).await, text, "{id}");
    }
    // Another session's history is not reachable: its id names no session here.
    let response = client()
        .request(request(
            hyper::Method::GET,
            &url,
            &[
                ("mcp-session-id", "not-a-session"),
                ("last-event-id", "p1.0"),
            ],
            String::new(),
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_session_get_stream_replays_what_a_broken_one_sent() {
    let url = start(McpHttpService::new(service(Arc::new(Semaphore::new(0))))).await;
    let session = open_session(&url).await;
    let headers = [("mcp-session-id", session.as_str())];
    let get = |last: Option<&'static str>| {
        let mut h = vec![("mcp-session-id", session.clone())];
        if let Some(last) = last {
            h.push(("last-event-id", last.to_owned()));
        }
        let h: Vec<(&str, String)> = h;
        let url = url.clone();
        async move {
            let h: Vec<(&str, &str)> = h.iter().map(|(n, v)| (*n, v.as_str())).collect();
            let c = client();
            let response = c
                .request(request(hyper::Method::GET, &url, &h, String::new()))
                .await
                .unwrap();
            (c, response)
        }
    };
    let announce = |id: u64| {
        let url = url.clone();
        let h: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        async move {
            let h: Vec<(&str, &str)> = h.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            let response = client()
                .request(request(hyper::Method::POST, &url, &h, call(id, "announce")))
                .await
                .unwrap();
            read_to_end(response.into_body()).await
        }
    };

    let (c, response) = get(None).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    assert!(announce(2).await.contains("announced"));
    let seen = read_until(&mut body, "list_changed").await;
    assert!(
        seen.starts_with("id: g.1\nevent: message\ndata: {"),
        "{seen:?}"
    );
    drop(body);
    drop(c);
    // While no stream is open the next notification waits; the resumed stream gets both.
    assert!(announce(3).await.contains("announced"));
    let mut resumed = None;
    for _ in 0..100 {
        let (c, response) = get(Some("g.0")).await;
        if response.status() == StatusCode::OK {
            resumed = Some((c, response));
            break;
        }
        // The server notices the dropped stream at its next write.
        assert_eq!(response.status(), StatusCode::CONFLICT);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_c, response) = resumed.expect("the GET stream could not be reopened");
    let mut body = response.into_body();
    let replay = read_until(&mut body, "id: g.2\n").await;
    assert!(
        replay.starts_with("id: g.1\nevent: message\ndata: {"),
        "{replay:?}"
    );
    assert!(
        replay.contains("notifications/tools/list_changed"),
        "{replay:?}"
    );
}
