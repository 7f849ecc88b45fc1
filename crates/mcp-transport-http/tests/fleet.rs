//! Two instances of one fleet in one process, sharing a `MemorySessionStore` and a
//! `MemoryBus` (what `mcp_store_redis` does for a real fleet): a 2025-11-25 session opened on
//! one is served by the other, a client's answer to a question one instance asked reaches it
//! from the other, a cancellation reaches the instance running the request, a subscription
//! made on one is honoured by the GET stream held by the other (once), a delete on one ends
//! the session on both, and an answer whose asker is gone is told so.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::{Running, start};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use mcp_server_core::fleet::{Fleet, FleetError, MemoryBus, MemorySessionStore, SessionStore};
use mcp_server_core::{ChangeNotifier, Server};
use mcp_transport_http::McpHttpService;
use mcp_types::ErrorObject;
use mcp_types::mrtr::Outcome;
use mcp_types::tools::CallToolResult;
use serde_json::{Value, json};

static WAIT_CANCELLED: AtomicBool = AtomicBool::new(false);
static FORGED_RAN: AtomicBool = AtomicBool::new(false);

struct CancelFlag;

impl Drop for CancelFlag {
    fn drop(&mut self) {
        WAIT_CANCELLED.store(true, Ordering::SeqCst);
    }
}

fn instance(
    name: &str,
    store: &MemorySessionStore,
    bus: &MemoryBus,
) -> (McpHttpService, ChangeNotifier) {
    instance_on(name, Arc::new(store.clone()), bus)
}

fn instance_on(
    name: &str,
    store: Arc<dyn SessionStore>,
    bus: &MemoryBus,
) -> (McpHttpService, ChangeNotifier) {
    instance_with(name, store, Arc::new(bus.clone()))
}

fn instance_with(
    name: &str,
    store: Arc<dyn SessionStore>,
    bus: Arc<dyn mcp_server_core::fleet::Bus>,
) -> (McpHttpService, ChangeNotifier) {
    instance_keyed(name, store, bus, &[])
}

/// An instance whose server seals with `keys` (the first seals; none: no keys), as every
/// instance of a fleet of `McpServer`s does with the fleet's shared keys.
fn instance_keyed(
    name: &str,
    store: Arc<dyn SessionStore>,
    bus: Arc<dyn mcp_server_core::fleet::Bus>,
    keys: &[&str],
) -> (McpHttpService, ChangeNotifier) {
    let mut server = Server::new("fleet");
    if !keys.is_empty() {
        let security = mcp_state_seal::RequestStateSecurity::keys(keys.iter().copied()).unwrap();
        server = server.request_state_security(security).unwrap();
    }
    let server = server
        .change_notifications(true)
        .request_timeout(Duration::from_secs(10))
        .on_call_tool(|ctx, params| async move {
            match params.name.as_str() {
                "roots" => {
                    let roots = ctx.list_roots().await.map_err(ErrorObject::from)?;
                    Ok(Outcome::Complete(CallToolResult::text(format!(
                        "{} root(s)",
                        roots.roots.len()
                    ))))
                }
                "wait" => {
                    let _flag = CancelFlag;
                    ctx.cancellation().cancelled().await;
                    Ok(Outcome::Complete(CallToolResult::text("cancelled")))
                }
                "forged" => {
                    FORGED_RAN.store(true, Ordering::SeqCst);
                    Ok(Outcome::Complete(CallToolResult::text("ran")))
                }
                _ => Ok(Outcome::Complete(CallToolResult::text("ok"))),
            }
        })
        .on_read_resource(|_ctx, p| async move {
            Err(mcp_server_core::resource_not_found(
                mcp_types::version::Era::Legacy,
                &p.uri,
            ))
        })
        .fleet(Fleet::shared(name, store, bus));
    let service = server.into_service();
    let notifier = service.notifier();
    (McpHttpService::new(service), notifier)
}

async fn send(
    method: hyper::Method,
    url: &str,
    session: Option<&str>,
    body: Option<Value>,
) -> Response<Incoming> {
    send_with(method, url, session, body, &[]).await
}

/// [`send`] with `headers` added.
async fn send_with(
    method: hyper::Method,
    url: &str,
    session: Option<&str>,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Response<Incoming> {
    let client = HyperClient::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut builder = Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session);
    }
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    client
        .request(builder.body(Full::new(Bytes::from(body))).unwrap())
        .await
        .unwrap()
}

async fn text(response: Response<Incoming>) -> (StatusCode, String) {
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// The next SSE `data:` message of `body` holding JSON, within 5 s.
async fn next_message(body: &mut Incoming, buffer: &mut String) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            for line in event.lines() {
                if let Some(data) = line.strip_prefix("data: ")
                    && !data.trim().is_empty()
                {
                    return serde_json::from_str(data).unwrap();
                }
            }
        }
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .expect("no SSE message within 5 s")
            .expect("the stream ended")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            buffer.push_str(&String::from_utf8_lossy(&data));
        }
    }
}

async fn open_session(url: &str) -> String {
    let response = send(
        hyper::Method::POST,
        url,
        None,
        Some(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

struct Pair {
    a: Running,
    b: Running,
    notify_a: ChangeNotifier,
}

async fn pair() -> Pair {
    let (store, bus) = (MemorySessionStore::new(), MemoryBus::new());
    let (a, notify_a) = instance("a", &store, &bus);
    let (b, _) = instance("b", &store, &bus);
    Pair {
        a: start(a).await,
        b: start(b).await,
        notify_a,
    }
}

#[tokio::test]
async fn a_session_opened_on_one_instance_is_served_by_the_other_and_its_answers_find_the_asker() {
    let fleet = pair().await;
    let session = open_session(&fleet.a.url).await;
    // Served on b, which never saw its initialize.
    let (status, body) = text(
        send(
            hyper::Method::POST,
            &fleet.b.url,
            Some(&session),
            Some(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::OK, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#)
    );

    // a asks for the roots on the call's stream; the answer goes to b, which hands it to a.
    let call = send(
        hyper::Method::POST,
        &fleet.a.url,
        Some(&session),
        Some(
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "roots"}}),
        ),
    )
    .await;
    assert_eq!(call.status(), StatusCode::OK);
    let mut body = call.into_body();
    let mut buffer = String::new();
    let question = next_message(&mut body, &mut buffer).await;
    assert_eq!(question["method"], "roots/list");
    let asked_by = question["id"].as_str().unwrap();
    assert!(
        asked_by.starts_with("a~") && asked_by.ends_with(":1"),
        "the question's id names the process that asked: {asked_by}"
    );
    let (status, _) = text(
        send(
            hyper::Method::POST,
            &fleet.b.url,
            Some(&session),
            Some(
                json!({"jsonrpc": "2.0", "id": question["id"], "result": {"roots": [
                {"uri": "file:///x", "name": "x"}, {"uri": "file:///y", "name": "y"}]}}),
            ),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let answer = next_message(&mut body, &mut buffer).await;
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["result"]["content"][0]["text"], "2 root(s)");

    // An answer to a question of an instance that is not there.
    let (status, body) = text(
        send(
            hyper::Method::POST,
            &fleet.b.url,
            Some(&session),
            Some(json!({"jsonrpc": "2.0", "id": "a~00000000:4", "result": {"roots": []}})),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::GONE);
    assert!(
        body.starts_with("The server process that asked this question (a~00000000) is gone"),
        "{body}"
    );
    fleet.a.shutdown().await;
    fleet.b.shutdown().await;
}

/// Issue #48: an answer for an asker that is alive but not on the bus this instant (its bus
/// connection dropped when Redis restarted, and it listens again a moment later) reaches it;
/// before, the one publish nobody heard answered the client 410 "is gone".
#[tokio::test]
async fn an_answer_finds_an_asker_that_listens_again_after_a_moment() {
    let (store, bus) = (MemorySessionStore::new(), MemoryBus::new());
    let (b, _) = instance("b", &store, &bus);
    let b = start(b).await;
    let session = open_session(&b.url).await;
    // The asker, c, listens again 500 ms after the answer arrives.
    let later = bus.clone();
    let asker = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut answers = mcp_server_core::fleet::Bus::listen(&later, "answers:c~12345678");
        answers.recv().await
    });
    let (status, body) = text(
        send(
            hyper::Method::POST,
            &b.url,
            Some(&session),
            Some(json!({"jsonrpc": "2.0", "id": "c~12345678:4", "result": {"roots": []}})),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let heard = tokio::time::timeout(Duration::from_secs(5), asker)
        .await
        .expect("the asker never heard the answer")
        .unwrap()
        .expect("the bus closed");
    assert!(
        String::from_utf8_lossy(&heard).contains("c~12345678:4"),
        "{}",
        String::from_utf8_lossy(&heard)
    );
    b.shutdown().await;
}

#[tokio::test]
async fn a_cancellation_sent_to_one_instance_stops_the_request_running_on_the_other() {
    let fleet = pair().await;
    let session = open_session(&fleet.a.url).await;
    // The call's answer (and so its response head) comes only when it ends.
    let (url, id) = (fleet.a.url.clone(), session.clone());
    let call = tokio::spawn(async move {
        send(
            hyper::Method::POST,
            &url,
            Some(&id),
            Some(json!({"jsonrpc": "2.0", "id": "w1", "method": "tools/call", "params": {"name": "wait"}})),
        )
        .await
    });
    // The call runs on a before the cancellation is sent to b.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, _) = text(
        send(
            hyper::Method::POST,
            &fleet.b.url,
            Some(&session),
            Some(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "w1"}})),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !WAIT_CANCELLED.load(Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cancellation never reached the instance running the call"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    call.abort();
    fleet.a.shutdown().await;
    fleet.b.shutdown().await;
}

#[tokio::test]
async fn a_subscription_made_on_one_instance_is_delivered_once_by_the_get_stream_on_the_other() {
    let fleet = pair().await;
    let session = open_session(&fleet.a.url).await;
    // The GET stream is held by b; a copy of the session is live on a as well.
    let get = send(hyper::Method::GET, &fleet.b.url, Some(&session), None).await;
    assert_eq!(get.status(), StatusCode::OK);
    let (status, body) = text(
        send(
            hyper::Method::POST,
            &fleet.a.url,
            Some(&session),
            Some(json!({"jsonrpc": "2.0", "id": 5, "method": "resources/subscribe", "params": {"uri": "file:///cfg.json"}})),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::OK, r#"{"jsonrpc":"2.0","id":5,"result":{}}"#)
    );
    // The record change travels on the bus; give it a moment, then raise the update on a.
    tokio::time::sleep(Duration::from_millis(200)).await;
    fleet.notify_a.resource_updated("file:///cfg.json");
    fleet.notify_a.resource_updated("file:///other.json");
    fleet.notify_a.tools_list_changed();
    let mut body = get.into_body();
    let mut buffer = String::new();
    let first = next_message(&mut body, &mut buffer).await;
    assert_eq!(
        first,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "file:///cfg.json"}})
    );
    let second = next_message(&mut body, &mut buffer).await;
    assert_eq!(
        second,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
        "each notification once, the unsubscribed URI not at all"
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(300), body.frame())
            .await
            .is_err(),
        "a notification was delivered twice"
    );
    fleet.a.shutdown().await;
    fleet.b.shutdown().await;
}

/// A store whose writes take 50 ms and whose reads answer 200 ms after they looked: the
/// window in which a change written after a read is announced before the read returns.
#[derive(Debug)]
struct Lagging(MemorySessionStore);

impl SessionStore for Lagging {
    fn put<'a>(
        &'a self,
        id: &'a str,
        record: &'a [u8],
        idle: Duration,
    ) -> mcp_types::BoxFuture<'a, Result<(), FleetError>> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            self.0.put(id, record, idle).await
        })
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        idle: Duration,
    ) -> mcp_types::BoxFuture<'a, Result<Option<Vec<u8>>, FleetError>> {
        Box::pin(async move {
            let read = self.0.get(id, idle).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            read
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> mcp_types::BoxFuture<'a, Result<bool, FleetError>> {
        self.0.remove(id)
    }
}

/// The fleet run once saw a GET stream hear nothing its session had subscribed to: the
/// subscription was answered before its record was stored, the GET on another instance read
/// the record as it was, and the announcement of the change arrived while that read was on
/// its way (ignored: the session was not live there yet). The answer now waits for the write.
#[tokio::test]
async fn a_subscription_is_stored_before_it_is_answered_so_the_next_request_anywhere_sees_it() {
    let (store, bus) = (MemorySessionStore::new(), MemoryBus::new());
    let (a, _) = instance_on("a", Arc::new(Lagging(store.clone())), &bus);
    let (b, notify_b) = instance_on("b", Arc::new(Lagging(store)), &bus);
    let (a, b) = (start(a).await, start(b).await);
    let session = open_session(&a.url).await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 5, "method": "resources/subscribe", "params": {"uri": "file:///cfg.json"}});
    let (status, _) =
        text(send(hyper::Method::POST, &a.url, Some(&session), Some(subscribe)).await).await;
    assert_eq!(status, StatusCode::OK);
    let get = send(hyper::Method::GET, &b.url, Some(&session), None).await;
    assert_eq!(get.status(), StatusCode::OK);
    notify_b.resource_updated("file:///cfg.json");
    let mut body = get.into_body();
    let mut buffer = String::new();
    assert_eq!(
        next_message(&mut body, &mut buffer).await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "file:///cfg.json"}})
    );
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn a_delete_on_one_instance_ends_the_session_on_both() {
    let fleet = pair().await;
    let session = open_session(&fleet.a.url).await;
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let (status, _) = text(
        send(
            hyper::Method::POST,
            &fleet.b.url,
            Some(&session),
            Some(ping.clone()),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) =
        text(send(hyper::Method::DELETE, &fleet.b.url, Some(&session), None).await).await;
    assert_eq!(status, StatusCode::OK);
    // A DELETE a load balancer re-sends to another instance finds the tombstone: done.
    let (status, _) =
        text(send(hyper::Method::DELETE, &fleet.a.url, Some(&session), None).await).await;
    assert_eq!(status, StatusCode::OK, "a repeated DELETE is not a 404");
    for url in [&fleet.a.url, &fleet.b.url] {
        let (status, body) =
            text(send(hyper::Method::POST, url, Some(&session), Some(ping.clone())).await).await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::NOT_FOUND, "Session not found")
        );
    }
    fleet.a.shutdown().await;
    fleet.b.shutdown().await;
}

#[tokio::test]
async fn a_session_outlives_the_instance_that_opened_it() {
    let (store, bus) = (MemorySessionStore::new(), MemoryBus::new());
    let first = start(instance("a", &store, &bus).0).await;
    let session = open_session(&first.url).await;
    first.shutdown().await;
    // A new process in a's place: the session is in the store, not in the old table.
    let second = start(instance("a", &store, &bus).0).await;
    let (status, body) = text(
        send(
            hyper::Method::POST,
            &second.url,
            Some(&session),
            Some(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "echo"}})),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains(r#""text":"ok""#), "{body}");
    second.shutdown().await;
}

/// A bus that counts the bytes published on it (what Redis would carry to every instance).
#[derive(Debug)]
struct Counting {
    inner: MemoryBus,
    bytes: Arc<std::sync::atomic::AtomicUsize>,
}

impl mcp_server_core::fleet::Bus for Counting {
    fn publish<'a>(
        &'a self,
        channel: &'a str,
        payload: &'a [u8],
    ) -> mcp_server_core::BoxFuture<'a, Result<usize, FleetError>> {
        self.bytes.fetch_add(payload.len(), Ordering::SeqCst);
        self.inner.publish(channel, payload)
    }

    fn listen(&self, channel: &str) -> tokio::sync::mpsc::Receiver<Vec<u8>> {
        self.inner.listen(channel)
    }
}

/// Security review X2: what a client sends does not go on the bus. A 1 MiB cancellation
/// publishes which request it cancels; a 2 KB subscribe on a session holding 50 long URIs
/// (a 100 KB record) publishes that the record changed, not the record; an unchanged level
/// publishes nothing. (That the other instance still honours a subscription made here, now
/// that it reads the record again, is `a_subscription_made_on_one_instance_is_delivered_once…`.)
#[tokio::test]
async fn the_bus_carries_what_changed_never_what_the_client_sent() {
    let (store, bus) = (MemorySessionStore::new(), MemoryBus::new());
    let bytes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counting: Arc<dyn mcp_server_core::fleet::Bus> = Arc::new(Counting {
        inner: bus,
        bytes: bytes.clone(),
    });
    let (a, _) = instance_with("a", Arc::new(store.clone()), counting.clone());
    let (b, _) = instance_with("b", Arc::new(store.clone()), counting);
    let (a, b) = (start(a).await, start(b).await);
    let session = open_session(&a.url).await;
    let post = |url: String, body: Value| {
        let session = session.clone();
        async move { text(send(hyper::Method::POST, &url, Some(&session), Some(body)).await).await }
    };
    // b holds the session too.
    let (status, _) = post(
        b.url.clone(),
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let long = |i: usize| format!("file:///{i}/{}", "x".repeat(2000));
    for i in 0..50 {
        let subscribe = json!({"jsonrpc": "2.0", "id": 10 + i, "method": "resources/subscribe", "params": {"uri": long(i)}});
        let (status, body) = post(a.url.clone(), subscribe).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    // What one more request puts on the bus, once its writes settled.
    let settled = || async {
        let mut last = usize::MAX;
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = bytes.load(Ordering::SeqCst);
            if now == last {
                return now;
            }
            last = now;
        }
    };
    let mut before = settled().await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 99, "method": "resources/subscribe", "params": {"uri": long(99)}});
    assert_eq!(post(a.url.clone(), subscribe).await.0, StatusCode::OK);
    let one_subscribe = settled().await - before;
    assert!(
        (1..=1024).contains(&one_subscribe),
        "a 2 KB subscribe put {one_subscribe} bytes on the bus"
    );
    before = settled().await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": "w1", "reason": "x".repeat(1 << 20)}});
    assert_eq!(post(b.url.clone(), cancel).await.0, StatusCode::ACCEPTED);
    let one_cancel = settled().await - before;
    assert!(
        (1..=1024).contains(&one_cancel),
        "a 1 MiB cancellation put {one_cancel} bytes on the bus"
    );
    before = settled().await;
    let level = json!({"jsonrpc": "2.0", "id": 100, "method": "logging/setLevel", "params": {"level": "info"}});
    assert_eq!(post(a.url.clone(), level.clone()).await.0, StatusCode::OK);
    settled().await;
    before = settled().await.max(before);
    assert_eq!(post(a.url.clone(), level).await.0, StatusCode::OK);
    assert_eq!(
        settled().await - before,
        0,
        "an unchanged level is announced"
    );
    a.shutdown().await;
    b.shutdown().await;
}

/// Security review X10: a request published on the bus, naming a live session, is not run in
/// it: instances forward answers and cancellations only, and whoever can publish on the bus
/// (a process with Redis access) is not the session's owner.
#[tokio::test]
async fn a_request_published_on_the_bus_is_not_run_in_the_session() {
    use mcp_server_core::fleet::Bus;
    let (store, bus) = (MemorySessionStore::new(), MemoryBus::new());
    let (a, _) = instance("a", &store, &bus);
    let a = start(a).await;
    let session = open_session(&a.url).await;
    let forged = json!({"from": "x", "session": session, "message":
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "forged"}}});
    let heard = bus
        .publish(
            mcp_server_core::fleet::SESSIONS,
            forged.to_string().as_bytes(),
        )
        .await
        .unwrap();
    assert!(heard >= 1, "instance a listens");
    // A ping through a after the message was delivered: its handler would have run by now.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, _) = text(
        send(
            hyper::Method::POST,
            &a.url,
            Some(&session),
            Some(json!({"jsonrpc": "2.0", "id": 6, "method": "ping"})),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(!FORGED_RAN.load(Ordering::SeqCst), "the forged call ran");
    a.shutdown().await;
}

/// A bus whose publishes of session messages hang until `open` (a stalled Redis), counting
/// how many are in flight at once.
#[derive(Debug)]
struct Stalled {
    inner: MemoryBus,
    open: tokio::sync::watch::Receiver<bool>,
    in_flight: Arc<std::sync::atomic::AtomicUsize>,
    most: Arc<std::sync::atomic::AtomicUsize>,
}

impl mcp_server_core::fleet::Bus for Stalled {
    fn publish<'a>(
        &'a self,
        channel: &'a str,
        payload: &'a [u8],
    ) -> mcp_server_core::BoxFuture<'a, Result<usize, FleetError>> {
        Box::pin(async move {
            if channel == mcp_server_core::fleet::SESSIONS {
                let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                self.most.fetch_max(now, Ordering::SeqCst);
                let mut open = self.open.clone();
                let _ = open.wait_for(|o| *o).await;
                self.in_flight.fetch_sub(1, Ordering::SeqCst);
            }
            self.inner.publish(channel, payload).await
        })
    }

    fn listen(&self, channel: &str) -> tokio::sync::mpsc::Receiver<Vec<u8>> {
        self.inner.listen(channel)
    }
}

/// Security review X2: while the bus is stalled, a client's cancellations wait in one bounded
/// queue, published one at a time; they are not a task each, all waiting on the bus at once.
#[tokio::test]
async fn cancellations_wait_in_one_bounded_queue_while_the_bus_is_stalled() {
    let (gate, open) = tokio::sync::watch::channel(false);
    let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let bus = Arc::new(Stalled {
        inner: MemoryBus::new(),
        open,
        in_flight: Arc::default(),
        most: most.clone(),
    });
    let (a, _) = instance_with("a", Arc::new(MemorySessionStore::new()), bus);
    let a = start(a).await;
    let session = open_session(&a.url).await;
    for n in 0..50 {
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": format!("r{n}")}});
        let (status, _) =
            text(send(hyper::Method::POST, &a.url, Some(&session), Some(cancel)).await).await;
        assert_eq!(status, StatusCode::ACCEPTED);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while most.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "nothing was published"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        most.load(Ordering::SeqCst),
        1,
        "publishes waiting on the bus at once"
    );
    gate.send_replace(true);
    a.shutdown().await;
}

/// Security review X2: a client's answer to a question another instance asked crosses the bus
/// only up to 1 MiB; a larger one, to any member the client names, is refused with 413 and
/// never published.
#[tokio::test]
async fn an_answer_for_another_instance_past_its_bound_is_refused_not_forwarded() {
    let (store, bus) = (MemorySessionStore::new(), MemoryBus::new());
    let bytes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counting: Arc<dyn mcp_server_core::fleet::Bus> = Arc::new(Counting {
        inner: bus,
        bytes: bytes.clone(),
    });
    let (a, _) = instance_with("a", Arc::new(store), counting);
    let a = start(a).await;
    let session = open_session(&a.url).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = bytes.load(Ordering::SeqCst);
    let answer = json!({"jsonrpc": "2.0", "id": "i9~00000000:5",
                        "result": {"roots": [{"uri": format!("file:///{}", "x".repeat(2 << 20))}]}});
    let (status, body) =
        text(send(hyper::Method::POST, &a.url, Some(&session), Some(answer)).await).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(
        body,
        "An answer to a question another instance of the fleet asked is at most 1024 KiB; this one is 2049 KiB"
    );
    assert_eq!(
        bytes.load(Ordering::SeqCst),
        before,
        "nothing was published"
    );
    a.shutdown().await;
}

/// Security review X3: a session restored on another instance counts against the share of the
/// client that opened it (its record keeps the address). Client X opens its 2 sessions on a,
/// uses both through b, then opens a third on b: b closes X's least recently used one, as a
/// would have. Before, restored sessions counted against nobody, and X could hold any number.
#[tokio::test]
async fn a_restored_session_counts_against_the_share_of_the_client_that_opened_it() {
    let (store, bus) = (MemorySessionStore::new(), MemoryBus::new());
    let proxy: mcp_transport_http::ProxyRange = "127.0.0.1".parse().unwrap();
    let shared = |name: &str| {
        instance(name, &store, &bus)
            .0
            .sessions_per_client(2)
            .trusted_proxies([proxy])
    };
    let (a, b) = (start(shared("a")).await, start(shared("b")).await);
    let x = [("x-forwarded-for", "198.51.100.1")];
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let open = |url: String| {
        let initialize = initialize.clone();
        async move {
            let response = send_with(hyper::Method::POST, &url, None, Some(initialize), &x).await;
            assert_eq!(response.status(), StatusCode::OK);
            response.headers()["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_owned()
        }
    };
    let ping = |url: String, session: String| async move {
        let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
        send_with(hyper::Method::POST, &url, Some(&session), Some(ping), &x)
            .await
            .status()
    };
    let first = open(a.url.clone()).await;
    let second = open(a.url.clone()).await;
    assert_eq!(ping(b.url.clone(), first.clone()).await, StatusCode::OK);
    assert_eq!(ping(b.url.clone(), second.clone()).await, StatusCode::OK);
    let third = open(b.url.clone()).await;
    assert_eq!(ping(b.url.clone(), third).await, StatusCode::OK);
    // The closed session's record leaves the store a moment after (a task of its own).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while store
        .get(&first, Duration::from_secs(60))
        .await
        .unwrap()
        .is_some()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "X's least recently used session was never closed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        ping(b.url.clone(), first).await,
        StatusCode::NOT_FOUND,
        "X's least recently used session was closed to make room"
    );
    assert_eq!(ping(b.url.clone(), second).await, StatusCode::OK);
    a.shutdown().await;
    b.shutdown().await;
}

const OLD_KEY: &str = "0123456789abcdef0123456789abcdef";
const NEW_KEY: &str = "fedcba9876543210fedcba9876543210";

/// Two instances sealing with the fleet's key, on `store` and `bus`.
async fn keyed_pair(store: &MemorySessionStore, bus: &MemoryBus) -> (Running, Running) {
    let keyed = |name| {
        instance_keyed(
            name,
            Arc::new(store.clone()),
            Arc::new(bus.clone()),
            &[OLD_KEY],
        )
        .0
    };
    (start(keyed("a")).await, start(keyed("b")).await)
}

async fn ping(url: &str, session: &str) -> StatusCode {
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    send(hyper::Method::POST, url, Some(session), Some(ping))
        .await
        .status()
}

/// Security review X10: with the fleet's keys, a session record is sealed in the store, bound
/// to its session. One that a process with store access but without the keys writes is not
/// believed, nor is a sealed record moved under another session's id (the principal a record
/// names is who may use the session: a writer who moved its own record under a victim's id
/// would take the victim's session over).
#[tokio::test]
async fn a_session_record_written_without_the_fleets_keys_is_not_believed() {
    let (store, bus) = (MemorySessionStore::new(), MemoryBus::new());
    let (a, b) = keyed_pair(&store, &bus).await;
    let honest = open_session(&a.url).await;
    assert_eq!(ping(&b.url, &honest).await, StatusCode::OK);
    let idle = Duration::from_secs(60);
    let stored = store.get(&honest, idle).await.unwrap().unwrap();
    assert!(
        String::from_utf8(stored.clone())
            .unwrap()
            .starts_with("v1."),
        "the record is sealed, not JSON"
    );
    // A record written as plain JSON, as an instance without keys writes one.
    let victim = open_session(&a.url).await;
    let forged = json!({"protocolVersion": "2025-11-25", "capabilities": {}});
    store
        .put(&victim, forged.to_string().as_bytes(), idle)
        .await
        .unwrap();
    assert_eq!(ping(&b.url, &victim).await, StatusCode::NOT_FOUND);
    assert_eq!(ping(&a.url, &victim).await, StatusCode::NOT_FOUND);
    // The honest session's sealed record, moved under another session's id.
    let other = open_session(&a.url).await;
    store.put(&other, &stored, idle).await.unwrap();
    assert_eq!(ping(&b.url, &other).await, StatusCode::NOT_FOUND);
    assert_eq!(ping(&a.url, &honest).await, StatusCode::OK);
    a.shutdown().await;
    b.shutdown().await;
}

/// Security review X10: an answer published on the bus by a process without the fleet's keys
/// does not answer the question an instance asked; the client's own answer, forwarded by
/// another instance, does.
#[tokio::test]
async fn an_answer_published_without_the_fleets_keys_answers_nothing() {
    use mcp_server_core::fleet::Bus;
    let (store, bus) = (MemorySessionStore::new(), MemoryBus::new());
    let (a, b) = keyed_pair(&store, &bus).await;
    let session = open_session(&a.url).await;
    let call =
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "roots"}});
    let call = send(hyper::Method::POST, &a.url, Some(&session), Some(call)).await;
    let mut body = call.into_body();
    let mut buffer = String::new();
    let question = next_message(&mut body, &mut buffer).await;
    let asked = question["id"].as_str().unwrap().to_owned();
    let asker = asked.rsplit_once(':').unwrap().0;
    let forged = json!({"from": "b~00000000", "session": session, "message":
        {"jsonrpc": "2.0", "id": asked, "result": {"roots": [{"uri": "file:///forged"}]}}});
    let channel = mcp_server_core::fleet::answers_channel(asker);
    let heard = bus
        .publish(&channel, forged.to_string().as_bytes())
        .await
        .unwrap();
    assert_eq!(heard, 1, "instance a listens on its answers channel");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let answer = json!({"jsonrpc": "2.0", "id": asked, "result": {"roots": [
        {"uri": "file:///x", "name": "x"}, {"uri": "file:///y", "name": "y"}]}});
    let response = send(hyper::Method::POST, &b.url, Some(&session), Some(answer)).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let result = next_message(&mut body, &mut buffer).await;
    assert_eq!(result["result"]["content"][0]["text"], "2 root(s)");
    a.shutdown().await;
    b.shutdown().await;
}

/// A key rotation (`[OLD]`, then `[NEW, OLD]`, then `[NEW]`, one instance at a time) keeps a
/// session that is used during it: a record read under the outgoing key is sealed again under
/// the new one, so the instances that know only the new key still find it.
#[tokio::test]
async fn a_session_used_during_a_key_rotation_outlives_the_old_key() {
    let (store, bus) = (MemorySessionStore::new(), MemoryBus::new());
    let phase = |name, keys: &'static [&'static str]| {
        instance_keyed(name, Arc::new(store.clone()), Arc::new(bus.clone()), keys).0
    };
    let first = start(phase("a", &[OLD_KEY])).await;
    let session = open_session(&first.url).await;
    first.shutdown().await;
    let second = start(phase("b", &[NEW_KEY, OLD_KEY])).await;
    assert_eq!(ping(&second.url, &session).await, StatusCode::OK);
    let stored = store
        .get(&session, Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    let new_only = mcp_state_seal::RequestStateSecurity::keys([NEW_KEY])
        .unwrap()
        .bind(Some("fleet"))
        .unwrap();
    assert!(
        new_only.sealed_with_current_key(std::str::from_utf8(&stored).unwrap()),
        "the record read under the old key is sealed again under the new one"
    );
    second.shutdown().await;
    let third = start(phase("c", &[NEW_KEY])).await;
    assert_eq!(ping(&third.url, &session).await, StatusCode::OK);
    third.shutdown().await;
}
